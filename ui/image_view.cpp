#include "ui/image_view.h"

#include <QGraphicsPixmapItem>
#include <QPainter>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "ui/overlay_item.h"

namespace lector::ui {
namespace {
constexpr double kMinZoom = 0.02;
constexpr double kMaxZoom = 32.0;
constexpr double kStep = 1.25;
}  // namespace

ImageView::ImageView(QWidget* parent) : QGraphicsView(parent)
{
    setScene(new QGraphicsScene(this));
    setDragMode(ScrollHandDrag);
    setTransformationAnchor(AnchorUnderMouse);
    setResizeAnchor(AnchorViewCenter);
    setRenderHints(QPainter::Antialiasing | QPainter::SmoothPixmapTransform);
    setViewportUpdateMode(FullViewportUpdate);  // the busy note is drawn in viewport coordinates
    setBackgroundBrush(palette().color(QPalette::Window).darker(104));
    setFrameShape(QFrame::NoFrame);
    setAlignment(Qt::AlignCenter);
    connect(scene(), &QGraphicsScene::selectionChanged, this, &ImageView::onSceneSelectionChanged);
}

void ImageView::setImage(const QImage& image)
{
    clear();
    if (image.isNull()) return;
    m_imageSize = image.size();
    m_pixmap = scene()->addPixmap(QPixmap::fromImage(image));
    m_pixmap->setTransformationMode(Qt::SmoothTransformation);
    m_pixmap->setZValue(-1);
    scene()->setSceneRect(QRectF(QPointF(0, 0), QSizeF(image.size())));
    if (m_fit) applyFit();
    else setZoom(m_zoom);
}

void ImageView::clear()
{
    m_syncing = true;
    scene()->clear();
    m_syncing = false;
    m_items.clear();
    m_pixmap = nullptr;
    m_imageSize = {};
    m_busyText.clear();
}

void ImageView::setLines(const std::vector<doc::TextLine>& lines)
{
    m_syncing = true;
    for (OverlayItem* item : std::as_const(m_items)) {
        scene()->removeItem(item);
        delete item;
    }
    m_items.clear();
    for (size_t i = 0; i < lines.size(); ++i) {
        auto* item = new OverlayItem(static_cast<int>(i), lines[i]);
        item->setVisible(m_overlayVisible);
        scene()->addItem(item);
        m_items.append(item);
    }
    m_syncing = false;
}

void ImageView::setOverlayVisible(bool visible)
{
    m_overlayVisible = visible;
    for (OverlayItem* item : std::as_const(m_items)) item->setVisible(visible);
}

void ImageView::setBusyText(const QString& text)
{
    m_busyText = text;
    viewport()->update();
}

QList<int> ImageView::selectedLines() const
{
    QList<int> lines;
    for (OverlayItem* item : m_items) {
        if (item->isSelected()) lines.append(item->lineIndex());
    }
    return lines;
}

void ImageView::selectLines(const QList<int>& lines)
{
    m_syncing = true;
    OverlayItem* first = nullptr;
    for (OverlayItem* item : std::as_const(m_items)) {
        const bool sel = lines.contains(item->lineIndex());
        item->setSelected(sel);
        if (sel && !first) first = item;
    }
    m_syncing = false;
    if (first && m_overlayVisible) ensureVisible(first, 40, 40);
}

QString ImageView::selectedText() const
{
    QStringList parts;
    for (OverlayItem* item : m_items) {  // m_items is in reading order
        if (item->isSelected()) parts << item->text();
    }
    return parts.join(QLatin1Char('\n'));
}

void ImageView::onSceneSelectionChanged()
{
    if (m_syncing) return;
    Q_EMIT lineSelectionChanged(selectedLines());
}

double ImageView::zoomPercent() const { return m_zoom * devicePixelRatioF() * 100.0; }

void ImageView::zoomIn() { setZoom(m_zoom * kStep); }
void ImageView::zoomOut() { setZoom(m_zoom / kStep); }

void ImageView::fitToWindow()
{
    m_fit = true;
    applyFit();
}

void ImageView::actualSize() { setZoom(1.0 / devicePixelRatioF()); }

void ImageView::applyFit()
{
    if (m_imageSize.isEmpty()) return;
    const QSizeF avail = QSizeF(viewport()->size()) - QSizeF(16, 16);
    const double z = std::min(avail.width() / m_imageSize.width(), avail.height() / m_imageSize.height());
    // Never blow small images up beyond 100% when fitting: they would look blurry.
    setZoom(std::min(z, 1.0 / devicePixelRatioF()), true);
}

void ImageView::setZoom(double zoom, bool keepFit)
{
    m_zoom = std::clamp(zoom, kMinZoom, kMaxZoom);
    m_fit = keepFit;
    setTransform(QTransform::fromScale(m_zoom, m_zoom));
    // Smooth filtering blurs pixels when zoomed far in; show them sharp then.
    if (m_pixmap)
        m_pixmap->setTransformationMode(m_zoom * devicePixelRatioF() > 2.0 ? Qt::FastTransformation
                                                                           : Qt::SmoothTransformation);
    Q_EMIT zoomChanged(zoomPercent());
}

void ImageView::wheelEvent(QWheelEvent* event)
{
    if (!m_pixmap) return;
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0) return;
    setZoom(m_zoom * std::pow(kStep, steps));
    event->accept();
}

void ImageView::resizeEvent(QResizeEvent* event)
{
    QGraphicsView::resizeEvent(event);
    if (m_fit) applyFit();
}

void ImageView::drawForeground(QPainter* painter, const QRectF& rect)
{
    QGraphicsView::drawForeground(painter, rect);
    if (m_busyText.isEmpty()) return;
    painter->save();
    painter->resetTransform();  // viewport coordinates
    QFont f = font();
    f.setBold(true);
    painter->setFont(f);
    const QFontMetrics fm(f);
    const QRect box(12, 12, fm.horizontalAdvance(m_busyText) + 24, fm.height() + 12);
    painter->setRenderHint(QPainter::Antialiasing);
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(0, 0, 0, 160));
    painter->drawRoundedRect(box, 6, 6);
    painter->setPen(Qt::white);
    painter->drawText(box, Qt::AlignCenter, m_busyText);
    painter->restore();
}

}  // namespace lector::ui
