#include "ui/folder_scan.h"

#include <QCollator>
#include <QDirIterator>
#include <QFileInfo>
#include <QSet>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

namespace lector::ui {

QStringList defaultImageExtensions()
{
    return {QStringLiteral("png"), QStringLiteral("jpg"), QStringLiteral("jpeg"), QStringLiteral("bmp"),
            QStringLiteral("tif"), QStringLiteral("tiff"), QStringLiteral("webp")};
}

bool hasImageExtension(const QString& path, const QStringList& extensions)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    return !suffix.isEmpty() && extensions.contains(suffix);
}

void naturalSort(QStringList& paths)
{
    QCollator collator;
    collator.setNumericMode(true);
    collator.setCaseSensitivity(Qt::CaseInsensitive);
    std::sort(paths.begin(), paths.end(),
              [&](const QString& a, const QString& b) { return collator.compare(a, b) < 0; });
}

QStringList scanImages(const QString& dir, bool recursive, const QStringList& extensions)
{
    QStringList out;
    QDirIterator it(dir, QDir::Files | QDir::NoDotAndDotDot,
                    recursive ? QDirIterator::Subdirectories : QDirIterator::NoIteratorFlags);
    while (it.hasNext()) {
        const QString path = it.next();
        if (hasImageExtension(path, extensions)) out << path;
    }
    naturalSort(out);
    return out;
}

QStringList expandInputs(const QStringList& paths, const QStringList& extensions)
{
    QStringList out;
    QSet<QString> seen;
    auto add = [&](const QString& p) {
        const QString canonical = QFileInfo(p).absoluteFilePath();
        if (seen.contains(canonical)) return;
        seen.insert(canonical);
        out << canonical;
    };
    for (const QString& p : paths) {
        const QFileInfo info(p);
        if (info.isDir()) {
            for (const QString& f : scanImages(info.absoluteFilePath(), true, extensions)) add(f);
        } else if (info.isFile() && hasImageExtension(p, extensions)) {
            add(p);
        }
    }
    return out;
}

QFuture<QStringList> expandInputsAsync(const QStringList& paths, const QStringList& extensions)
{
    return QtConcurrent::run([paths, extensions]() { return expandInputs(paths, extensions); });
}

}  // namespace lector::ui
