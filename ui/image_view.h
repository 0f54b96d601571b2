// ImageView: shows the current image with one OverlayItem per recognised line. Zoom with the wheel
// (around the cursor), fit to window, 100% (one image pixel per device pixel, so high-DPI screens
// show it crisp); pan by dragging the image. Selection of boxes is reported as line indices and can be
// set from the results panel. GUI thread only.
#pragma once

#include <QGraphicsView>
#include <QList>

#include <vector>

#include "core/doc/ocr_result.h"

class QGraphicsPixmapItem;

namespace lector::ui {

class OverlayItem;

class ImageView : public QGraphicsView {
    Q_OBJECT
public:
    explicit ImageView(QWidget* parent = nullptr);

    // Shows `image` (keeps the zoom mode: fit stays fit). Clears the overlay.
    void setImage(const QImage& image);
    void clear();
    bool hasImage() const { return m_pixmap != nullptr; }
    QSize imageSize() const { return m_imageSize; }
    // One overlay item per line, in line order.
    void setLines(const std::vector<doc::TextLine>& lines);
    QList<OverlayItem*> overlayItems() const { return m_items; }
    void setOverlayVisible(bool visible);
    bool overlayVisible() const { return m_overlayVisible; }
    // A short note drawn over the image's top-left corner ("Recognising…"); empty hides it.
    void setBusyText(const QString& text);

    // --- selection, in line indices ---
    QList<int> selectedLines() const;
    void selectLines(const QList<int>& lines);   // does not emit lineSelectionChanged
    QString selectedText() const;                // selected lines' text, in reading order

    // --- zoom ---
    double zoom() const { return m_zoom; }       // scene (image pixel) to device-independent pixel
    bool isFitMode() const { return m_fit; }
    void zoomIn();
    void zoomOut();
    void fitToWindow();
    void actualSize();                           // 100 %: one image pixel per device pixel
    // Zoom as a percentage of the image's real pixels on this screen.
    double zoomPercent() const;

Q_SIGNALS:
    void lineSelectionChanged(const QList<int>& lines);
    void zoomChanged(double percent);

protected:
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void drawForeground(QPainter* painter, const QRectF& rect) override;

private:
    void setZoom(double zoom, bool keepFit = false);
    void applyFit();
    void onSceneSelectionChanged();

    QGraphicsPixmapItem* m_pixmap = nullptr;
    QList<OverlayItem*> m_items;
    QSize m_imageSize;
    double m_zoom = 1.0;
    bool m_fit = true;
    bool m_overlayVisible = true;
    bool m_syncing = false;
    QString m_busyText;
};

}  // namespace lector::ui
