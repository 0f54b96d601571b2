#include "ui/overlay_item.h"

#include <QCoreApplication>
#include <QPainter>
#include <QPen>
#include <QStyleOptionGraphicsItem>

namespace lector::ui {

OverlayItem::OverlayItem(int lineIndex, const doc::TextLine& line, QGraphicsItem* parent)
    : QGraphicsPolygonItem(parent), m_lineIndex(lineIndex), m_text(QString::fromStdString(line.text)),
      m_confidence(line.confidence), m_tint(tintFor(line.confidence))
{
    QPolygonF poly;
    bool hasPolygon = false;
    for (const auto& p : line.polygon) {
        poly << QPointF(p.x, p.y);
        hasPolygon = hasPolygon || p.x != 0 || p.y != 0;
    }
    if (!hasPolygon) {  // models that give only a box
        const auto& b = line.box;
        poly = QPolygonF(QRectF(QPointF(b[0], b[1]), QPointF(b[2], b[3])));
    }
    setPolygon(poly);
    setFlag(ItemIsSelectable);
    setAcceptHoverEvents(true);
    QString tip = m_text.toHtmlEscaped();
    if (m_confidence)
        tip += QStringLiteral("<br><small>%1</small>")
                   .arg(QCoreApplication::translate("OverlayItem", "Confidence %1%")
                            .arg(static_cast<double>(*m_confidence) * 100.0, 0, 'f', 1));
    setToolTip(tip);
}

QColor OverlayItem::tintFor(std::optional<float> confidence)
{
    if (!confidence) return QColor(0x34, 0x78, 0xf6);
    if (*confidence >= 0.9f) return QColor(0x1f, 0xa2, 0x4a);
    if (*confidence >= 0.7f) return QColor(0xe0, 0x9a, 0x00);
    return QColor(0xd6, 0x3a, 0x3a);
}

void OverlayItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*)
{
    const bool selected = option->state & QStyle::State_Selected;
    QColor fill = m_tint;
    fill.setAlpha(selected ? 110 : (m_hovered ? 80 : 40));
    // Cosmetic pens keep the outline crisp and equally thick at any zoom and on high-DPI screens.
    QPen pen(m_tint.darker(selected ? 130 : 100), selected ? 3.0 : 1.5);
    pen.setCosmetic(true);
    pen.setJoinStyle(Qt::MiterJoin);
    painter->setRenderHint(QPainter::Antialiasing, true);
    painter->setPen(pen);
    painter->setBrush(fill);
    painter->drawPolygon(polygon());
}

void OverlayItem::hoverEnterEvent(QGraphicsSceneHoverEvent* event)
{
    m_hovered = true;
    update();
    QGraphicsPolygonItem::hoverEnterEvent(event);
}

void OverlayItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* event)
{
    m_hovered = false;
    update();
    QGraphicsPolygonItem::hoverLeaveEvent(event);
}

}  // namespace lector::ui
