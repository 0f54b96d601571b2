// CudaGraph and deviceMemory() (see device.h). Everything CUDA-specific sits behind
// LECTOR_TORCH_HAS_CUDA (a CUDA build of libtorch); other builds get the documented fallbacks.
#include "gpu/device.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <string>

#ifdef LECTOR_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace lector::gpu {

#ifdef LECTOR_TORCH_HAS_CUDA

bool cudaGraphsAvailable() { return true; }

DeviceMemory deviceMemory(const c10::Device& device)
{
    if (!device.is_cuda()) return {};
    const c10::cuda::CUDAGuard guard(device);
    size_t freeBytes = 0, totalBytes = 0;
    TORCH_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess, "cudaMemGetInfo failed on ", device);
    return {static_cast<std::int64_t>(freeBytes), static_cast<std::int64_t>(totalBytes)};
}

std::string deviceFingerprint(const c10::Device& device)
{
    if (!device.is_cuda()) return "cpu";
    const int index = device.index() < 0 ? c10::cuda::current_device() : device.index();
    cudaDeviceProp prop{};
    int driver = 0, runtime = 0;
    TORCH_CHECK(cudaGetDeviceProperties(&prop, index) == cudaSuccess, "cudaGetDeviceProperties failed on ", device);
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    return std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
           std::to_string(prop.multiProcessorCount) + " SMs, " + std::to_string(prop.totalGlobalMem >> 20) +
           " MiB, driver " + std::to_string(driver) + ", runtime " + std::to_string(runtime);
}

struct StreamEvent::Impl {
    // Without timing: such events are cheaper to record and to wait for.
    at::cuda::CUDAEvent event{cudaEventDisableTiming};
    bool recorded = false;
};

void StreamEvent::record(const c10::Device& device)
{
    if (!device.is_cuda()) return;
    m_impl->event.record(c10::cuda::getCurrentCUDAStream(device.index()));
    m_impl->recorded = true;
}

void StreamEvent::synchronize()
{
    if (m_impl->recorded) m_impl->event.synchronize();
}

struct CudaGraph::Impl {
    at::cuda::CUDAGraph graph;
    bool captured = false;
};

CudaGraph::CudaGraph() : m_impl(std::make_unique<Impl>()) {}
CudaGraph::~CudaGraph() = default;

void CudaGraph::capture(const c10::Device& device, const std::function<void()>& body, const CudaGraph* sharePoolWith)
{
    TORCH_CHECK(device.is_cuda(), "CudaGraph::capture: ", device, " is not a CUDA device");
    const c10::cuda::CUDAGuard deviceGuard(device);
    // Capture needs a stream other than the legacy default one; the side stream starts after, and the
    // current stream resumes after, everything queued so far.
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device.index());
    const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
    at::cuda::CUDAEvent before;
    before.record(current);
    before.block(side);
    {
        const c10::cuda::CUDAStreamGuard streamGuard(side);
        at::cuda::MempoolId_t pool{0, 0};
        if (sharePoolWith && sharePoolWith->captured()) pool = sharePoolWith->m_impl->graph.pool();
        m_impl->graph.capture_begin(pool);
        try {
            body();
        } catch (...) {
            // A body that failed mid-capture (e.g. an operation that waits for the device, which capture
            // forbids) must still take the stream out of capture mode, or every later launch on it fails.
            // The partial graph is dropped; its end reports the invalidated capture, which is the error
            // being rethrown anyway.
            try {
                m_impl->graph.capture_end();
            } catch (...) {
            }
            throw;
        }
        m_impl->graph.capture_end();
    }
    at::cuda::CUDAEvent after;
    after.record(side);
    after.block(current);
    m_impl->captured = true;
}

void CudaGraph::replay()
{
    TORCH_CHECK(m_impl->captured, "CudaGraph::replay: nothing captured");
    m_impl->graph.replay();
}

bool CudaGraph::captured() const { return m_impl->captured; }

double replayMicros(const c10::Device& device, CudaGraph& graph, int replays)
{
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device.index());
    stream.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < replays; ++i) graph.replay();
    stream.synchronize();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / std::max(replays, 1);
}

double graphMicros(const c10::Device& device, const std::function<void()>& body, int reps)
{
    constexpr int kReplays = 5;
    body();
    CudaGraph graph;
    graph.capture(device, [&] {
        for (int i = 0; i < reps; ++i) body();
    });
    graph.replay();  // the first launch uploads the graph
    return replayMicros(device, graph, kReplays) / reps;
}

#else  // no CUDA libtorch

bool cudaGraphsAvailable() { return false; }
DeviceMemory deviceMemory(const c10::Device&) { return {}; }
std::string deviceFingerprint(const c10::Device& device) { return device.is_cuda() ? "cuda without a CUDA libtorch" : "cpu"; }

struct StreamEvent::Impl {};
void StreamEvent::record(const c10::Device&) {}
void StreamEvent::synchronize() {}

struct CudaGraph::Impl {};
CudaGraph::CudaGraph() : m_impl(std::make_unique<Impl>()) {}
CudaGraph::~CudaGraph() = default;
void CudaGraph::capture(const c10::Device& device, const std::function<void()>&, const CudaGraph*)
{
    TORCH_CHECK(false, "CudaGraph::capture on ", device, ": libtorch was built without CUDA");
}
void CudaGraph::replay() { TORCH_CHECK(false, "CudaGraph::replay: libtorch was built without CUDA"); }
bool CudaGraph::captured() const { return false; }
double graphMicros(const c10::Device& device, const std::function<void()>&, int)
{
    TORCH_CHECK(false, "graphMicros on ", device, ": libtorch was built without CUDA");
    return 0.0;
}
double replayMicros(const c10::Device& device, CudaGraph&, int)
{
    TORCH_CHECK(false, "replayMicros on ", device, ": libtorch was built without CUDA");
    return 0.0;
}

#endif

StreamEvent::StreamEvent() : m_impl(std::make_unique<Impl>()) {}
StreamEvent::~StreamEvent() = default;
StreamEvent::StreamEvent(StreamEvent&&) noexcept = default;
StreamEvent& StreamEvent::operator=(StreamEvent&&) noexcept = default;

}  // namespace lector::gpu
