// Shared helpers of the UI tests (Qt Test, offscreen platform): fixture paths, settings in a temporary
// INI file, a bridge on the real PP-OCR engine or on FakeBackend, and a whole main window.
#pragma once

#include <QCoreApplication>
#include <QDir>
#include <QImage>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <QtWidgets>

#include <memory>
#include <vector>

#include "core/doc/preset.h"
#include "fake_backend.h"
#include "ui/engine_bridge.h"
#include "ui/main_actions.h"
#include "ui/main_window.h"
#include "ui/preset_panel.h"
#include "ui/status_line.h"
#include "ui/model_controller.h"
#include "ui/settings.h"

namespace lector::test {

inline QString sourceDir() { return QStringLiteral(LECTOR_SOURCE_DIR); }

inline QString sharedDir()
{
    const QByteArray env = qgetenv("LECTOR_SHARED_DIR");
    return env.isEmpty() ? QDir(sourceDir()).absoluteFilePath(QStringLiteral("../shared")) : QString::fromLocal8Bit(env);
}

inline QString ppocrFixture(const QString& name) { return QDir(sharedDir()).filePath(QStringLiteral("fixtures/ppocr/") + name); }

// Whether ../shared (or $LECTOR_SHARED_DIR) is there: a test that reads its fixtures is skipped without it,
// as the core tests are (tests/support/lector_test_main.cpp), not failed.
inline bool sharedAvailable() { return QFileInfo::exists(QDir(sharedDir()).filePath(QStringLiteral("fixtures/ppocr"))); }
// The skip itself, first thing in such a test function (QSKIP returns from the function it stands in).
#define LECTOR_SKIP_WITHOUT_SHARED()                                                        \
    do {                                                                                    \
        if (!lector::test::sharedAvailable())                                               \
            QSKIP("shared/ fixtures not found beside the checkout (or $LECTOR_SHARED_DIR)"); \
    } while (0)

inline bool realEngineAvailable()
{
    return QFileInfo::exists(QDir(sourceDir()).filePath(QStringLiteral("models/ppocr-v4/ch_PP-OCRv4_det_infer.onnx"))) ||
           !qgetenv("LECTOR_MODELS_DIR").isEmpty();
}

inline std::unique_ptr<ui::Settings> tempSettings(const QTemporaryDir& dir, const QString& name = QStringLiteral("lector.ini"))
{
    return std::make_unique<ui::Settings>(std::make_unique<QSettings>(dir.filePath(name), QSettings::IniFormat));
}

inline std::vector<doc::Preset> testPresets()
{
    auto presets = doc::loadPresets(std::filesystem::path(sourceDir().toStdString()) / "resources" / "presets");
    return presets ? std::move(presets.value()) : std::vector<doc::Preset>{};
}

// Settings, bridge, model controller and main window, on either engine.
struct AppHarness {
    QTemporaryDir dir;
    std::unique_ptr<ui::Settings> settings;
    std::unique_ptr<ui::EngineBridge> bridge;
    std::unique_ptr<ui::ModelController> models;
    std::unique_ptr<ui::MainWindow> window;
    FakeBackend* fake = nullptr;  // owned by the bridge when used

    // fakeDelayMs < 0: the real PP-OCR engine (loaded through the bridge, as the app does).
    explicit AppHarness(int fakeDelayMs = -1)
    {
        settings = tempSettings(dir);
        if (fakeDelayMs >= 0) {
            bridge = std::make_unique<ui::EngineBridge>();
            auto backend = std::make_unique<FakeBackend>(fakeDelayMs);
            fake = backend.get();
            bridge->adopt(std::move(backend), engine::EngineConfig{});
        } else {
            bridge = std::make_unique<ui::EngineBridge>();
        }
        models = std::make_unique<ui::ModelController>(*settings, *bridge);
        window = std::make_unique<ui::MainWindow>(*settings, *bridge, *models, testPresets());
        if (fakeDelayMs < 0) models->loadFromSettings();
    }
    ~AppHarness()
    {
        window.reset();
        models.reset();
        bridge.reset();
    }
    bool waitLoaded(int ms = 60000)
    {
        return QTest::qWaitFor([&] { return bridge->isLoaded() && !bridge->isLoading(); }, ms);
    }
};

}  // namespace lector::test
