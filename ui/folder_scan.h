// Finding images on disk: expands dropped/opened folders and walks batch sources. Runs on worker
// threads (QtConcurrent) because a folder tree can hold hundreds of thousands of entries; the
// functions are pure (no shared state). Results are sorted in natural order ("2.png" before "10.png").
#pragma once

#include <QFuture>
#include <QStringList>

namespace lector::ui {

// Lower-case extensions without dots that the decoder reads.
QStringList defaultImageExtensions();
bool hasImageExtension(const QString& path, const QStringList& extensions);
void naturalSort(QStringList& paths);

// Image files under `dir` (absolute paths), optionally recursive; symlinked folders are not
// followed (loops), hidden files and folders are skipped.
QStringList scanImages(const QString& dir, bool recursive, const QStringList& extensions);

// Expands a mixed list of files and folders: folders become their images (recursive), files are kept
// when they have an image extension. Duplicates removed, order kept (folders contribute sorted runs).
QStringList expandInputs(const QStringList& paths, const QStringList& extensions);
QFuture<QStringList> expandInputsAsync(const QStringList& paths, const QStringList& extensions);

}  // namespace lector::ui
