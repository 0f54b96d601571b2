// InputController: every way images come in. Drops and pastes (QMimeData with file/folder URLs or
// image data), Open Images / Open Folder dialogs, Paste (Ctrl+V), recent files. Folders are expanded
// on a worker thread; the images go to the RecognitionController. GUI thread only.
#pragma once

#include <QList>
#include <QObject>
#include <QStringList>

class QMenu;
class QMimeData;
class QWidget;

namespace lector::ui {

class RecognitionController;
class Settings;

class InputController : public QObject {
    Q_OBJECT
public:
    InputController(RecognitionController& recognition, Settings& settings, QWidget* dialogParent,
                    QObject* parent = nullptr);

    static bool canAccept(const QMimeData* mime);
    // Handles a drop or paste. Returns false when it held nothing usable.
    bool addMime(const QMimeData* mime, const QString& pastedName = {});
    // Files and folders, mixed; folders are searched recursively for images.
    void addPaths(const QStringList& paths);

    void openFilesDialog();
    void openFolderDialog();
    void pasteFromClipboard();
    void fillRecentMenu(QMenu* menu);

Q_SIGNALS:
    void itemsQueued(const QList<quint64>& ids);
    void nothingFound(const QString& message);

private:
    RecognitionController& m_recognition;
    Settings& m_settings;
    QWidget* m_dialogParent;
    int m_pasteCount = 0;
};

}  // namespace lector::ui
