#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QVBoxLayout>

#include "ui/batch_dialog.h"
#include "ui/clipboard_watcher.h"
#include "ui/download_dialog.h"
#include "ui/empty_state.h"
#include "ui/engine_bridge.h"
#include "ui/export_controller.h"
#include "ui/image_view.h"
#include "ui/input_controller.h"
#include "ui/language.h"
#include "ui/main_actions.h"
#include "ui/model_controller.h"
#include "ui/preset_panel.h"
#include "ui/queue_model.h"
#include "ui/queue_view.h"
#include "ui/recognition_controller.h"
#include "ui/result_presenter.h"
#include "ui/results_panel.h"
#include "ui/settings.h"
#include "ui/settings_dialog.h"
#include "ui/status_line.h"
#include "ui/tray_controller.h"

namespace lector::ui {

MainWindow::MainWindow(Settings& settings, EngineBridge& bridge, ModelController& models,
                       std::vector<doc::Preset> presets, QWidget* parent)
    : QMainWindow(parent), m_settings(settings), m_bridge(bridge), m_models(models)
{
    initResources();
    setObjectName(QStringLiteral("MainWindow"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/lector.svg")));
    setAcceptDrops(true);
    m_queue = new QueueModel(this);
    m_actions = new MainActions(this);
    m_presets = new PresetPanel(std::move(presets), this);
    buildLayout();
    m_actions->buildMenusAndToolbar(this);

    m_recognition = new RecognitionController(*m_queue, m_bridge, [this] { return m_presets->requestTemplate(); }, this);
    m_input = new InputController(*m_recognition, m_settings, this, this);
    m_presenter = new ResultPresenter(*m_queue, *m_view, *m_results, m_bridge, this);
    m_export = new ExportController(this, this);
    m_clipboard = new ClipboardWatcher(QApplication::clipboard(), this);
    m_tray = new TrayController(this, *m_actions, this);

    // Restore the user's choices.
    m_presets->setModelChoice(m_models.current());
    m_presets->setCurrentPreset(m_settings.defaultPreset());
    m_presets->setTranslateTarget(m_settings.translateTarget());
    m_presets->setCustomPrompt(m_settings.customPrompt());
    m_actions->showBoxes->setChecked(m_settings.showOverlay());
    m_view->setOverlayVisible(m_settings.showOverlay());
    m_actions->autoCopy->setChecked(m_settings.autoCopy());
    m_actions->watchClipboard->setChecked(m_settings.watchClipboard());
    m_clipboard->setEnabled(m_settings.watchClipboard());

    connectActions();
    connectControllers();
    retranslate();
    updateEngineState();
    updateQueueStatus();
    if (!restoreGeometry(m_settings.value(Settings::Key::WindowGeometry).toByteArray())) resize(1280, 800);
    restoreState(m_settings.value(Settings::Key::WindowState).toByteArray());
}

MainWindow::~MainWindow() = default;

void MainWindow::buildLayout()
{
    m_queueView = new QueueView(*m_queue, this);
    m_stack = new QStackedWidget(this);
    m_empty = new EmptyState(m_stack);
    m_view = new ImageView(m_stack);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(m_view);
    m_results = new ResultsPanel(this);

    // A layout, not a splitter: the preset panel grows and shrinks with its contents (a Fields row, a
    // notice) and always gets its full height; the results take the rest. A splitter kept the first
    // height and squeezed the combo boxes when the Invoice preset added its Fields row.
    auto* right = new QWidget(this);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->addWidget(m_presets, 0);
    rightLayout->addWidget(m_results, 1);

    m_split = new QSplitter(Qt::Horizontal, this);
    m_split->setObjectName(QStringLiteral("mainSplitter"));
    m_split->addWidget(m_queueView);
    m_split->addWidget(m_stack);
    m_split->addWidget(right);
    m_split->setStretchFactor(0, 0);
    m_split->setStretchFactor(1, 1);
    m_split->setStretchFactor(2, 0);
    m_split->setSizes({220, 640, 420});
    m_split->setChildrenCollapsible(false);
    setCentralWidget(m_split);

    m_status = new StatusLine(this);
    m_zoomLabel = new QLabel(this);
    statusBar()->addPermanentWidget(m_status);
    statusBar()->addPermanentWidget(m_zoomLabel);
}

void MainWindow::connectActions()
{
    MainActions& a = *m_actions;
    connect(a.openFiles, &QAction::triggered, m_input, &InputController::openFilesDialog);
    connect(a.openFolder, &QAction::triggered, m_input, &InputController::openFolderDialog);
    connect(a.paste, &QAction::triggered, m_input, &InputController::pasteFromClipboard);
    connect(a.batch, &QAction::triggered, this, &MainWindow::showBatchDialog);
    connect(a.quit, &QAction::triggered, this, &MainWindow::close);
    connect(a.recentMenu, &QMenu::aboutToShow, this, [this] { m_input->fillRecentMenu(m_actions->recentMenu); });
    for (int i = 0; i < 5; ++i) {
        connect(a.exportCurrent[i], &QAction::triggered, this, [this, i] { exportCurrent(i); });
        connect(a.exportAll[i], &QAction::triggered, this, [this, i] { exportAll(i); });
    }
    connect(a.copyText, &QAction::triggered, this, &MainWindow::copyText);
    connect(a.copySelection, &QAction::triggered, this, &MainWindow::copySelection);
    connect(a.watchClipboard, &QAction::toggled, this, [this](bool on) {
        m_clipboard->setEnabled(on);
        m_settings.setValue(Settings::Key::WatchClipboard, on);
        showMessage(on ? tr("Watching the clipboard: new images are recognised at once.")
                       : tr("Stopped watching the clipboard."));
    });
    connect(a.autoCopy, &QAction::toggled, this, [this](bool on) { m_settings.setValue(Settings::Key::AutoCopy, on); });
    connect(a.rerun, &QAction::triggered, this, [this] { m_recognition->rerun(m_presenter->currentId()); });
    connect(a.cancelAll, &QAction::triggered, m_recognition, &RecognitionController::cancelAll);
    connect(a.settings, &QAction::triggered, this, &MainWindow::showSettingsDialog);
    connect(a.zoomIn, &QAction::triggered, m_view, &ImageView::zoomIn);
    connect(a.zoomOut, &QAction::triggered, m_view, &ImageView::zoomOut);
    connect(a.fit, &QAction::triggered, m_view, &ImageView::fitToWindow);
    connect(a.actualSize, &QAction::triggered, m_view, &ImageView::actualSize);
    connect(a.showBoxes, &QAction::toggled, this, [this](bool on) {
        m_view->setOverlayVisible(on);
        m_settings.setValue(Settings::Key::ShowOverlay, on);
    });
    connect(a.getHunyuan, &QAction::triggered, this, [this] { showSettingsDialog(); });
    connect(a.about, &QAction::triggered, this, [this] {
        QMessageBox::about(this, tr("About Lector"),
                           tr("<h3>Lector %1</h3><p>Desktop OCR with PP-OCRv4 and the HunyuanOCR vision-language "
                              "model, running on this computer.</p>")
                               .arg(QApplication::applicationVersion()));
    });
}

void MainWindow::connectControllers()
{
    connect(m_input, &InputController::itemsQueued, this, &MainWindow::onItemsQueued);
    connect(m_input, &InputController::nothingFound, this, [this](const QString& m) { showMessage(m); });
    connect(m_queueView, &QueueView::currentIdChanged, this, &MainWindow::showItem);
    connect(m_queueView, &QueueView::rerunRequested, m_recognition, &RecognitionController::rerun);
    connect(m_queueView, &QueueView::removeRequested, this, [this](quint64 id) {
        const QueueItem* item = m_queue->find(id);
        if (!item || item->status == ItemStatus::Running || item->status == ItemStatus::Loading) return;
        if (id == m_presenter->currentId()) m_presenter->show(0);
        m_queue->remove(id);
        m_stack->setCurrentWidget(m_queue->rowCount() ? static_cast<QWidget*>(m_view) : m_empty);
    });
    connect(m_queueView, &QueueView::clearFinishedRequested, this, [this] {
        QList<quint64> ids;
        for (int r = 0; r < m_queue->rowCount(); ++r) {
            const auto s = m_queue->at(r).status;
            if (s == ItemStatus::Done || s == ItemStatus::Failed || s == ItemStatus::Cancelled) ids << m_queue->idAt(r);
        }
        for (quint64 id : ids) {
            if (id == m_presenter->currentId()) m_presenter->show(0);
            m_queue->remove(id);
        }
        if (!m_queue->rowCount()) m_stack->setCurrentWidget(m_empty);
    });
    connect(m_empty, &EmptyState::openFilesRequested, m_input, &InputController::openFilesDialog);
    connect(m_empty, &EmptyState::openFolderRequested, m_input, &InputController::openFolderDialog);
    connect(m_empty, &EmptyState::pasteRequested, m_input, &InputController::pasteFromClipboard);
    connect(m_recognition, &RecognitionController::itemStarted, m_presenter, &ResultPresenter::refresh);
    connect(m_recognition, &RecognitionController::itemFinished, this, &MainWindow::onItemFinished);
    connect(m_recognition, &RecognitionController::activityChanged, this, &MainWindow::updateQueueStatus);
    connect(&m_bridge, &EngineBridge::pendingCountChanged, this, &MainWindow::updateQueueStatus);
    connect(&m_models, &ModelController::stateChanged, this, &MainWindow::updateEngineState);
    connect(m_presets, &PresetPanel::modelChoiceChanged, &m_models, &ModelController::choose);
    connect(m_presets, &PresetPanel::rerunRequested, this, [this] { m_recognition->rerun(m_presenter->currentId()); });
    connect(m_presets, &PresetPanel::settingsRequested, this, &MainWindow::showSettingsDialog);
    connect(m_presets, &PresetPanel::presetChanged, this, [this](const QString& id) { m_settings.setValue(Settings::Key::DefaultPreset, id); });
    connect(m_presets, &PresetPanel::optionsChanged, this, [this] {
        if (!m_presets->translateTarget().isEmpty()) m_settings.setValue(Settings::Key::TranslateTarget, m_presets->translateTarget());
        m_settings.setValue(Settings::Key::CustomPrompt, m_presets->customPrompt());
    });
    connect(m_results, &ResultsPanel::copyRequested, this, [this](const QString& text) {
        m_clipboard->setText(text);
        showMessage(tr("Text copied."), 2000);
    });
    connect(m_clipboard, &ClipboardWatcher::imageCaptured, this, [this](const QImage& image) {
        const quint64 id = m_recognition->enqueueImage(image, tr("Clipboard %1").arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss"))));
        onItemsQueued({id});
    });
    connect(m_view, &ImageView::zoomChanged, this, [this](double percent) {
        m_zoomLabel->setText(QStringLiteral("%1%").arg(percent, 0, 'f', 0));
    });
    connect(m_presenter, &ResultPresenter::imageShown, this, &MainWindow::updateTitle);
}

void MainWindow::retranslate()
{
    m_actions->retranslate();
    m_tray->retranslate();
    updateTitle();
}

void MainWindow::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::LanguageChange) retranslate();
    QMainWindow::changeEvent(event);
}

void MainWindow::updateTitle()
{
    const QueueItem* item = m_queue->find(m_presenter->currentId());
    setWindowTitle(item ? tr("%1 — Lector").arg(item->name) : tr("Lector"));
}

void MainWindow::warnPresetsUnreadable(const QString& error)
{
    QMessageBox::warning(this, tr("Presets"), tr("The presets could not be read: %1").arg(error));
}

void MainWindow::showItem(quint64 id)
{
    if (id == 0) return;
    m_stack->setCurrentWidget(m_view);
    if (m_queueView->currentId() != id) m_queueView->setCurrentId(id);  // re-enters with the same id
    if (m_presenter->currentId() != id) m_presenter->show(id);
}

void MainWindow::onItemsQueued(const QList<quint64>& ids)
{
    if (ids.isEmpty()) return;
    showItem(ids.first());
    if (ids.size() > 1) showMessage(tr("%1 images queued.").arg(ids.size()));
}

void MainWindow::onItemFinished(quint64 id)
{
    m_presenter->refresh(id);
    const QueueItem* item = m_queue->find(id);
    if (!item || !item->result) return;
    if (item->result->failed()) {
        if (item->status == ItemStatus::Failed) showMessage(tr("%1: %2").arg(item->name, item->errorText), 8000);
        return;
    }
    m_status->setLastResult(*item->result);
    const QString text = m_results->result() && id == m_presenter->currentId() ? m_results->plainText()
                                                                               : QString::fromStdString(item->result->text);
    m_tray->setLastText(text);
    if (m_settings.autoCopy() && id == m_presenter->currentId() && !text.isEmpty()) m_clipboard->setText(text);
}

void MainWindow::updateEngineState()
{
    m_presets->setModelChoice(m_models.current());
    m_presets->setEngineState(m_bridge.isLoaded(), m_bridge.isLoading(), m_bridge.info(), m_models.lastError());
    m_status->setEngine(m_bridge.info(), m_bridge.isLoading());
}

void MainWindow::updateQueueStatus()
{
    m_status->setQueueDepth(m_recognition->queuedCount(), m_bridge.pendingCount());
}

void MainWindow::copyText()
{
    const QString text = m_results->plainText();
    if (text.isEmpty()) return;
    m_clipboard->setText(text);
    showMessage(tr("Text copied."), 2000);
}

void MainWindow::copySelection()
{
    QString text = m_view->selectedText();
    if (text.isEmpty()) copyText();
    else {
        m_clipboard->setText(text);
        showMessage(tr("%n line(s) copied.", nullptr, static_cast<int>(m_view->selectedLines().size())), 2000);
    }
}

void MainWindow::exportCurrent(int format)
{
    const QueueItem* item = m_queue->find(m_presenter->currentId());
    if (!item || !item->result) {
        showMessage(tr("Nothing to export yet."));
        return;
    }
    m_export->exportResults(static_cast<ExportFormat>(format), {*item->result}, QFileInfo(item->name).completeBaseName());
}

void MainWindow::exportAll(int format)
{
    const auto results = m_queue->finishedResults();
    if (results.empty()) {
        showMessage(tr("Nothing to export yet."));
        return;
    }
    m_export->exportResults(static_cast<ExportFormat>(format), results, QStringLiteral("lector-results"));
}

BatchDialog* MainWindow::showBatchDialog()
{
    if (!m_batch) {
        m_batch = new BatchDialog(m_bridge, m_settings, [this] { return m_presets->requestTemplate(); }, this);
        connect(m_batch, &BatchDialog::progressChanged, m_status, &StatusLine::setBatchProgress);
        connect(m_batch, &BatchDialog::batchFinished, m_status, [this] { m_status->clearBatch(); });
    }
    m_batch->setPresetName(m_presets->presetCombo()->currentText());
    m_batch->show();
    m_batch->raise();
    return m_batch;
}

SettingsDialog* MainWindow::showSettingsDialog()
{
    if (!m_settingsDialog) {
        m_settingsDialog = new SettingsDialog(m_settings, m_presets->presets(), this);
        m_settingsDialog->setAttribute(Qt::WA_DeleteOnClose);
        connect(m_settingsDialog, &SettingsDialog::downloadRequested, this, &MainWindow::showDownloadDialog);
        connect(m_settingsDialog, &QDialog::accepted, this, [this] {
            installLanguage(m_settings.uiLanguage());
            if (m_actions->watchClipboard->isChecked() != m_settings.watchClipboard())
                m_actions->watchClipboard->setChecked(m_settings.watchClipboard());
            m_actions->autoCopy->setChecked(m_settings.autoCopy());
            // A new folder, device or dtype for the model that is in use: load it again.
            m_models.loadFromSettings();
        });
    }
    m_settingsDialog->show();
    m_settingsDialog->raise();
    return m_settingsDialog;
}

void MainWindow::showDownloadDialog(const QString& targetDir)
{
    auto* dialog = new DownloadDialog(m_settings, targetDir, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &DownloadDialog::modelReady, this, [this](const QString& dir) {
        if (m_settingsDialog) m_settingsDialog->setHunyuanDir(dir);
    });
    dialog->show();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (InputController::canAccept(event->mimeData())) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    if (m_input->addMime(event->mimeData())) event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    m_settings.setValue(Settings::Key::WindowGeometry, saveGeometry());
    m_settings.setValue(Settings::Key::WindowState, saveState());
    m_settings.sync();
    QMainWindow::closeEvent(event);
}

void MainWindow::showMessage(const QString& text, int ms) { statusBar()->showMessage(text, ms); }

}  // namespace lector::ui
