#include "ui/tray_controller.h"

#include <QAction>
#include <QMenu>
#include <QSystemTrayIcon>
#include <QWidget>

#include "ui/main_actions.h"

namespace lector::ui {

TrayController::TrayController(QWidget* window, MainActions& actions, QObject* parent)
    : QObject(parent), m_window(window)
{
    if (!QSystemTrayIcon::isSystemTrayAvailable()) return;
    m_tray = new QSystemTrayIcon(QIcon(QStringLiteral(":/icons/lector.svg")), this);
    m_menu = new QMenu(window);
    m_show = m_menu->addAction(QString(), this, [this] {
        if (m_window->isVisible() && !m_window->isMinimized()) m_window->hide();
        else {
            m_window->showNormal();
            m_window->raise();
            m_window->activateWindow();
        }
    });
    m_menu->addAction(actions.paste);
    m_menu->addAction(actions.watchClipboard);
    m_menu->addAction(actions.copyText);
    m_menu->addSeparator();
    m_menu->addAction(actions.quit);
    m_tray->setContextMenu(m_menu);
    connect(m_tray, &QSystemTrayIcon::activated, this, [this](QSystemTrayIcon::ActivationReason reason) {
        if (reason == QSystemTrayIcon::Trigger) m_show->trigger();
    });
    retranslate();
    m_tray->show();
}

void TrayController::retranslate()
{
    if (!m_tray) return;
    m_show->setText(tr("Show / Hide Lector"));
    m_tray->setToolTip(tooltip());
}

QString TrayController::tooltip() const
{
    if (m_lastText.isEmpty()) return tr("Lector");
    return tr("Lector — last result:\n%1").arg(m_lastText.left(200));
}

void TrayController::setLastText(const QString& text)
{
    m_lastText = text.trimmed();
    if (!m_tray) return;
    m_tray->setToolTip(tooltip());
    if (!m_window->isVisible() && !m_lastText.isEmpty())
        m_tray->showMessage(tr("Text recognised"), m_lastText.left(300), QSystemTrayIcon::Information, 4000);
}

}  // namespace lector::ui
