// EngineBridge: the only way ui/ reaches the inference engine. It owns the loaded OcrBackend, turns
// engine callbacks (engine thread) into queued calls on the GUI thread (QMetaObject::invokeMethod,
// Qt::QueuedConnection), and exposes them as Qt signals and QCoro tasks:
//
//   auto result = co_await bridge.recognize(request);     // GUI thread, never blocks
//   auto loaded = co_await bridge.load(config);           // model load runs on a worker thread
//
// Requests are named by bridge tickets (unique for the bridge's life, across model switches). Every
// accepted ticket ends with exactly one finished() signal; requests of a model that is switched away
// end with error "cancelled". Partial (streamed) text is coalesced: at most one partialText() per
// ticket per event-loop pass, always the newest. GUI thread only; the destructor shuts the engine down
// (joins its thread) before any object is destroyed (style.md §6.5 rule 8).
#pragma once

#include <QHash>
#include <QObject>
#include <QString>

#include <QCoroTask>

#include <coroutine>
#include <functional>
#include <memory>

#include "core/engine/engine.h"
#include "ui/ocr_backend.h"

#include <QFuture>
#include <QList>

namespace lector::ui {

class EngineBridge : public QObject {
    Q_OBJECT
public:
    using Ticket = quint64;
    using BackendFactory = std::function<Result<std::unique_ptr<OcrBackend>>(const engine::EngineConfig&)>;

    explicit EngineBridge(BackendFactory factory = &createEngineBackend, QObject* parent = nullptr);
    ~EngineBridge() override;

    // --- model ---
    // Loads config's model on a worker thread and swaps it in. The previous backend is retired on a
    // worker thread (its pending requests end "cancelled"). When load() is called again before an
    // earlier call finished, the earlier one resolves with error "superseded".
    QCoro::Task<Result<void>> load(engine::EngineConfig config);
    // Swaps in an already created backend (tests, or a caller that loaded it itself).
    void adopt(std::unique_ptr<OcrBackend> backend, const engine::EngineConfig& config);
    bool isLoaded() const { return m_backend != nullptr; }
    bool isLoading() const { return m_loading; }
    engine::EngineInfo info() const { return m_info; }
    engine::EngineConfig config() const { return m_config; }

    // --- requests ---
    // Errors: "no_model" (nothing loaded), and the engine's submit errors ("unsupported_preset" ...).
    Result<Ticket> submit(engine::Request request);
    // Submits and waits (suspending, not blocking) for the result. A rejected submit resolves at once
    // with an OcrResult whose error says why.
    QCoro::Task<doc::OcrResult> recognize(engine::Request request);
    void cancel(Ticket ticket);
    void cancelAll();
    int pendingCount() const { return static_cast<int>(m_pending.size()); }

Q_SIGNALS:
    void finished(lector::ui::EngineBridge::Ticket ticket, const lector::doc::OcrResult& result);
    void partialText(lector::ui::EngineBridge::Ticket ticket, int seq, const QString& textSoFar);
    void pendingCountChanged(int count);
    void loadingChanged(bool loading);
    void modelChanged();                       // info() changed (a model was loaded)
    void loadFailed(const QString& message);

private:
    struct Pending {
        std::shared_ptr<OcrBackend> backend;   // which backend holds the request
        engine::RequestId engineId = 0;
    };
    struct Waiter {
        std::coroutine_handle<> handle;
        doc::OcrResult* slot = nullptr;
    };
    struct ResultAwaiter;
    struct PartialState {
        int seq = -1;
        QString text;
        bool dirty = false;  // newer than what was last emitted
    };

    void deliverFinished(Ticket ticket, doc::OcrResult result);
    void deliverPartial(Ticket ticket, int seq, QString text);
    void flushPartials();
    void retire(std::shared_ptr<OcrBackend> backend);
    void setLoading(bool loading);

    BackendFactory m_factory;
    std::shared_ptr<OcrBackend> m_backend;
    engine::EngineInfo m_info;
    engine::EngineConfig m_config;
    bool m_loading = false;
    int m_loadSerial = 0;
    Ticket m_nextTicket = 0;
    QHash<Ticket, Pending> m_pending;
    QHash<Ticket, Waiter> m_waiters;
    QHash<Ticket, PartialState> m_partials;
    bool m_partialFlushQueued = false;
    QList<QFuture<void>> m_retiring;
};

}  // namespace lector::ui
