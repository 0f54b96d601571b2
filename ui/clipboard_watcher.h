// ClipboardWatcher: "Watch clipboard" mode. When enabled, every new image put on the clipboard (e.g.
// by the system's screenshot tool) is reported once; images already there when watching starts, and
// our own text written back to the clipboard, are not. GUI thread only (it owns clipboard access).
#pragma once

#include <QImage>
#include <QObject>

class QClipboard;

namespace lector::ui {

class ClipboardWatcher : public QObject {
    Q_OBJECT
public:
    explicit ClipboardWatcher(QClipboard* clipboard, QObject* parent = nullptr);

    void setEnabled(bool enabled);
    bool isEnabled() const { return m_enabled; }
    // Puts text on the clipboard without it being taken as a new capture.
    void setText(const QString& text);
    // The clipboard's image now, or a null image.
    QImage currentImage() const;

    // A cheap content key: equal images give equal keys (size + format + sampled pixels hash).
    static quint64 imageKey(const QImage& image);

Q_SIGNALS:
    void imageCaptured(const QImage& image);

private:
    void onChanged();

    QClipboard* m_clipboard;
    bool m_enabled = false;
    quint64 m_lastKey = 0;
};

}  // namespace lector::ui
