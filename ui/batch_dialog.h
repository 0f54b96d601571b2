// BatchDialog: the folder batch. Options (source folder, subfolders, file types, output format and
// folder, mirrored tree), then progress with images/s and ETA, Pause / Resume / Cancel, and a summary
// that lists failures. Starting over an output folder that holds an unfinished batch continues it.
// Owns the running BatchJob; modeless, so the main window stays usable. GUI thread only.
#pragma once

#include <QDialog>

#include <functional>
#include <memory>

#include "core/engine/engine.h"
#include "ui/batch_job.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QToolButton;

namespace lector::ui {

class EngineBridge;
class Settings;

class BatchDialog : public QDialog {
    Q_OBJECT
public:
    using RequestTemplate = std::function<engine::Request()>;
    BatchDialog(EngineBridge& bridge, Settings& settings, RequestTemplate requestTemplate, QWidget* parent = nullptr);
    ~BatchDialog() override;

    // How the current preset is named in the UI language (shown above the progress).
    void setPresetName(const QString& name);
    void setSourceDir(const QString& dir);
    void setOutputDir(const QString& dir);
    BatchOptions options() const;
    BatchJob* job() const { return m_job.get(); }

    // --- actions (buttons call these; public for tests) ---
    void startBatch();
    void pauseOrResume();
    void cancelBatch();

Q_SIGNALS:
    void progressChanged(const lector::ui::BatchProgress& progress);
    void batchFinished(const lector::ui::BatchSummary& summary);

protected:
    void changeEvent(QEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void retranslate();
    QString presetNote() const;
    void loadDefaults();
    void storeDefaults();
    void updateButtons();
    void checkExistingOutput();
    void onProgress(const BatchProgress& progress);
    void onFinished(const BatchSummary& summary);
    void browseSource();
    void browseOutput();

    EngineBridge& m_bridge;
    Settings& m_settings;
    RequestTemplate m_template;
    QString m_presetName;
    std::unique_ptr<BatchJob> m_job;

    QGroupBox* m_optionsBox;
    QLabel* m_sourceLabel;
    QLineEdit* m_source;
    QToolButton* m_sourceBrowse;
    QCheckBox* m_recursive;
    QLabel* m_typesLabel;
    QLineEdit* m_types;
    QLabel* m_formatLabel;
    QComboBox* m_format;
    QLabel* m_outputLabel;
    QLineEdit* m_output;
    QToolButton* m_outputBrowse;
    QCheckBox* m_mirror;
    QLabel* m_presetNote;
    QLabel* m_resumeNote;

    QGroupBox* m_progressBox;
    QProgressBar* m_bar;
    QLabel* m_stats;
    QLabel* m_current;
    QLabel* m_failuresLabel;
    QListWidget* m_failures;

    QPushButton* m_start;
    QPushButton* m_pause;
    QPushButton* m_cancel;
    QPushButton* m_openOutput;
    QPushButton* m_close;
};

}  // namespace lector::ui
