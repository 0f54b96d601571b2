// Device-level helpers of gpu/ for the model runner and the engine (engine thread): free / total device
// memory (to size the paged KV pool) and CudaGraph, one captured sequence of CUDA work (a whole decode
// step at one batch size) replayed with a single launch. Both need a CUDA build of libtorch; elsewhere
// cudaGraphsAvailable() is false, deviceMemory() returns zeros and capture() throws.
// StreamEvent marks a point in the current stream's work so the host can wait for that work alone (the
// engine reads a step's sampled tokens while the next step already runs). SideStream is a stream of its
// own for work that may run beside the current stream's (the vision tower beside decode steps); with
// MatmulSmTarget its matrix products leave multiprocessors to the other stream.
// CudaGraph wraps libtorch's at::cuda::CUDAGraph so the caching allocator gives the capture a private
// memory pool: tensors allocated inside the captured body keep fixed addresses for every replay.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace at {
class Tensor;
}

namespace lector::gpu {

bool cudaGraphsAvailable();

// What a measurement made on `device` depends on beyond our code: on CUDA the card's name, compute
// capability and SM count, and the driver's and runtime's versions; "cpu" elsewhere.
std::string deviceFingerprint(const c10::Device& device);

struct DeviceMemory {
    std::int64_t freeBytes = 0;
    std::int64_t totalBytes = 0;
};
// cudaMemGetInfo of the device (memory the caching allocator holds counts as used).
DeviceMemory deviceMemory(const c10::Device& device);

// GPU microseconds of one body() call: body captured `reps` times in a CudaGraph (so host launch cost is
// excluded), the graph replayed 5 times between synchronisations of the device's current stream. Runs
// body once first, outside the graph. CUDA builds of libtorch only (throws elsewhere, like capture()).
double graphMicros(const c10::Device& device, const std::function<void()>& body, int reps = 20);

class CudaGraph;

// GPU microseconds of one replay of an already captured graph: `replays` replays back to back between
// synchronisations of the device's current stream (host launch cost included, as the engine pays it).
double replayMicros(const c10::Device& device, CudaGraph& graph, int replays = 40);

// A marker in a device's current stream. On the CPU (or without a CUDA libtorch) work is synchronous:
// record(), synchronize() and block() do nothing, and elapsedMs() has nothing to measure.
class StreamEvent {
public:
    StreamEvent();
    // timing: the event also keeps the time its work ran, for elapsedMs() (a little dearer to record).
    explicit StreamEvent(bool timing);
    ~StreamEvent();
    StreamEvent(StreamEvent&&) noexcept;
    StreamEvent& operator=(StreamEvent&&) noexcept;

    // Marks the work queued so far on the current stream of `device`.
    void record(const c10::Device& device);
    // Blocks the host until the marked work has run (returns at once if nothing was recorded).
    void synchronize();
    // Whether the marked work has run (true if nothing was recorded), without waiting.
    bool ready() const;
    // Makes the current stream of `device` wait for the marked work before the work queued on it from now
    // on; the host does not wait (nothing to wait for if nothing was recorded).
    void block(const c10::Device& device) const;
    // Device milliseconds from `from`'s work to `to`'s, where both were recorded with timing and both have
    // run; otherwise nullopt (always on the CPU).
    static std::optional<double> elapsedMs(const StreamEvent& from, const StreamEvent& to);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// How the device's block scheduler ranks a stream's pending work: a High stream's blocks are placed before
// a Low stream's wherever a multiprocessor has room (running blocks are never preempted).
enum class StreamPriority { Low, High };

// A CUDA stream from libtorch's pool on `device`, for work that may run beside the device's current stream.
// It starts after the work queued on the current stream when it is made (what was loaded before is there).
// On the CPU (or without a CUDA libtorch) run() just calls body: synchronous.
class SideStream {
public:
    explicit SideStream(const c10::Device& device, StreamPriority priority = StreamPriority::Low);
    ~SideStream();
    SideStream(const SideStream&) = delete;
    SideStream& operator=(const SideStream&) = delete;

    // Calls body with this stream as its device's current stream (the caller's restored after, also when
    // body throws). A StreamEvent recorded inside marks this stream's work.
    void run(const std::function<void()>& body);
    // `t`, made by work on this stream, is read from now on by work on the device's current stream: the
    // caching allocator is told, so that once `t` is freed its memory goes to this stream's work only after
    // the current stream's work queued by then has run. Call it after this stream's work that makes `t`
    // has run (StreamEvent::ready) and before the current stream's work that reads it is queued.
    void handOver(const at::Tensor& t) const;
    // Blocks the host until the work queued on this stream so far has run.
    void synchronize() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// While one lives, the matrix products libtorch issues are planned for `sms` multiprocessors of `device`
// instead of all, so that a stream running beside them keeps the rest: a one-wave product whose blocks hold
// every multiprocessor until it ends would otherwise let the other stream's kernels in only between
// products. Its cuBLASLt products through libtorch's SM carve-out (from any thread), its cuBLAS ones through
// the SM target of the calling thread's cuBLAS handle. Does nothing where `sms` is 0 or not below the
// device's count, on the CPU, or where neither exists (active() says whether either was set).
class MatmulSmTarget {
public:
    MatmulSmTarget(const c10::Device& device, int sms);
    ~MatmulSmTarget();
    MatmulSmTarget(const MatmulSmTarget&) = delete;
    MatmulSmTarget& operator=(const MatmulSmTarget&) = delete;
    bool active() const { return m_active; }

private:
    bool m_active = false;
    std::optional<std::int32_t> m_previous;  // libtorch's carve-out before
    int m_previousBlas = -1;                  // the cuBLAS handle's SM target before (-1: not set)
    int m_device = 0;
};

class CudaGraph {
public:
    CudaGraph();
    ~CudaGraph();
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    // Captures the CUDA work body issues on the current stream of `device` (it runs on a side stream
    // during capture; the caller runs body once before, eagerly, so lazy initialisations are done).
    // sharePoolWith: an already captured graph whose memory pool this one reuses (graphs that never
    // run concurrently can share one pool; capture the largest first). When body throws, the capture
    // is abandoned (the stream leaves capture mode, nothing is captured) and the exception propagates.
    void capture(const c10::Device& device, const std::function<void()>& body, const CudaGraph* sharePoolWith = nullptr);
    // Launches the captured work on the current stream.
    void replay();
    bool captured() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace lector::gpu
