// Conversions between Qt images and lector::Image (core's immutable RGB buffer), and thumbnails.
// Pure functions, safe on any thread (QImage is reentrant): decoding workers call them.
#pragma once

#include <QImage>
#include <QSize>

#include <memory>

#include "core/common/image.h"

namespace lector::ui {

// Copies any QImage into an 8-bit RGB lector::Image (alpha composited on white, like the decoder).
std::shared_ptr<const Image> toCoreImage(const QImage& image);
// Wraps the shared buffer without copying; the QImage keeps the buffer alive (read-only QImage).
QImage toQImage(std::shared_ptr<const Image> image);
// A thumbnail that fits `box`, smooth-scaled, for the queue list.
QImage makeThumbnail(const QImage& image, QSize box = QSize(64, 64));

}  // namespace lector::ui
