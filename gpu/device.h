// Device-level helpers of gpu/ for the model runner and the engine (engine thread): free / total device
// memory (to size the paged KV pool) and CudaGraph, one captured sequence of CUDA work (a whole decode
// step at one batch size) replayed with a single launch. Both need a CUDA build of libtorch; elsewhere
// cudaGraphsAvailable() is false, deviceMemory() returns zeros and capture() throws.
// StreamEvent marks a point in the current stream's work so the host can wait for that work alone (the
// engine reads a step's sampled tokens while the next step already runs).
// CudaGraph wraps libtorch's at::cuda::CUDAGraph so the caching allocator gives the capture a private
// memory pool: tensors allocated inside the captured body keep fixed addresses for every replay.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

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
// record() and synchronize() do nothing.
class StreamEvent {
public:
    StreamEvent();
    ~StreamEvent();
    StreamEvent(StreamEvent&&) noexcept;
    StreamEvent& operator=(StreamEvent&&) noexcept;

    // Marks the work queued so far on the current stream of `device`.
    void record(const c10::Device& device);
    // Blocks the host until the marked work has run (returns at once if nothing was recorded).
    void synchronize();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
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
