#include "ui/image_loader.h"

#include <QElapsedTimer>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>

#include "core/image/decode.h"
#include "ui/image_convert.h"

namespace lector::ui {

QThreadPool* decodePool()
{
    static QThreadPool* pool = [] {
        auto* p = new QThreadPool();  // lives for the process: workers are joined at exit by Qt
        p->setMaxThreadCount(2);
        p->setObjectName(QStringLiteral("lector-decode"));
        return p;
    }();
    return pool;
}

LoadedImage loadImage(const QString& path, bool makeThumb)
{
    LoadedImage out;
    out.path = path;
    QElapsedTimer timer;
    timer.start();
    auto decoded = image::decodeImageFile(std::filesystem::path(path.toStdString()));
    if (!decoded) {
        out.error = decoded.error();
        return out;
    }
    out.image = std::make_shared<const Image>(std::move(decoded.value()));
    out.decodeMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    if (makeThumb) out.thumbnail = makeThumbnail(toQImage(out.image));
    return out;
}

QFuture<LoadedImage> loadImageAsync(const QString& path, bool makeThumb)
{
    return QtConcurrent::run(decodePool(), [path, makeThumb]() { return loadImage(path, makeThumb); });
}

}  // namespace lector::ui
