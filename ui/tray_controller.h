// TrayController: the system tray icon. Its menu shows or hides the window, recognises the clipboard
// image, toggles clipboard watching and copies the last text; its tooltip holds the last result, and
// while the window is hidden a finished result pops up as a notification. Does nothing where the
// platform has no tray. GUI thread only.
#pragma once

#include <QObject>
#include <QString>

class QAction;
class QMenu;
class QSystemTrayIcon;
class QWidget;

namespace lector::ui {

class MainActions;

class TrayController : public QObject {
    Q_OBJECT
public:
    TrayController(QWidget* window, MainActions& actions, QObject* parent = nullptr);

    bool isAvailable() const { return m_tray != nullptr; }
    void setLastText(const QString& text);
    QString tooltip() const;
    void retranslate();

private:
    QWidget* m_window;
    QSystemTrayIcon* m_tray = nullptr;
    QMenu* m_menu = nullptr;
    QAction* m_show = nullptr;
    QString m_lastText;
};

}  // namespace lector::ui
