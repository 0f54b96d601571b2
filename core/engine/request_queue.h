// RequestQueue: the one channel into the engine thread. Any thread pushes commands (submit, cancel,
// shutdown); the engine thread drains them between steps, blocking only when it has no work.
// The mutex guards the deque only: no callback, model or tensor work happens under it.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <variant>

#include "core/engine/request_state.h"

namespace lector::engine {

struct SubmitCommand {
    RequestPtr request;
};
struct CancelCommand {
    RequestId id;
};
struct ShutdownCommand {};
using EngineCommand = std::variant<SubmitCommand, CancelCommand, ShutdownCommand>;

class RequestQueue {
public:
    void push(EngineCommand command);
    // Takes every queued command; when `wait` and none is queued, blocks until one arrives.
    std::deque<EngineCommand> drain(bool wait);
    std::size_t size() const;

private:
    mutable std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<EngineCommand> m_commands;
};

}  // namespace lector::engine
