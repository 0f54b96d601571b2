#include "ui/image_convert.h"

#include <QPainter>

#include <cstring>

namespace lector::ui {

std::shared_ptr<const Image> toCoreImage(const QImage& image)
{
    if (image.isNull()) return std::make_shared<const Image>();
    QImage rgb;
    if (image.hasAlphaChannel()) {
        rgb = QImage(image.size(), QImage::Format_RGB888);
        rgb.fill(Qt::white);
        QPainter p(&rgb);
        p.drawImage(0, 0, image);
    } else {
        rgb = image.convertToFormat(QImage::Format_RGB888);
    }
    auto out = std::make_shared<Image>(rgb.width(), rgb.height());
    const size_t rowBytes = static_cast<size_t>(rgb.width()) * 3;
    for (int y = 0; y < rgb.height(); ++y) std::memcpy(out->row(y), rgb.constScanLine(y), rowBytes);
    return out;
}

QImage toQImage(std::shared_ptr<const Image> image)
{
    if (!image || image->empty()) return {};
    auto* keep = new std::shared_ptr<const Image>(image);
    return QImage(image->rgb.data(), image->width, image->height, image->width * 3, QImage::Format_RGB888,
                  [](void* p) { delete static_cast<std::shared_ptr<const Image>*>(p); }, keep);
}

QImage makeThumbnail(const QImage& image, QSize box)
{
    if (image.isNull()) return {};
    // Two-step scaling: a fast cut to 4x, then smooth, so huge scans do not cost a smooth full pass.
    QImage src = image;
    if (src.width() > box.width() * 4 || src.height() > box.height() * 4)
        src = src.scaled(box * 4, Qt::KeepAspectRatio, Qt::FastTransformation);
    return src.scaled(box, Qt::KeepAspectRatio, Qt::SmoothTransformation).convertToFormat(QImage::Format_RGB32);
}

}  // namespace lector::ui
