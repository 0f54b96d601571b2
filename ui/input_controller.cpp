#include "ui/input_controller.h"

#include <QApplication>
#include <QClipboard>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QImage>
#include <QMenu>
#include <QMimeData>
#include <QPointer>
#include <QUrl>

#include "ui/folder_scan.h"
#include "ui/recognition_controller.h"
#include "ui/settings.h"

namespace lector::ui {

InputController::InputController(RecognitionController& recognition, Settings& settings, QWidget* dialogParent,
                                 QObject* parent)
    : QObject(parent), m_recognition(recognition), m_settings(settings), m_dialogParent(dialogParent)
{
}

bool InputController::canAccept(const QMimeData* mime)
{
    if (!mime) return false;
    if (mime->hasImage()) return true;
    for (const QUrl& url : mime->urls()) {
        if (url.isLocalFile()) return true;
    }
    return false;
}

bool InputController::addMime(const QMimeData* mime, const QString& pastedName)
{
    if (!mime) return false;
    QStringList paths;
    for (const QUrl& url : mime->urls()) {
        if (url.isLocalFile()) paths << url.toLocalFile();
    }
    if (!paths.isEmpty()) {
        addPaths(paths);
        return true;
    }
    if (mime->hasImage()) {
        const QImage image = qvariant_cast<QImage>(mime->imageData());
        if (image.isNull()) return false;
        const QString name = pastedName.isEmpty()
                                 ? tr("Pasted image %1").arg(++m_pasteCount)
                                 : pastedName;
        Q_EMIT itemsQueued({m_recognition.enqueueImage(image, name)});
        return true;
    }
    return false;
}

void InputController::addPaths(const QStringList& paths)
{
    const QStringList extensions = defaultImageExtensions();
    expandInputsAsync(paths, extensions).then(this, [this, paths](const QStringList& images) {
        if (images.isEmpty()) {
            Q_EMIT nothingFound(tr("No images found in %1").arg(QDir::toNativeSeparators(paths.join(QStringLiteral(", ")))));
            return;
        }
        for (const QString& p : paths) {
            if (QFileInfo(p).isFile()) m_settings.addRecentFile(QFileInfo(p).absoluteFilePath());
        }
        Q_EMIT itemsQueued(m_recognition.enqueueFiles(images));
    });
}

void InputController::openFilesDialog()
{
    QStringList patterns;
    for (const QString& e : defaultImageExtensions()) patterns << QStringLiteral("*.") + e;
    const QString filter = tr("Images (%1)").arg(patterns.join(QLatin1Char(' ')));
    const QStringList recent = m_settings.recentFiles();
    const QString dir = recent.isEmpty() ? QDir::homePath() : QFileInfo(recent.first()).absolutePath();
    const QStringList files = QFileDialog::getOpenFileNames(m_dialogParent, tr("Open Images"), dir, filter);
    if (!files.isEmpty()) addPaths(files);
}

void InputController::openFolderDialog()
{
    const QString dir = QFileDialog::getExistingDirectory(m_dialogParent, tr("Open Folder"), QDir::homePath());
    if (!dir.isEmpty()) addPaths({dir});
}

void InputController::pasteFromClipboard()
{
    const QMimeData* mime = QApplication::clipboard()->mimeData();
    if (!addMime(mime)) Q_EMIT nothingFound(tr("The clipboard holds no image or image file."));
}

void InputController::fillRecentMenu(QMenu* menu)
{
    menu->clear();
    const QStringList recent = m_settings.recentFiles();
    for (const QString& path : recent) {
        QAction* a = menu->addAction(QFileInfo(path).fileName(), this, [this, path] { addPaths({path}); });
        a->setToolTip(QDir::toNativeSeparators(path));
        a->setEnabled(QFileInfo::exists(path));
    }
    if (recent.isEmpty()) menu->addAction(tr("No recent files"))->setEnabled(false);
    else {
        menu->addSeparator();
        menu->addAction(tr("Clear list"), this, [this] { m_settings.setValue(Settings::Key::RecentFiles, QStringList()); });
    }
}

}  // namespace lector::ui
