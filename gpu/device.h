// Device-level helpers of gpu/ for the model runner and the engine (engine thread): free / total device
// memory (to size the paged KV pool), a side stream and events (vision overlapping the decoder), and
// CudaGraph, one captured sequence of CUDA work (a whole decode step at one batch size) replayed with a
// single launch. Both need a CUDA build of libtorch; elsewhere
// cudaGraphsAvailable() is false, deviceMemory() returns zeros and capture() throws.
// CudaGraph wraps libtorch's at::cuda::CUDAGraph so the caching allocator gives the capture a private
// memory pool: tensors allocated inside the captured body keep fixed addresses for every replay.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace lector::gpu {

bool cudaGraphsAvailable();

struct DeviceMemory {
    std::int64_t freeBytes = 0;
    std::int64_t totalBytes = 0;
};
// cudaMemGetInfo of the device (memory the caching allocator holds counts as used).
DeviceMemory deviceMemory(const c10::Device& device);

// While a SideStream exists, work issued on the calling thread for its device goes to a pooled side
// stream instead of the current one (the engine runs the vision tower there, overlapping the decoder's
// steps). The side stream first waits for everything already queued on the stream it replaces.
class SideStream {
public:
    explicit SideStream(const c10::Device& device);
    ~SideStream();
    SideStream(const SideStream&) = delete;
    SideStream& operator=(const SideStream&) = delete;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// A CUDA event: record() marks the work issued so far on the device's current stream; done() asks
// without blocking whether it completed; wait() blocks the host until it has.
class CudaEvent {
public:
    CudaEvent();
    ~CudaEvent();
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;
    void record(const c10::Device& device);
    bool done() const;
    void wait() const;

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
    // run concurrently can share one pool; capture the largest first).
    void capture(const c10::Device& device, const std::function<void()>& body, const CudaGraph* sharePoolWith = nullptr);
    // Launches the captured work on the current stream.
    void replay();
    bool captured() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace lector::gpu
