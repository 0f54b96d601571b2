// lector_screenshots: renders the main states of the application to PNG files so a person can look at
// them (run under Xvfb: `xvfb-run -a lector_screenshots <out-dir>`). States: empty window; results with
// overlays (real PP-OCR engine when its models are there) in English and Chinese; a VLM preset's notice;
// a folder batch in progress; the settings dialog naming a missing model file.
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "ui/batch_dialog.h"
#include "ui/batch_job.h"
#include "ui/image_view.h"
#include "ui/language.h"
#include "ui/preset_panel.h"
#include "ui/queue_model.h"
#include "ui/recognition_controller.h"
#include "ui/results_panel.h"
#include "ui/settings_dialog.h"
#include "ui_test_support.h"

using namespace lector;

namespace {

bool save(QWidget* w, const QString& dir, const QString& name)
{
    QCoreApplication::processEvents();
    QTest::qWait(150);
    const QString path = QDir(dir).filePath(name);
    const bool ok = w->grab().save(path);
    qInfo("%s %s", ok ? "wrote" : "FAILED", qPrintable(path));
    return ok;
}

bool waitAllDone(test::AppHarness& app, int ms)
{
    return QTest::qWaitFor([&] {
        auto& q = app.window->queue();
        return q.rowCount() > 0 && q.count(ui::ItemStatus::Done) + q.count(ui::ItemStatus::Failed) == q.rowCount();
    }, ms);
}

void resultsState(const QString& out, const QString& suffix, bool real)
{
    test::AppHarness app(real ? -1 : 30);
    app.window->resize(1360, 820);
    app.window->show();
    if (real) app.waitLoaded();
    app.window->recognition().enqueueFiles({test::ppocrFixture(QStringLiteral("doc_en.png")),
                                            test::ppocrFixture(QStringLiteral("rotated_en.png")),
                                            test::ppocrFixture(QStringLiteral("receipt_zh.png"))});
    waitAllDone(app, 60000);
    app.window->showItem(app.window->queue().idAt(2));
    QTest::qWait(400);
    app.window->imageView()->fitToWindow();
    app.window->resultsPanel()->tabs()->setCurrentIndex(ui::ResultsPanel::LinesTab);
    app.window->resultsPanel()->linesTable()->selectRow(1);
    save(app.window.get(), out, QStringLiteral("results%1.png").arg(suffix));
    app.window->resultsPanel()->tabs()->setCurrentIndex(ui::ResultsPanel::TextTab);
    if (suffix.isEmpty()) {
        app.window->presetPanel()->setCurrentPreset(QStringLiteral("invoice"));
        app.window->recognition().rerun(app.window->queue().idAt(2));
        waitAllDone(app, 60000);
        app.window->resultsPanel()->tabs()->setCurrentIndex(ui::ResultsPanel::FieldsTab);
        save(app.window.get(), out, QStringLiteral("fields.png"));
        app.window->presetPanel()->setCurrentPreset(QStringLiteral("parse"));
        save(app.window.get(), out, QStringLiteral("vlm_notice.png"));
        app.window->resultsPanel()->tabs()->setCurrentIndex(ui::ResultsPanel::JsonTab);
        save(app.window.get(), out, QStringLiteral("json.png"));
    }
}

}  // namespace

int main(int argc, char** argv)
{
    QApplication qapp(argc, argv);
    const QString out = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("screenshots");
    QDir().mkpath(out);
    ui::initResources();
    ui::installLanguage(QStringLiteral("en"));
    const bool real = test::realEngineAvailable();

    {  // empty
        test::AppHarness app(10);
        app.window->resize(1360, 820);
        app.window->show();
        save(app.window.get(), out, QStringLiteral("empty.png"));
    }
    resultsState(out, QString(), real);
    {  // batch in progress
        QTemporaryDir src, dst;
        QDir(src.path()).mkpath(QStringLiteral("scans/2025"));
        for (int i = 0; i < 40; ++i)
            QFile::copy(test::ppocrFixture(i % 2 ? QStringLiteral("doc_en.png") : QStringLiteral("receipt_zh.png")),
                        QDir(src.path()).filePath(QStringLiteral("scans/%1/page-%2.png").arg(i < 20 ? QStringLiteral("2025") : QString()).arg(i, 3, 10, QLatin1Char('0'))));
        QFile bad(QDir(src.path()).filePath(QStringLiteral("scans/broken.jpg")));
        bad.open(QIODevice::WriteOnly);
        bad.write("\xff\xd8\xff not a jpeg");
        bad.close();
        test::AppHarness app(120);
        app.window->resize(1360, 820);
        app.window->show();
        auto* dialog = app.window->showBatchDialog();
        dialog->setSourceDir(src.path());
        dialog->setOutputDir(dst.path());
        dialog->startBatch();
        (void)QTest::qWaitFor([&] { return dialog->job() && dialog->job()->progress().done >= 17; }, 30000);
        save(dialog, out, QStringLiteral("batch.png"));
        dialog->cancelBatch();
        (void)QTest::qWaitFor([&] { return dialog->job()->state() == ui::BatchJob::State::Finished; }, 10000);
        save(dialog, out, QStringLiteral("batch_cancelled.png"));
    }
    {  // settings with a folder that lacks a file
        QTemporaryDir model;
        QFile(QDir(model.path()).filePath(QStringLiteral("config.json"))).open(QIODevice::WriteOnly);
        QFile(QDir(model.path()).filePath(QStringLiteral("model.safetensors"))).open(QIODevice::WriteOnly);
        test::AppHarness app(10);
        auto* dialog = app.window->showSettingsDialog();
        dialog->setHunyuanDir(model.path());
        save(dialog, out, QStringLiteral("settings.png"));
    }
    ui::installLanguage(QStringLiteral("zh_CN"));
    resultsState(out, QStringLiteral("_zh_CN"), real);
    {
        test::AppHarness app(10);
        app.window->resize(1360, 820);
        app.window->show();
        save(app.window.get(), out, QStringLiteral("empty_zh_CN.png"));
        auto* dialog = app.window->showSettingsDialog();
        save(dialog, out, QStringLiteral("settings_zh_CN.png"));
    }
    return 0;
}
