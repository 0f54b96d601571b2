#include "ui/engine_bridge.h"

#include <QCoroFuture>
#include <QMetaObject>
#include <QPointer>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

namespace lector::ui {

// Suspends a coroutine until the ticket's result is delivered on the GUI thread.
struct EngineBridge::ResultAwaiter {
    EngineBridge* bridge;
    Ticket ticket;
    doc::OcrResult result;

    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> handle) { bridge->m_waiters.insert(ticket, Waiter{handle, &result}); }
    doc::OcrResult await_resume() { return std::move(result); }
};

EngineBridge::EngineBridge(BackendFactory factory, QObject* parent) : QObject(parent), m_factory(std::move(factory)) {}

EngineBridge::~EngineBridge()
{
    // Join every engine thread while `this` is alive: callbacks still post to it until then. Posted
    // calls not yet delivered are discarded with the object.
    if (m_backend) m_backend->shutdown();
    for (auto& f : m_retiring) f.waitForFinished();
    m_backend.reset();
}

QCoro::Task<Result<void>> EngineBridge::load(engine::EngineConfig config)
{
    const int serial = ++m_loadSerial;
    setLoading(true);
    QPointer<EngineBridge> self(this);
    auto factory = m_factory;
    using Created = Result<std::unique_ptr<OcrBackend>>;
    QFuture<std::shared_ptr<Created>> future = QtConcurrent::run([factory, config]() {
        return std::make_shared<Created>(factory(config));
    });
    std::shared_ptr<Created> created = co_await future;
    if (!self) co_return makeError("shut_down", "the application is closing");
    if (serial != m_loadSerial) {
        // A newer load() started meanwhile: it wins.
        if (created->ok()) retire(std::shared_ptr<OcrBackend>(std::move(created->value())));
        co_return makeError("superseded", "another model load was started");
    }
    setLoading(false);
    if (!created->ok()) {
        const Error err = created->error();
        Q_EMIT loadFailed(QString::fromStdString(err.message));
        co_return err;
    }
    adopt(std::move(created->value()), config);
    co_return Result<void>();
}

void EngineBridge::adopt(std::unique_ptr<OcrBackend> backend, const engine::EngineConfig& config)
{
    if (m_backend) retire(std::move(m_backend));
    m_backend = std::shared_ptr<OcrBackend>(std::move(backend));
    m_config = config;
    m_info = m_backend ? m_backend->info() : engine::EngineInfo{};
    Q_EMIT modelChanged();
}

void EngineBridge::retire(std::shared_ptr<OcrBackend> backend)
{
    if (!backend) return;
    // shutdown() joins the engine thread after its current step: seconds on a CPU, so off the GUI thread.
    m_retiring.append(QtConcurrent::run([backend]() { backend->shutdown(); }));
    // Forget finished retirements so the list stays short over many switches.
    m_retiring.erase(std::remove_if(m_retiring.begin(), m_retiring.end(),
                                    [](const QFuture<void>& f) { return f.isFinished(); }),
                     m_retiring.end());
}

void EngineBridge::setLoading(bool loading)
{
    if (m_loading == loading) return;
    m_loading = loading;
    Q_EMIT loadingChanged(loading);
}

Result<EngineBridge::Ticket> EngineBridge::submit(engine::Request request)
{
    if (!m_backend) return makeError("no_model", "no model is loaded");
    const Ticket ticket = ++m_nextTicket;
    engine::Callbacks callbacks;
    // Engine thread: copy and post only (engine.h contract).
    callbacks.onFinished = [this, ticket](engine::RequestId, doc::OcrResult result) {
        QMetaObject::invokeMethod(
            this, [this, ticket, r = std::move(result)]() mutable { deliverFinished(ticket, std::move(r)); },
            Qt::QueuedConnection);
    };
    if (request.stream) {
        callbacks.onPartial = [this, ticket](engine::RequestId, const engine::PartialText& p) {
            QMetaObject::invokeMethod(
                this,
                [this, ticket, seq = p.seq, text = QString::fromStdString(p.textSoFar)]() mutable {
                    deliverPartial(ticket, seq, std::move(text));
                },
                Qt::QueuedConnection);
        };
    }
    auto submitted = m_backend->submit(std::move(request), std::move(callbacks));
    if (!submitted) return submitted.error();
    m_pending.insert(ticket, Pending{m_backend, submitted.value()});
    Q_EMIT pendingCountChanged(pendingCount());
    return ticket;
}

QCoro::Task<doc::OcrResult> EngineBridge::recognize(engine::Request request)
{
    const std::string name = request.imageName;
    auto ticket = submit(std::move(request));
    if (!ticket) co_return doc::makeErrorResult(name, ticket.error());
    // A named awaiter: GCC 12 mishandles the lifetime of temporaries awaited inside co_return.
    ResultAwaiter awaiter{this, ticket.value(), {}};
    doc::OcrResult result = co_await awaiter;
    co_return result;
}

void EngineBridge::cancel(Ticket ticket)
{
    auto it = m_pending.find(ticket);
    if (it != m_pending.end()) it->backend->cancel(it->engineId);
}

void EngineBridge::cancelAll()
{
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it) it->backend->cancel(it->engineId);
}

void EngineBridge::deliverFinished(Ticket ticket, doc::OcrResult result)
{
    if (m_pending.remove(ticket) == 0) return;  // delivered twice would break the contract; ignore
    m_partials.remove(ticket);
    Q_EMIT pendingCountChanged(pendingCount());
    Q_EMIT finished(ticket, result);
    auto waiter = m_waiters.find(ticket);
    if (waiter != m_waiters.end()) {
        const Waiter w = *waiter;
        m_waiters.erase(waiter);
        *w.slot = std::move(result);
        w.handle.resume();
    }
}

void EngineBridge::deliverPartial(Ticket ticket, int seq, QString text)
{
    if (!m_pending.contains(ticket)) return;  // finished already: stale
    PartialState& state = m_partials[ticket];
    if (seq <= state.seq) return;
    state.seq = seq;
    state.text = std::move(text);
    state.dirty = true;
    if (!m_partialFlushQueued) {
        m_partialFlushQueued = true;
        QTimer::singleShot(0, this, &EngineBridge::flushPartials);
    }
}

void EngineBridge::flushPartials()
{
    m_partialFlushQueued = false;
    QList<std::pair<Ticket, PartialState>> due;
    for (auto it = m_partials.begin(); it != m_partials.end(); ++it) {
        if (!it->dirty) continue;
        it->dirty = false;
        due.append({it.key(), *it});
    }
    for (const auto& [ticket, state] : due) {  // emitting may re-enter, so from a copy
        if (m_pending.contains(ticket)) Q_EMIT partialText(ticket, state.seq, state.text);
    }
}

}  // namespace lector::ui
