#include "ui/clipboard_watcher.h"

#include <QClipboard>
#include <QCryptographicHash>
#include <QMimeData>

namespace lector::ui {

ClipboardWatcher::ClipboardWatcher(QClipboard* clipboard, QObject* parent) : QObject(parent), m_clipboard(clipboard)
{
    connect(m_clipboard, &QClipboard::dataChanged, this, &ClipboardWatcher::onChanged);
}

void ClipboardWatcher::setEnabled(bool enabled)
{
    if (enabled == m_enabled) return;
    m_enabled = enabled;
    // What is on the clipboard already is not "new": remember it so it is not recognised.
    if (enabled) m_lastKey = imageKey(currentImage());
}

void ClipboardWatcher::setText(const QString& text) { m_clipboard->setText(text); }

QImage ClipboardWatcher::currentImage() const
{
    const QMimeData* mime = m_clipboard->mimeData();
    if (!mime || !mime->hasImage()) return {};
    return qvariant_cast<QImage>(mime->imageData());
}

quint64 ClipboardWatcher::imageKey(const QImage& image)
{
    if (image.isNull()) return 0;
    // Hash every 16th row: enough to tell screenshots apart, cheap on 8K screens.
    QCryptographicHash hash(QCryptographicHash::Sha1);
    const QImage img = image.format() == QImage::Format_ARGB32 || image.format() == QImage::Format_RGB32
                           ? image
                           : image.convertToFormat(QImage::Format_ARGB32);
    const int dims[3] = {img.width(), img.height(), static_cast<int>(img.format())};
    hash.addData(QByteArrayView(reinterpret_cast<const char*>(dims), sizeof dims));
    for (int y = 0; y < img.height(); y += 16)
        hash.addData(QByteArrayView(reinterpret_cast<const char*>(img.constScanLine(y)), img.bytesPerLine()));
    const QByteArray digest = hash.result();
    quint64 key = 0;
    for (int i = 0; i < 8; ++i) key = (key << 8) | static_cast<quint8>(digest[i]);
    return key == 0 ? 1 : key;
}

void ClipboardWatcher::onChanged()
{
    if (!m_enabled) return;
    const QImage image = currentImage();
    if (image.isNull()) return;  // text (ours or anyone's): nothing to recognise
    const quint64 key = imageKey(image);
    if (key == m_lastKey) return;
    m_lastKey = key;
    Q_EMIT imageCaptured(image);
}

}  // namespace lector::ui
