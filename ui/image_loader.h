// Image loading off the GUI thread: decodes files with core's decoder (EXIF orientation applied) on a
// small dedicated QThreadPool, so a folder of thousands never floods the global pool, and makes the
// queue thumbnail in the same pass. Start from the GUI thread; consume the future with
// .then(context, ...) or co_await (QCoro): the result is a value, no shared state.
#pragma once

#include <QFuture>
#include <QImage>
#include <QString>

#include <memory>

#include "core/common/image.h"
#include "core/common/result.h"

class QThreadPool;

namespace lector::ui {

struct LoadedImage {
    QString path;
    std::shared_ptr<const Image> image;  // null on failure
    QImage thumbnail;
    Error error;                         // code empty when it loaded
    double decodeMs = 0;
    bool ok() const { return image != nullptr; }
};

// The pool used for decoding (2 threads: decoding is much cheaper than recognition).
QThreadPool* decodePool();

// Decodes `path`; makeThumb = false skips the thumbnail (batch runs).
QFuture<LoadedImage> loadImageAsync(const QString& path, bool makeThumb = true);
// The same, synchronously (for worker threads and tests).
LoadedImage loadImage(const QString& path, bool makeThumb = true);

}  // namespace lector::ui
