// OverlayItem: one recognised text line drawn over the image as its polygon, tinted by confidence
// (green >= 0.9, amber >= 0.7, red below, blue when the model gives no score). Hover shows the text as
// a tooltip and brightens the fill; selection (click, Ctrl+click) draws a thick outline. Owned by the
// ImageView's scene; GUI thread only.
#pragma once

#include <QColor>
#include <QGraphicsPolygonItem>

#include <optional>

#include "core/doc/ocr_result.h"

namespace lector::ui {

class OverlayItem : public QGraphicsPolygonItem {
public:
    enum { Type = UserType + 1 };

    OverlayItem(int lineIndex, const doc::TextLine& line, QGraphicsItem* parent = nullptr);

    int type() const override { return Type; }
    int lineIndex() const { return m_lineIndex; }
    const QString& text() const { return m_text; }
    std::optional<float> confidence() const { return m_confidence; }
    QColor tint() const { return m_tint; }
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

    static QColor tintFor(std::optional<float> confidence);

protected:
    void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
    void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;

private:
    int m_lineIndex;
    QString m_text;
    std::optional<float> m_confidence;
    QColor m_tint;
    bool m_hovered = false;
};

}  // namespace lector::ui
