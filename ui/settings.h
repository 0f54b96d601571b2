// Settings: the application's typed, persisted preferences. One table (settings.cpp, kTable) lists
// every key with its QSettings name, default and validator; the typed getters and setters below read
// and write through it, so a bad value on disk (hand-edited file, older version) falls back to the
// default instead of reaching the UI. GUI thread only (it owns the QSettings writes, style.md §6.5).
#pragma once

#include <QObject>
#include <QSettings>
#include <QStringList>
#include <QVariant>

#include <memory>

namespace lector::ui {

class Settings : public QObject {
    Q_OBJECT
public:
    enum class Key {
        Model,              // "ppocr-v4" | "hunyuan-ocr"
        Device,             // "cpu" | "cuda"
        Dtype,              // "auto" | "float16" | "bfloat16" | "float32"
        HunyuanDir,         // folder holding the HunyuanOCR v1.0 files
        DefaultPreset,      // preset id used at start-up
        UiLanguage,         // "system" | "en" | "zh_CN"
        AutoCopy,           // put recognised text on the clipboard after each result
        WatchClipboard,     // recognise new clipboard images at once
        ShowOverlay,        // draw line boxes over the image
        TranslateTarget,    // target language of the translate preset
        CustomPrompt,       // last custom prompt
        RecentFiles,        // most recent first, at most kMaxRecentFiles
        BatchRecursive,
        BatchExtensions,    // e.g. "png jpg jpeg bmp tif tiff webp"
        BatchFormat,        // "jsonl" | "csv" | "json" | "txt"
        BatchMirrorTree,    // per-image outputs mirror the source folder tree
        BatchOutputDir,     // last output folder
        BatchSourceDir,     // last source folder
        WindowGeometry,     // QByteArray from saveGeometry()
        WindowState,        // QByteArray from saveState()
        Count_
    };
    static constexpr int kMaxRecentFiles = 10;

    // store: the QSettings to persist to; null = the application's default (organisation/app name).
    explicit Settings(std::unique_ptr<QSettings> store = nullptr, QObject* parent = nullptr);
    ~Settings() override;

    // --- generic access through the table ---
    QVariant value(Key key) const;           // stored value if valid, else the default
    // Returns false (and stores nothing) when the validator rejects the value.
    bool setValue(Key key, const QVariant& value);
    static QVariant defaultValue(Key key);
    static bool isValid(Key key, const QVariant& value);
    static QString storageName(Key key);
    void sync();
    QSettings& store() { return *m_store; }

    // --- typed access ---
    QString model() const { return value(Key::Model).toString(); }
    QString device() const { return value(Key::Device).toString(); }
    QString dtype() const { return value(Key::Dtype).toString(); }
    QString hunyuanDir() const { return value(Key::HunyuanDir).toString(); }
    QString defaultPreset() const { return value(Key::DefaultPreset).toString(); }
    QString uiLanguage() const { return value(Key::UiLanguage).toString(); }
    bool autoCopy() const { return value(Key::AutoCopy).toBool(); }
    bool watchClipboard() const { return value(Key::WatchClipboard).toBool(); }
    bool showOverlay() const { return value(Key::ShowOverlay).toBool(); }
    QString translateTarget() const { return value(Key::TranslateTarget).toString(); }
    QString customPrompt() const { return value(Key::CustomPrompt).toString(); }
    QStringList recentFiles() const { return value(Key::RecentFiles).toStringList(); }
    bool batchRecursive() const { return value(Key::BatchRecursive).toBool(); }
    QStringList batchExtensions() const;
    QString batchFormat() const { return value(Key::BatchFormat).toString(); }
    bool batchMirrorTree() const { return value(Key::BatchMirrorTree).toBool(); }

    // Moves path to the front of the recent list (deduplicated, capped).
    void addRecentFile(const QString& path);

Q_SIGNALS:
    void changed(lector::ui::Settings::Key key);

private:
    std::unique_ptr<QSettings> m_store;
};

// The dtype setting as the engine wants it: "" for auto.
QString engineDtype(const QString& settingValue);

}  // namespace lector::ui
