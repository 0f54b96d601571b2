#include "ui/recognition_controller.h"

#include <QFileInfo>

#include "ui/image_convert.h"
#include "ui/queue_model.h"

namespace lector::ui {

RecognitionController::RecognitionController(QueueModel& queue, EngineBridge& bridge, RequestTemplate requestTemplate,
                                             QObject* parent)
    : QObject(parent), m_queue(queue), m_bridge(bridge), m_template(std::move(requestTemplate))
{
    connect(&m_bridge, &EngineBridge::finished, this, &RecognitionController::onFinished);
    connect(&m_bridge, &EngineBridge::modelChanged, this, &RecognitionController::onModelChanged);
}

QList<quint64> RecognitionController::enqueueFiles(const QStringList& paths)
{
    QList<quint64> ids;
    for (const QString& path : paths) {
        QueueItem item;
        item.path = path;
        item.name = QFileInfo(path).fileName();
        item.createdAt = engine::Clock::now();
        const quint64 id = m_queue.append(std::move(item));
        m_waiting.append(id);
        ids.append(id);
    }
    pump();
    Q_EMIT activityChanged();
    return ids;
}

quint64 RecognitionController::enqueueImage(const QImage& image, const QString& name)
{
    QueueItem item;
    item.name = name;
    item.image = toCoreImage(image);
    item.thumbnail = makeThumbnail(image);
    item.createdAt = engine::Clock::now();
    const quint64 id = m_queue.append(std::move(item));
    m_waiting.append(id);
    pump();
    Q_EMIT activityChanged();
    return id;
}

void RecognitionController::rerun(quint64 id)
{
    QueueItem* item = m_queue.find(id);
    if (!item || item->status == ItemStatus::Loading || item->status == ItemStatus::Running) return;
    if (m_waiting.contains(id)) return;
    item->status = ItemStatus::Queued;
    item->errorText.clear();
    item->createdAt = engine::Clock::now();
    m_queue.notifyChanged(id);
    m_waiting.append(id);
    pump();
    Q_EMIT activityChanged();
}

void RecognitionController::cancelAll()
{
    for (quint64 id : std::as_const(m_waiting)) {
        if (QueueItem* item = m_queue.find(id)) {
            item->status = ItemStatus::Cancelled;
            m_queue.notifyChanged(id);
        }
    }
    m_waiting.clear();
    for (auto it = m_byTicket.begin(); it != m_byTicket.end(); ++it) m_bridge.cancel(it.key());
    Q_EMIT activityChanged();
}

int RecognitionController::queuedCount() const { return static_cast<int>(m_waiting.size()); }

void RecognitionController::pump()
{
    // Without a model nothing can run; items wait (modelChanged pumps again).
    if (!m_bridge.isLoaded()) return;
    while (m_inFlight < kMaxInFlight && !m_waiting.isEmpty()) {
        const quint64 id = m_waiting.takeFirst();
        QueueItem* item = m_queue.find(id);
        if (!item) continue;  // removed meanwhile
        ++m_inFlight;
        item->createdAt = engine::Clock::now();
        item->decodeMs = 0;
        Q_EMIT itemStarted(id);
        if (item->image) submit(id);
        else startLoading(id);
    }
}

void RecognitionController::startLoading(quint64 id)
{
    QueueItem* item = m_queue.find(id);
    item->status = ItemStatus::Loading;
    m_queue.notifyChanged(id);
    loadImageAsync(item->path, item->thumbnail.isNull())
        .then(this, [this, id](const LoadedImage& loaded) { onLoaded(id, loaded); });
}

void RecognitionController::onLoaded(quint64 id, const LoadedImage& loaded)
{
    QueueItem* item = m_queue.find(id);
    if (!item) {
        --m_inFlight;
        pump();
        return;
    }
    if (!loaded.thumbnail.isNull()) item->thumbnail = loaded.thumbnail;
    if (!loaded.ok()) {
        finishItem(id, doc::makeErrorResult(item->path.toStdString(), loaded.error));
        return;
    }
    item->image = loaded.image;
    item->decodeMs = loaded.decodeMs;  // reported as the "decode_image" stage
    submit(id);
}

void RecognitionController::submit(quint64 id)
{
    QueueItem* item = m_queue.find(id);
    engine::Request request = m_template ? m_template() : engine::Request{};
    request.imageName = (item->path.isEmpty() ? item->name : item->path).toStdString();
    request.image = item->image;
    request.createdAt = item->createdAt;
    request.decodeMs = item->decodeMs;
    auto ticket = m_bridge.submit(std::move(request));
    if (!ticket) {
        finishItem(id, doc::makeErrorResult(item->name.toStdString(), ticket.error()));
        return;
    }
    item->ticket = ticket.value();
    item->status = ItemStatus::Running;
    m_byTicket.insert(ticket.value(), id);
    m_queue.notifyChanged(id);
}

void RecognitionController::onFinished(EngineBridge::Ticket ticket, const doc::OcrResult& result)
{
    const auto it = m_byTicket.find(ticket);
    if (it == m_byTicket.end()) return;  // another client's request (batch, tests)
    const quint64 id = it.value();
    m_byTicket.erase(it);
    finishItem(id, result);
}

void RecognitionController::finishItem(quint64 id, doc::OcrResult result)
{
    --m_inFlight;
    if (QueueItem* item = m_queue.find(id)) {
        item->ticket = 0;
        const bool cancelled = result.error && result.error->code == "cancelled";
        item->status = cancelled ? ItemStatus::Cancelled : (result.failed() ? ItemStatus::Failed : ItemStatus::Done);
        item->errorText = result.error ? QString::fromStdString(result.error->message) : QString();
        const double total = result.timing("total");
        if (total > 0) item->latencyMs = total;
        if (!item->path.isEmpty()) item->image.reset();  // files are read again when shown
        item->result = std::move(result);
        m_queue.notifyChanged(id);
        Q_EMIT itemFinished(id);
    }
    pump();
    Q_EMIT activityChanged();
}

void RecognitionController::onModelChanged() { pump(); }

}  // namespace lector::ui
