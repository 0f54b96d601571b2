// Worker: one background thread that runs tasks in submission order. The HunyuanOCR backend prepares
// pixels on it while the engine thread steps: one thread, not one per request, so a burst of requests
// does not oversubscribe the cores the engine thread needs, and the thread's allocator stays warm.
// submit() from any thread; the destructor runs the queued tasks, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

namespace lector {

class Worker {
public:
    Worker() : m_thread([this] { run(); }) {}
    ~Worker()
    {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_wake.notify_one();
        m_thread.join();
    }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Queues fn; its result (or exception) arrives through the future.
    template <class Fn>
    std::future<std::invoke_result_t<Fn>> submit(Fn fn)
    {
        auto task = std::make_shared<std::packaged_task<std::invoke_result_t<Fn>()>>(std::move(fn));
        auto result = task->get_future();
        {
            std::lock_guard lock(m_mutex);
            m_tasks.emplace_back([task] { (*task)(); });
        }
        m_wake.notify_one();
        return result;
    }

private:
    void run()
    {
        while (true) {
            std::function<void()> task;
            {
                std::unique_lock lock(m_mutex);
                m_wake.wait(lock, [this] { return m_stop || !m_tasks.empty(); });
                if (m_tasks.empty()) return;  // stopping, nothing left
                task = std::move(m_tasks.front());
                m_tasks.pop_front();
            }
            task();
        }
    }

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::function<void()>> m_tasks;
    bool m_stop = false;
    std::thread m_thread;  // last: starts after the members it uses exist
};

}  // namespace lector
