#include "ui/main_actions.h"

#include <QAction>
#include <QIcon>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QToolBar>

#include "ui/export_controller.h"

namespace lector::ui {
namespace {

QAction* make(QObject* parent, const char* icon, QKeySequence shortcut = {})
{
    auto* a = new QAction(parent);
    if (icon) a->setIcon(QIcon(QStringLiteral(":/icons/%1.svg").arg(QLatin1String(icon))));
    if (!shortcut.isEmpty()) a->setShortcut(shortcut);
    return a;
}

}  // namespace

MainActions::MainActions(QMainWindow* window) : QObject(window)
{
    openFiles = make(this, "open", QKeySequence::Open);
    openFolder = make(this, "folder", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    paste = make(this, "paste", QKeySequence::Paste);
    batch = make(this, "batch", QKeySequence(Qt::CTRL | Qt::Key_B));
    quit = make(this, nullptr, QKeySequence::Quit);
    recentMenu = new QMenu(window);
    exportCurrentMenu = new QMenu(window);
    exportAllMenu = new QMenu(window);
    for (int i = 0; i < 5; ++i) {
        exportCurrent[i] = exportCurrentMenu->addAction(QString());
        exportCurrent[i]->setData(i);
        exportAll[i] = exportAllMenu->addAction(QString());
        exportAll[i]->setData(i);
    }
    exportCurrent[static_cast<int>(ExportFormat::Json)]->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    copyText = make(this, "copy", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    copySelection = make(this, nullptr, QKeySequence::Copy);
    watchClipboard = make(this, "watch", QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_W));
    watchClipboard->setCheckable(true);
    autoCopy = make(this, nullptr);
    autoCopy->setCheckable(true);
    rerun = make(this, "run", QKeySequence(Qt::Key_F5));
    cancelAll = make(this, "stop", QKeySequence(Qt::Key_Escape));
    settings = make(this, "settings", QKeySequence::Preferences);
    zoomIn = make(this, "zoom-in", QKeySequence::ZoomIn);
    zoomOut = make(this, "zoom-out", QKeySequence::ZoomOut);
    fit = make(this, "zoom-fit", QKeySequence(Qt::CTRL | Qt::Key_0));
    actualSize = make(this, "zoom-100", QKeySequence(Qt::CTRL | Qt::Key_1));
    showBoxes = make(this, "boxes", QKeySequence(Qt::CTRL | Qt::Key_L));
    showBoxes->setCheckable(true);
    showBoxes->setChecked(true);
    getHunyuan = make(this, "download");
    about = make(this, nullptr);
}

void MainActions::buildMenusAndToolbar(QMainWindow* window)
{
    m_file = window->menuBar()->addMenu(QString());
    m_file->addAction(openFiles);
    m_file->addAction(openFolder);
    m_file->addMenu(recentMenu);
    m_file->addAction(paste);
    m_file->addSeparator();
    m_file->addAction(batch);
    m_file->addSeparator();
    m_file->addMenu(exportCurrentMenu);
    m_file->addMenu(exportAllMenu);
    m_file->addSeparator();
    m_file->addAction(quit);

    m_edit = window->menuBar()->addMenu(QString());
    m_edit->addAction(copyText);
    m_edit->addAction(copySelection);
    m_edit->addSeparator();
    m_edit->addAction(watchClipboard);
    m_edit->addAction(autoCopy);
    m_edit->addSeparator();
    m_edit->addAction(rerun);
    m_edit->addAction(cancelAll);
    m_edit->addSeparator();
    m_edit->addAction(settings);

    m_view = window->menuBar()->addMenu(QString());
    m_view->addAction(zoomIn);
    m_view->addAction(zoomOut);
    m_view->addAction(fit);
    m_view->addAction(actualSize);
    m_view->addSeparator();
    m_view->addAction(showBoxes);

    m_model = window->menuBar()->addMenu(QString());
    m_model->addAction(getHunyuan);

    m_help = window->menuBar()->addMenu(QString());
    m_help->addAction(about);

    m_toolbar = window->addToolBar(QString());
    m_toolbar->setObjectName(QStringLiteral("mainToolbar"));
    m_toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_toolbar->setMovable(false);
    m_toolbar->setIconSize(QSize(20, 20));
    m_toolbar->addAction(openFiles);
    m_toolbar->addAction(openFolder);
    m_toolbar->addAction(paste);
    m_toolbar->addAction(batch);
    m_toolbar->addSeparator();
    m_toolbar->addAction(copyText);
    m_toolbar->addAction(watchClipboard);
    m_toolbar->addSeparator();
    m_toolbar->addAction(showBoxes);
    m_toolbar->addAction(fit);
    m_toolbar->addAction(actualSize);
    retranslate();
}

void MainActions::retranslate()
{
    openFiles->setText(tr("&Open Images…"));
    openFiles->setIconText(tr("Open"));
    openFolder->setText(tr("Open &Folder…"));
    openFolder->setIconText(tr("Folder"));
    paste->setText(tr("&Paste Image"));
    paste->setIconText(tr("Paste"));
    batch->setText(tr("&Batch OCR…"));
    batch->setIconText(tr("Batch"));
    quit->setText(tr("&Quit"));
    recentMenu->setTitle(tr("&Recent Files"));
    exportCurrentMenu->setTitle(tr("&Export Current Image"));
    exportAllMenu->setTitle(tr("Export &All Results"));
    const QString names[5] = {tr("JSON…"), tr("CSV (lines)…"), tr("CSV (fields)…"), tr("Text…"), tr("Markdown…")};
    for (int i = 0; i < 5; ++i) {
        exportCurrent[i]->setText(names[i]);
        exportAll[i]->setText(names[i]);
    }
    copyText->setText(tr("&Copy Text"));
    copyText->setIconText(tr("Copy text"));
    copyText->setToolTip(tr("Copy the recognised text (Ctrl+Shift+C)"));
    copySelection->setText(tr("Copy &Selected Lines"));
    watchClipboard->setText(tr("&Watch Clipboard"));
    watchClipboard->setIconText(tr("Watch clipboard"));
    watchClipboard->setToolTip(tr("Recognise every new image put on the clipboard, e.g. a screenshot"));
    autoCopy->setText(tr("Copy Result &Automatically"));
    rerun->setText(tr("&Recognise Again"));
    cancelAll->setText(tr("Cancel &Queued"));
    settings->setText(tr("Se&ttings…"));
    zoomIn->setText(tr("Zoom &In"));
    zoomOut->setText(tr("Zoom &Out"));
    fit->setText(tr("&Fit to Window"));
    fit->setIconText(tr("Fit"));
    actualSize->setText(tr("&Actual Size (100%)"));
    actualSize->setIconText(tr("100%"));
    showBoxes->setText(tr("Show &Boxes"));
    showBoxes->setIconText(tr("Boxes"));
    showBoxes->setToolTip(tr("Draw each recognised line over the image (Ctrl+L)"));
    getHunyuan->setText(tr("&Get HunyuanOCR…"));
    about->setText(tr("&About Lector"));
    if (m_file) {
        m_file->setTitle(tr("&File"));
        m_edit->setTitle(tr("&Edit"));
        m_view->setTitle(tr("&View"));
        m_model->setTitle(tr("&Model"));
        m_help->setTitle(tr("&Help"));
        m_toolbar->setWindowTitle(tr("Main toolbar"));
    }
}

}  // namespace lector::ui
