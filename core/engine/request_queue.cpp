#include "core/engine/request_queue.h"

namespace lector::engine {

void RequestQueue::push(EngineCommand command)
{
    {
        std::lock_guard lock(m_mutex);
        m_commands.push_back(std::move(command));
    }
    m_cv.notify_one();
}

std::deque<EngineCommand> RequestQueue::drain(bool wait)
{
    std::unique_lock lock(m_mutex);
    if (wait) m_cv.wait(lock, [this] { return !m_commands.empty(); });
    std::deque<EngineCommand> out;
    out.swap(m_commands);
    return out;
}

std::size_t RequestQueue::size() const
{
    std::lock_guard lock(m_mutex);
    return m_commands.size();
}

}  // namespace lector::engine
