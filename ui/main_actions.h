// MainActions: every QAction of the main window (with shortcuts and icons), the menus and the toolbar
// built from them, and their translated texts. The main window connects them; no behaviour here.
// GUI thread only.
#pragma once

#include <QObject>

class QAction;
class QMainWindow;
class QMenu;
class QToolBar;

namespace lector::ui {

class MainActions : public QObject {
    Q_OBJECT
public:
    explicit MainActions(QMainWindow* window);

    void buildMenusAndToolbar(QMainWindow* window);
    void retranslate();

    // File
    QAction* openFiles;
    QAction* openFolder;
    QAction* paste;
    QAction* batch;
    QAction* quit;
    QMenu* recentMenu;
    QMenu* exportCurrentMenu;
    QMenu* exportAllMenu;
    QAction* exportCurrent[5];   // indexed by ExportFormat
    QAction* exportAll[5];
    // Edit
    QAction* copyText;
    QAction* copySelection;
    QAction* watchClipboard;
    QAction* autoCopy;
    QAction* rerun;
    QAction* cancelAll;
    QAction* settings;
    // View
    QAction* zoomIn;
    QAction* zoomOut;
    QAction* fit;
    QAction* actualSize;
    QAction* showBoxes;
    // Model
    QAction* getHunyuan;
    // Help
    QAction* about;

private:
    QMenu* m_file = nullptr;
    QMenu* m_edit = nullptr;
    QMenu* m_view = nullptr;
    QMenu* m_model = nullptr;
    QMenu* m_help = nullptr;
    QToolBar* m_toolbar = nullptr;
};

}  // namespace lector::ui
