// MainWindow: composes the panels (queue, image view, preset panel, results, status line) and the
// controllers (input, recognition, presenter, export, clipboard, tray) and connects them; it holds no
// recognition logic itself. Drops and pastes arrive here and go to the InputController. GUI thread
// only; the services it uses (Settings, EngineBridge, ModelController) outlive it.
#pragma once

#include <QMainWindow>
#include <QPointer>

#include <memory>
#include <vector>

#include "core/doc/preset.h"

class QLabel;
class QSplitter;
class QStackedWidget;

namespace lector::ui {

class BatchDialog;
class ClipboardWatcher;
class EmptyState;
class EngineBridge;
class ExportController;
class ImageView;
class InputController;
class MainActions;
class ModelController;
class PresetPanel;
class QueueModel;
class QueueView;
class RecognitionController;
class ResultPresenter;
class ResultsPanel;
class Settings;
class SettingsDialog;
class StatusLine;
class TrayController;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(Settings& settings, EngineBridge& bridge, ModelController& models, std::vector<doc::Preset> presets,
               QWidget* parent = nullptr);
    ~MainWindow() override;

    // --- parts, for the app and for tests ---
    QueueModel& queue() { return *m_queue; }
    RecognitionController& recognition() { return *m_recognition; }
    InputController& input() { return *m_input; }
    ResultPresenter& presenter() { return *m_presenter; }
    ClipboardWatcher& clipboardWatcher() { return *m_clipboard; }
    ExportController& exporter() { return *m_export; }
    MainActions& actions() { return *m_actions; }
    ImageView* imageView() const { return m_view; }
    ResultsPanel* resultsPanel() const { return m_results; }
    PresetPanel* presetPanel() const { return m_presets; }
    QueueView* queueView() const { return m_queueView; }
    StatusLine* statusLine() const { return m_status; }

    BatchDialog* showBatchDialog();
    SettingsDialog* showSettingsDialog();
    void showDownloadDialog(const QString& targetDir);
    // Start-up problem: the presets folder could not be read (the app still runs plain OCR).
    void warnPresetsUnreadable(const QString& error);
    // Makes `id` the shown image.
    void showItem(quint64 id);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void buildLayout();
    void connectActions();
    void connectControllers();
    void retranslate();
    void onItemsQueued(const QList<quint64>& ids);
    void onItemFinished(quint64 id);
    void updateEngineState();
    void updateQueueStatus();
    void updateTitle();
    void copyText();
    void copySelection();
    void exportCurrent(int format);
    void exportAll(int format);
    void showMessage(const QString& text, int ms = 5000);

    Settings& m_settings;
    EngineBridge& m_bridge;
    ModelController& m_models;

    QueueModel* m_queue;
    MainActions* m_actions;
    QueueView* m_queueView = nullptr;
    QStackedWidget* m_stack = nullptr;
    EmptyState* m_empty = nullptr;
    ImageView* m_view = nullptr;
    PresetPanel* m_presets = nullptr;
    ResultsPanel* m_results = nullptr;
    StatusLine* m_status = nullptr;
    QLabel* m_zoomLabel = nullptr;
    QSplitter* m_split = nullptr;
    RecognitionController* m_recognition = nullptr;
    InputController* m_input = nullptr;
    ResultPresenter* m_presenter = nullptr;
    ExportController* m_export = nullptr;
    ClipboardWatcher* m_clipboard = nullptr;
    TrayController* m_tray = nullptr;
    QPointer<BatchDialog> m_batch;
    QPointer<SettingsDialog> m_settingsDialog;
};

}  // namespace lector::ui
