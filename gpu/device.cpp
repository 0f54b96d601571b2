// CudaGraph, SideStream and deviceMemory() (see device.h). Everything CUDA-specific sits behind
// LECTOR_TORCH_HAS_CUDA (a CUDA build of libtorch); other builds get the documented fallbacks.
#include "gpu/device.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <optional>
#include <string>

#ifdef LECTOR_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>  // green contexts' types; the functions come from the driver's entry points (no -lcuda)
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

double graphMicros(const c10::Device& device, const std::function<void()>& body, int reps)
{
    constexpr int kReplays = 5;
    body();
    CudaGraph graph;
    graph.capture(device, [&] {
        for (int i = 0; i < reps; ++i) body();
    });
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device.index());
    graph.replay();
    stream.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kReplays; ++i) graph.replay();
    stream.synchronize();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / (kReplays * reps);
}


// --- SideStream ---

namespace {

// A driver function by name, for the ABI of the headers we compiled against; null where the driver (or
// the runtime, before CUDA 12.5) does not offer it.
template <class Fn>
Fn driverFunction(const char* name)
{
#if CUDART_VERSION >= 12050
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion(name, &fn, CUDART_VERSION, cudaEnableDefault, &status) != cudaSuccess ||
        status != cudaDriverEntryPointSuccess)
        return nullptr;
    return reinterpret_cast<Fn>(fn);
#else
    (void)name;
    return nullptr;
#endif
}

struct GreenContext {
    CUgreenCtx context = nullptr;
    CUstream stream = nullptr;
    int smCount = 0;
    std::string failure;  // why there is none
};

// A green context of about `smCount` SMs of `device` (the driver rounds up to its partition granularity)
// and a non-blocking stream in it.
GreenContext makeGreenContext(int device, int smCount)
{
    GreenContext g;
#if CUDART_VERSION >= 12050
    using GetResource = CUresult (*)(CUdevice, CUdevResource*, CUdevResourceType);
    using Split = CUresult (*)(CUdevResource*, unsigned*, const CUdevResource*, CUdevResource*, unsigned, unsigned);
    using Describe = CUresult (*)(CUdevResourceDesc*, CUdevResource*, unsigned);
    using Create = CUresult (*)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned);
    using CreateStream = CUresult (*)(CUstream*, CUgreenCtx, unsigned, int);
    const auto getResource = driverFunction<GetResource>("cuDeviceGetDevResource");
    const auto split = driverFunction<Split>("cuDevSmResourceSplitByCount");
    const auto describe = driverFunction<Describe>("cuDevResourceGenerateDesc");
    const auto create = driverFunction<Create>("cuGreenCtxCreate");
    const auto createStream = driverFunction<CreateStream>("cuGreenCtxStreamCreate");
    if (!getResource || !split || !describe || !create || !createStream) {
        g.failure = "the driver has no green contexts";
        return g;
    }
    CUdevResource whole{}, group{}, rest{};
    unsigned groups = 1;
    CUdevResourceDesc desc{};
    CUresult rc = getResource(static_cast<CUdevice>(device), &whole, CU_DEV_RESOURCE_TYPE_SM);
    if (rc == CUDA_SUCCESS) rc = split(&group, &groups, &whole, &rest, 0, static_cast<unsigned>(smCount));
    if (rc == CUDA_SUCCESS && groups != 1) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) rc = describe(&desc, &group, 1);
    if (rc == CUDA_SUCCESS) rc = create(&g.context, desc, static_cast<CUdevice>(device), CU_GREEN_CTX_DEFAULT_STREAM);
    if (rc == CUDA_SUCCESS) rc = createStream(&g.stream, g.context, CU_STREAM_NON_BLOCKING, 0);
    if (rc != CUDA_SUCCESS) {
        g.failure = "a green context of " + std::to_string(smCount) + " SMs failed (CUresult " + std::to_string(rc) + ")";
        g.stream = nullptr;
        return g;  // a context made before the failure stays with the process: there is no stream to use it
    }
    g.smCount = static_cast<int>(group.sm.smCount);
#else
    (void)device;
    (void)smCount;
    g.failure = "built against a CUDA runtime older than 12.5";
#endif
    return g;
}

}  // namespace

struct SideStream::Impl {
    c10::Device device{c10::kCPU};
    int deviceSms = 0;
    int smCount = 0;
    std::string description;
    std::optional<c10::cuda::CUDAStream> stream;
    at::cuda::CUDAEvent end{cudaEventDisableTiming};
    bool launched = false;
};

SideStream::SideStream(const c10::Device& device, int smCount) : m_impl(std::make_unique<Impl>())
{
    if (!device.is_cuda()) {
        m_impl->description = "cpu";
        return;
    }
    const int index = device.index() < 0 ? c10::cuda::current_device() : device.index();
    m_impl->device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
    const c10::cuda::CUDAGuard guard(m_impl->device);
    int sms = 0;
    TORCH_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, index) == cudaSuccess,
                "SideStream: cannot read the SM count of ", device);
    m_impl->deviceSms = m_impl->smCount = sms;
    std::string why = "asked for the whole device";
    if (smCount > 0 && smCount < sms) {
        const GreenContext g = makeGreenContext(index, smCount);
        if (g.stream && g.smCount > 0 && g.smCount < sms) {
            m_impl->stream = c10::cuda::getStreamFromExternal(reinterpret_cast<cudaStream_t>(g.stream),
                                                              static_cast<c10::DeviceIndex>(index));
            m_impl->smCount = g.smCount;
            m_impl->description = "green context of " + std::to_string(g.smCount) + " of " + std::to_string(sms) + " SMs";
            return;
        }
        why = g.failure.empty() ? "the driver gave the whole device" : g.failure;
    }
    m_impl->stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, static_cast<c10::DeviceIndex>(index));
    m_impl->description = "ordinary stream of all " + std::to_string(sms) + " SMs (" + why + ")";
}

SideStream::~SideStream()
{
    try {
        synchronize();
    } catch (...) {
    }
}

int SideStream::smCount() const { return m_impl->smCount; }
int SideStream::deviceSmCount() const { return m_impl->deviceSms; }
std::string SideStream::describe() const { return m_impl->description; }

void SideStream::launch(const std::function<void()>& body)
{
    if (!m_impl->stream) {
        body();
        return;
    }
    const c10::cuda::CUDAGuard guard(m_impl->device);
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(m_impl->stream->device_index());
    at::cuda::CUDAEvent before(cudaEventDisableTiming);
    before.record(current);
    before.block(*m_impl->stream);
    {
        const c10::cuda::CUDAStreamGuard streamGuard(*m_impl->stream);
        body();
    }
    m_impl->end.record(*m_impl->stream);
    m_impl->launched = true;
}

bool SideStream::done() const { return !m_impl->launched || m_impl->end.query(); }

void SideStream::synchronize()
{
    if (m_impl->launched) m_impl->end.synchronize();
}

void SideStream::join(const std::vector<at::Tensor>& madeHere)
{
    if (!m_impl->stream || !m_impl->launched) return;
    const c10::cuda::CUDAGuard guard(m_impl->device);
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(m_impl->stream->device_index());
    m_impl->end.block(current);
    for (const at::Tensor& t : madeHere)
        if (t.defined() && t.is_cuda()) c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), current);
}

#else  // no CUDA libtorch

bool cudaGraphsAvailable() { return false; }
DeviceMemory deviceMemory(const c10::Device&) { return {}; }

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

struct SideStream::Impl {};
SideStream::SideStream(const c10::Device&, int) : m_impl(std::make_unique<Impl>()) {}
SideStream::~SideStream() = default;
int SideStream::smCount() const { return 0; }
int SideStream::deviceSmCount() const { return 0; }
std::string SideStream::describe() const { return "cpu"; }
void SideStream::launch(const std::function<void()>& body) { body(); }
bool SideStream::done() const { return true; }
void SideStream::synchronize() {}
void SideStream::join(const std::vector<at::Tensor>&) {}
double graphMicros(const c10::Device& device, const std::function<void()>&, int)
{
    TORCH_CHECK(false, "graphMicros on ", device, ": libtorch was built without CUDA");
    return 0.0;
}

#endif

StreamEvent::StreamEvent() : m_impl(std::make_unique<Impl>()) {}
StreamEvent::~StreamEvent() = default;
StreamEvent::StreamEvent(StreamEvent&&) noexcept = default;
StreamEvent& StreamEvent::operator=(StreamEvent&&) noexcept = default;

}  // namespace lector::gpu
