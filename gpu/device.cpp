// CudaGraph, the streams, MatmulSmTarget and deviceMemory() (see device.h). Everything CUDA-specific sits behind
// LECTOR_TORCH_HAS_CUDA (a CUDA build of libtorch); other builds get the documented fallbacks.
#include "gpu/device.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#ifdef LECTOR_TORCH_HAS_CUDA
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#endif

namespace lector::gpu {

#ifdef LECTOR_TORCH_HAS_CUDA

namespace {

// libtorch's SM carve-out for its cuBLASLt products (libtorch 2.6 and later; earlier ones have none: false).
// previous: where to keep the value it replaces (null: not wanted).
template <class Context>
bool setCarveout(Context& context, std::optional<std::int32_t> value, std::optional<std::int32_t>* previous)
{
    if constexpr (requires { context._SMCarveout_EXPERIMENTAL(); context._setSMCarveout_EXPERIMENTAL(value); }) {
        if (previous) *previous = context._SMCarveout_EXPERIMENTAL();
        context._setSMCarveout_EXPERIMENTAL(value);
        return true;
    } else {
        return false;
    }
}

// The device's index (the current device's where `device` names none).
int indexOf(const c10::Device& device) { return device.index() < 0 ? c10::cuda::current_device() : device.index(); }

// cuBLAS's SM-target functions, looked up once in the cuBLAS libtorch loaded (linking our own could load a
// second copy); null where that cuBLAS has none.
struct BlasSmCount {
    cublasStatus_t (*get)(cublasHandle_t, int*) = nullptr;
    cublasStatus_t (*set)(cublasHandle_t, int) = nullptr;
};
const BlasSmCount& blasSmCount()
{
    static const BlasSmCount functions = [] {
        BlasSmCount f;
        f.get = reinterpret_cast<decltype(f.get)>(dlsym(RTLD_DEFAULT, "cublasGetSmCountTarget"));
        f.set = reinterpret_cast<decltype(f.set)>(dlsym(RTLD_DEFAULT, "cublasSetSmCountTarget"));
        return f.get && f.set ? f : BlasSmCount{};
    }();
    return functions;
}

}  // namespace

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
    const int index = indexOf(device);
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
    // Without timing unless asked: such events are cheaper to record and to wait for.
    explicit Impl(bool timing) : event(timing ? cudaEventDefault : cudaEventDisableTiming), timing(timing) {}
    at::cuda::CUDAEvent event;
    bool timing = false;
    bool recorded = false;
};

StreamEvent::StreamEvent() : m_impl(std::make_unique<Impl>(false)) {}
StreamEvent::StreamEvent(bool timing) : m_impl(std::make_unique<Impl>(timing)) {}

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

bool StreamEvent::ready() const { return !m_impl->recorded || m_impl->event.query(); }

void StreamEvent::block(const c10::Device& device) const
{
    if (!m_impl->recorded || !device.is_cuda()) return;
    m_impl->event.block(c10::cuda::getCurrentCUDAStream(device.index()));
}

std::optional<double> StreamEvent::elapsedMs(const StreamEvent& from, const StreamEvent& to)
{
    const Impl& a = *from.m_impl;
    const Impl& b = *to.m_impl;
    if (!a.timing || !b.timing || !a.recorded || !b.recorded || !from.ready() || !to.ready()) return std::nullopt;
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, a.event.event(), b.event.event()) != cudaSuccess) {
        (void)cudaGetLastError();  // not sticky: leave no error for the next call to find
        return std::nullopt;
    }
    return static_cast<double>(ms);
}

struct SideStream::Impl {
    std::optional<c10::cuda::CUDAStream> stream;  // none on the CPU
};

SideStream::SideStream(const c10::Device& device, StreamPriority priority) : m_impl(std::make_unique<Impl>())
{
    if (!device.is_cuda()) return;
    m_impl->stream = c10::cuda::getStreamFromPool(priority == StreamPriority::High, device.index());
    // Pool streams do not wait for the legacy default stream: order this one after what is queued there.
    at::cuda::CUDAEvent made(cudaEventDisableTiming);
    made.record(c10::cuda::getCurrentCUDAStream(device.index()));
    made.block(*m_impl->stream);
}

void SideStream::synchronize() const
{
    if (m_impl->stream) m_impl->stream->synchronize();
}

void SideStream::run(const std::function<void()>& body)
{
    if (!m_impl->stream) return body();
    const c10::cuda::CUDAStreamGuard guard(*m_impl->stream);
    body();
}

void SideStream::handOver(const at::Tensor& t) const
{
    if (!m_impl->stream || !t.defined() || !t.is_cuda()) return;
    c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(),
                                                  c10::cuda::getCurrentCUDAStream(t.device().index()));
}

MatmulSmTarget::MatmulSmTarget(const c10::Device& device, int sms)
{
    if (!device.is_cuda() || sms <= 0) return;
    int count = 0;
    const int index = indexOf(device);
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, index) != cudaSuccess || sms >= count) return;
    m_active = setCarveout(at::globalContext(), count - sms, &m_previous);
    // The products libtorch sends to cuBLAS itself rather than cuBLASLt read the SM target of this thread's handle.
    const BlasSmCount& blas = blasSmCount();
    if (!blas.set) return;
    const c10::cuda::CUDAGuard guard(device);
    const cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    int previous = 0;
    if (blas.get(handle, &previous) == CUBLAS_STATUS_SUCCESS && blas.set(handle, sms) == CUBLAS_STATUS_SUCCESS) {
        m_previousBlas = previous;
        m_device = index;
        m_active = true;
    }
}

MatmulSmTarget::~MatmulSmTarget()
{
    if (!m_active) return;
    setCarveout(at::globalContext(), m_previous, nullptr);
    if (m_previousBlas < 0) return;
    const c10::cuda::CUDAGuard guard(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(m_device)));
    blasSmCount().set(at::cuda::getCurrentCUDABlasHandle(), m_previousBlas);
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
StreamEvent::StreamEvent() : m_impl(std::make_unique<Impl>()) {}
StreamEvent::StreamEvent(bool) : m_impl(std::make_unique<Impl>()) {}
void StreamEvent::record(const c10::Device&) {}
void StreamEvent::synchronize() {}
bool StreamEvent::ready() const { return true; }
void StreamEvent::block(const c10::Device&) const {}
std::optional<double> StreamEvent::elapsedMs(const StreamEvent&, const StreamEvent&) { return std::nullopt; }

struct SideStream::Impl {};
SideStream::SideStream(const c10::Device&, StreamPriority) : m_impl(std::make_unique<Impl>()) {}
void SideStream::run(const std::function<void()>& body) { body(); }
void SideStream::handOver(const at::Tensor&) const {}
void SideStream::synchronize() const {}

MatmulSmTarget::MatmulSmTarget(const c10::Device&, int) {}
MatmulSmTarget::~MatmulSmTarget() = default;

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

SideStream::~SideStream() = default;

StreamEvent::~StreamEvent() = default;
StreamEvent::StreamEvent(StreamEvent&&) noexcept = default;
StreamEvent& StreamEvent::operator=(StreamEvent&&) noexcept = default;

}  // namespace lector::gpu
