// RecognitionController: works through the queue. Keeps at most kMaxInFlight images decoded or in the
// engine at once (memory stays flat when a folder of thousands is dropped), decodes on the decode
// pool, submits through EngineBridge with the request template of the preset panel, and records each
// result, status and latency in the QueueModel. GUI thread only; never waits.
#pragma once

#include <QHash>
#include <QImage>
#include <QObject>
#include <QStringList>

#include <functional>

#include "core/engine/engine.h"
#include "ui/engine_bridge.h"
#include "ui/image_loader.h"

namespace lector::ui {

class QueueModel;

class RecognitionController : public QObject {
    Q_OBJECT
public:
    static constexpr int kMaxInFlight = 6;
    // Preset, prompt, fields ... of the next request (image and name are filled in here).
    using RequestTemplate = std::function<engine::Request()>;

    RecognitionController(QueueModel& queue, EngineBridge& bridge, RequestTemplate requestTemplate,
                          QObject* parent = nullptr);

    // Queue image files (already expanded: no folders). Returns the new item ids in order.
    QList<quint64> enqueueFiles(const QStringList& paths);
    // Queue an in-memory image (paste, clipboard capture).
    quint64 enqueueImage(const QImage& image, const QString& name);
    // Runs an item again with the current request template (after a preset change).
    void rerun(quint64 id);
    // Cancels queued and running items.
    void cancelAll();
    int inFlight() const { return m_inFlight; }
    int queuedCount() const;

Q_SIGNALS:
    void itemStarted(quint64 id);
    void itemFinished(quint64 id);     // Done, Failed or Cancelled; the item holds the result
    void activityChanged();            // queued / in-flight counts changed

private:
    void pump();
    void startLoading(quint64 id);
    void onLoaded(quint64 id, const LoadedImage& loaded);
    void submit(quint64 id);
    void onFinished(EngineBridge::Ticket ticket, const doc::OcrResult& result);
    void finishItem(quint64 id, doc::OcrResult result);
    void onModelChanged();

    QueueModel& m_queue;
    EngineBridge& m_bridge;
    RequestTemplate m_template;
    QList<quint64> m_waiting;                  // queued ids, FIFO
    QHash<EngineBridge::Ticket, quint64> m_byTicket;
    int m_inFlight = 0;
};

}  // namespace lector::ui
