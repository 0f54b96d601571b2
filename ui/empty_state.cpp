#include "ui/empty_state.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QVBoxLayout>

namespace lector::ui {

EmptyState::EmptyState(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(48, 32, 48, 32);  // inside the dashed drop zone
    layout->addStretch(2);
    m_icon = new QLabel(this);
    m_icon->setAlignment(Qt::AlignCenter);
    m_icon->setPixmap(QIcon(QStringLiteral(":/icons/lector.svg")).pixmap(QSize(72, 72)));
    layout->addWidget(m_icon);
    m_title = new QLabel(this);
    m_title->setAlignment(Qt::AlignCenter);
    QFont f = m_title->font();
    f.setPointSizeF(f.pointSizeF() * 1.5);
    f.setBold(true);
    m_title->setFont(f);
    layout->addWidget(m_title);
    m_hint = new QLabel(this);
    m_hint->setAlignment(Qt::AlignCenter);
    m_hint->setWordWrap(true);
    m_hint->setForegroundRole(QPalette::PlaceholderText);
    layout->addWidget(m_hint);
    layout->addSpacing(12);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    m_open = new QPushButton(QIcon(QStringLiteral(":/icons/open.svg")), QString(), this);
    m_folder = new QPushButton(QIcon(QStringLiteral(":/icons/folder.svg")), QString(), this);
    m_paste = new QPushButton(QIcon(QStringLiteral(":/icons/paste.svg")), QString(), this);
    buttons->addWidget(m_open);
    buttons->addWidget(m_folder);
    buttons->addWidget(m_paste);
    buttons->addStretch(1);
    layout->addLayout(buttons);
    layout->addStretch(3);
    connect(m_open, &QPushButton::clicked, this, &EmptyState::openFilesRequested);
    connect(m_folder, &QPushButton::clicked, this, &EmptyState::openFolderRequested);
    connect(m_paste, &QPushButton::clicked, this, &EmptyState::pasteRequested);
    retranslate();
}

void EmptyState::retranslate()
{
    m_title->setText(tr("Drop images or folders here"));
    m_hint->setText(tr("or paste a screenshot with Ctrl+V. Lector reads the text, shows every line as a box on "
                       "the image, and tells you how long it took."));
    m_open->setText(tr("Open images…"));
    m_folder->setText(tr("Open folder…"));
    m_paste->setText(tr("Paste"));
}

void EmptyState::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::LanguageChange) retranslate();
    QWidget::changeEvent(event);
}

void EmptyState::paintEvent(QPaintEvent*)
{
    // A dashed drop zone around the content.
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    QPen pen(palette().color(QPalette::Mid), 2, Qt::DashLine);
    p.setPen(pen);
    p.setBrush(Qt::NoBrush);
    p.drawRoundedRect(QRectF(rect()).adjusted(16, 16, -16, -16), 12, 12);
}

}  // namespace lector::ui
