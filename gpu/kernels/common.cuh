// Device-side helpers shared by the .cu files of gpu/kernels: LECTOR_CUDA_TRY, the dtype / head-dim /
// group-size dispatchers (C++20 templated lambdas, one constexpr list each: only what we ship is
// instantiated), element conversions, 16-byte vector access, cp.async, tensor-core fragments (mma.sync, ldmatrix,
// packing) and warp reductions. Include only from .cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "gpu/kernels/types.h"

// Returns the error of a failing CUDA call from the enclosing launcher.
#define LECTOR_CUDA_TRY(expr)                         \
    do {                                              \
        const cudaError_t lectorCudaErr_ = (expr);    \
        if (lectorCudaErr_ != cudaSuccess) return lectorCudaErr_; \
    } while (0)

namespace lector::gpu {

// --- launch: programmatic dependent launch (PDL) ---
//
// A decode step is ~150 dependent kernels of a few microseconds each, so the gap between one kernel's
// end and the next one's start is a large share of the step. With PDL (sm_90+) a kernel is launched
// while its predecessor on the stream is still running: its CTAs become resident, run up to
// gridDependencyWait() — which returns once the predecessor has completed and its writes are visible —
// and the skinny GEMM uses that time to start loading its weights. Rules for every kernel launched
// through launchKernel(): call gridDependencyWait() before reading anything an earlier kernel writes
// and before writing anything (an earlier kernel may still read it); only immutable data (weights) and
// the step's inputs (host-to-device copies, which precede the step's kernels) may be read before it.
// allowDependentLaunch() lets the next kernel launch once every CTA of this one has called it or
// exited. We call it right after the wait, so at most one kernel waits ahead. Calling it first thing
// instead (a chain of kernels loading weights ahead) was no faster: decode step at batch 1 0.692 ms
// queued against 0.688-0.693 without it, and at 8-256 sequences no better than the +-5 % the runs vary
// by (H200, runs 17-20, docs/perf.md). Both are no-ops below sm_90 or when the kernel was launched
// without the attribute. LECTOR_PDL=0 turns PDL off.

__device__ __forceinline__ void gridDependencyWait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allowDependentLaunch()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// An attribute of the current device, 0 where it cannot be read.
inline int currentDeviceAttribute(cudaDeviceAttr attr)
{
    int device = 0, value = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) return 0;
    return value;
}

// Multiprocessors of the device current at first use (132, an H100/H200's, where it cannot be read): what
// the skinny GEMMs size their grids by.
inline int skinnySmCount()
{
    static const int sms = [] {
        const int count = currentDeviceAttribute(cudaDevAttrMultiProcessorCount);
        return count > 0 ? count : 132;
    }();
    return sms;
}

// Whether launches use PDL: the current device at first use is sm_90 or newer and LECTOR_PDL is not "0".
inline bool programmaticLaunchEnabled()
{
    static const bool enabled = [] {
        const char* env = std::getenv("LECTOR_PDL");
        if (env && env[0] == '0') return false;
        return currentDeviceAttribute(cudaDevAttrComputeCapabilityMajor) >= 9;
    }();
    return enabled;
}

// The launch attribute that makes CTAs run in thread-block clusters of shape `cluster` (sm_90).
inline cudaLaunchAttribute clusterDimAttribute(dim3 cluster)
{
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster.x;
    attribute.val.clusterDim.y = cluster.y;
    attribute.val.clusterDim.z = cluster.z;
    return attribute;
}

// kernel<<<grid, block, smem, stream>>>(args...), with PDL where `pdl` and enabled, in thread-block
// clusters of shape `cluster` (sm_90; each grid dimension a multiple of the cluster's) where cluster.x > 0.
// Clusters of more than 8 CTAs need the kernel's cudaFuncAttributeNonPortableClusterSizeAllowed first. A
// kernel that must start after all the work before it (reads the step's inputs before its wait, say)
// passes pdl = false.
// `extra` (or nullptr): one more launch attribute, e.g. an L2 access policy window.
template <class... Params, class... Args>
cudaError_t launchKernelWithAttribute(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                      dim3 cluster, bool pdl, const cudaLaunchAttribute* extra, Args&&... args)
{
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    cudaLaunchAttribute attribute[3];
    unsigned n = 0;
    if (extra) attribute[n++] = *extra;
    if (cluster.x > 0) attribute[n++] = clusterDimAttribute(cluster);
    if (pdl && programmaticLaunchEnabled()) {
        attribute[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute[n].val.programmaticStreamSerializationAllowed = 1;
        ++n;
    }
    config.attrs = n > 0 ? attribute : nullptr;
    config.numAttrs = n;
    LECTOR_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
    return cudaGetLastError();
}

template <class... Params, class... Args>
cudaError_t launchKernelWithPdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                dim3 cluster, bool pdl, Args&&... args)
{
    return launchKernelWithAttribute(kernel, grid, block, smem, stream, cluster, pdl, nullptr, std::forward<Args>(args)...);
}

// launchKernelWithPdl with PDL where enabled.
template <class... Params, class... Args>
cudaError_t launchKernelInClusters(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                   dim3 cluster, Args&&... args)
{
    return launchKernelWithPdl(kernel, grid, block, smem, stream, cluster, true, std::forward<Args>(args)...);
}

// kernel<<<grid, block, smem, stream>>>(args...), with PDL where enabled.
template <class... Params, class... Args>
cudaError_t launchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                         Args&&... args)
{
    return launchKernelInClusters(kernel, grid, block, smem, stream, dim3(0, 0, 0), std::forward<Args>(args)...);
}

// --- dispatch ---

// Calls f.template operator()<T>() with the CUDA element type of `t`.
template <class F>
cudaError_t dispatchDType(DType t, F&& f)
{
    switch (t) {
    case DType::F32: return f.template operator()<float>();
    case DType::F16: return f.template operator()<__half>();
    case DType::BF16: return f.template operator()<__nv_bfloat16>();
    }
    return cudaErrorInvalidValue;
}

// Attention and RoPE head dims we ship: the HunyuanOCR decoder's. (The ViT's 72 goes through
// libtorch's SDPA; add it here only with a kernel that uses it.)
template <class F>
cudaError_t dispatchHeadDim(int headDim, F&& f)
{
    if (headDim == 128) return f.template operator()<128>();
    return cudaErrorInvalidValue;
}

// Query heads per KV head (GQA group size).
template <class F>
cudaError_t dispatchGroupSize(int groupSize, F&& f)
{
    switch (groupSize) {
    case 1: return f.template operator()<1>();
    case 2: return f.template operator()<2>();
    case 4: return f.template operator()<4>();
    case 8: return f.template operator()<8>();
    }
    return cudaErrorInvalidValue;
}

// --- elements ---

__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__half x) { return __half2float(x); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T fromFloat(float x);
template <>
__device__ __forceinline__ float fromFloat<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half fromFloat<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// x rounded to T and widened back: where the chain stores a T and the next op reads it.
template <class T>
__device__ __forceinline__ float roundTo(float x) { return toFloat(fromFloat<T>(x)); }

// Elements of T in one 16-byte vector.
template <class T>
constexpr int kVecElems = 16 / sizeof(T);

// 16 bytes of T, unpacked to float32.
template <class T>
struct Vec16 {
    float v[kVecElems<T>];
};

// The operand is taken by value: by reference, an operand that lives in shared or global memory was read
// as eight 2-byte loads (the PTX of the skinny GEMMs showed thousands), by value it is one 16-byte load.
template <class T>
__device__ __forceinline__ Vec16<T> unpack16(const uint4 raw)
{
    Vec16<T> out;
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < kVecElems<T>; ++i) out.v[i] = toFloat(e[i]);
    return out;
}

template <class T>
__device__ __forceinline__ uint4 pack16(const float (&v)[kVecElems<T>])
{
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int i = 0; i < kVecElems<T>; ++i) e[i] = fromFloat<T>(v[i]);
    return raw;
}

// Read-only 16-byte load through the non-coherent cache (data that no kernel of this launch writes).
__device__ __forceinline__ uint4 loadNc16(const void* p) { return __ldg(static_cast<const uint4*>(p)); }

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// --- tensor cores ---

// Four 8x8 b16 matrices, transposed: thread (g = lane/4, t = lane%4) gets rows 2t, 2t+1 of column g.
__device__ __forceinline__ void ldmatrixX4Trans(uint32_t (&r)[4], const void* smemPtr)
{
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smemPtr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// --- counters in global memory that CTAs of one grid wait on (the persistent decode, its benches) ---

// The acquiring load of a counter: what was written before the release that made its value is visible.
__device__ __forceinline__ uint32_t loadAcquire(const uint32_t* p)
{
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Adds to a counter with release semantics at GPU scope.
__device__ __forceinline__ void addRelease(uint32_t* p, uint32_t v)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// --- mbarriers (sm_90): the producer / consumer rings of the persistent decode and vision attention ---

__device__ __forceinline__ uint32_t smemAddr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void mbarInit(uint64_t* bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddr(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbarArriveExpectTx(uint64_t* bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbarArrive(uint64_t* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smemAddr(bar)) : "memory");
}

// TMA: the box at (x, y) of `map` (a CUtensorMap: a __grid_constant__ kernel parameter) into shared memory
// at dst, completing on bar's transaction count (sm_90).
__device__ __forceinline__ void tmaLoad2d(void* dst, const void* map, int x, int y, uint64_t* bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(smemAddr(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smemAddr(bar))
                 : "memory");
}

// Waits until the phase of the given parity has completed: spinning on test_wait, or suspending in
// try_wait (no difference measured on an H200: bench_persistent_decode, kPersistentTryWait).
__device__ __forceinline__ void mbarWait(uint64_t* bar, uint32_t parity, bool suspend = false)
{
    const uint32_t addr = smemAddr(bar);
    uint32_t done = 0;
    do {
        if (suspend)
            asm volatile(
                "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                : "=r"(done)
                : "r"(addr), "r"(parity)
                : "memory");
        else
            asm volatile(
                "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                : "=r"(done)
                : "r"(addr), "r"(parity)
                : "memory");
    } while (!done);
}

// --- cp.async and the exponential (sm_80+): the attention kernels' key tiles and softmax ---

// 16 bytes global -> shared, bypassing L1; with fill false nothing is read and the 16 bytes are zeros.
__device__ __forceinline__ void cpAsync16(void* smemDst, const void* src, bool fill)
{
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smemDst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(fill ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cpAsyncWait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// 2^x to ~2 ulp (MUFU.EX2; -inf gives 0): the softmax's exponentials.
__device__ __forceinline__ float fastExp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// lo and hi rounded to T and packed into one register, lo in the low half: an mma fragment's pair.
template <class T>
__device__ __forceinline__ uint32_t packPair(float lo, float hi)
{
    if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<const uint32_t*>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<const uint32_t*>(&h);
    }
}

// Two 16-bit elements at a 4-byte aligned address as one register.
__device__ __forceinline__ uint32_t load32(const void* p) { return *static_cast<const uint32_t*>(p); }

// Four 8x8 b16 matrices: thread (g = lane/4, t = lane%4) gets elements 2t, 2t+1 of row g of each.
__device__ __forceinline__ void ldmatrixX4(uint32_t (&r)[4], const void* smemPtr)
{
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smemPtr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}


// c += a * b on the tensor cores (mma.sync m16n8k16, float32 accumulators), T = __half or
// __nv_bfloat16: a is the 16 x 16 row-major operand (four registers of two elements), b the 16 x 8
// column-major one (two), c the 16 x 8 tile (lane g = lane / 4, t = lane % 4 holds rows g and g + 8,
// columns 2t and 2t + 1). A dot product does not care in which order its k terms are summed, so callers
// may permute k alike in a and b: the skinny GEMM and decode attention give each lane 16 contiguous bytes
// of a row, which as they stand are the fragments of two products (skinny_gemm_tc.cu).
template <class T>
__device__ __forceinline__ void mmaM16N8K16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (std::is_same_v<T, __half>) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    } else {
        static_assert(std::is_same_v<T, __nv_bfloat16>, "tensor-core products take 16-bit types");
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
#else
    (void)c, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
    __trap();
#endif
}

// --- activations ---

// SiLU (x * sigmoid(x)) in float32: silu_and_mul.cu and the skinny GEMM's gate/up input.
__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

// --- reductions ---

__device__ __forceinline__ float warpSum(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

__device__ __forceinline__ float warpMax(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

// --- clocks, for timeouts and benchmark traces ---

// The device's nanosecond clock, common to all multiprocessors (clock64() counts one multiprocessor's cycles).
__device__ __forceinline__ uint64_t globalTimer()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// The multiprocessor this thread runs on.
__device__ __forceinline__ uint32_t smId()
{
    uint32_t id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// --- barrier.cluster (sm_90): every thread of every CTA of the cluster arrives, then waits ---
// Writes before a release arrive (global, or pushed into another CTA's shared memory) are visible to
// every thread of the cluster after its acquire wait.
__device__ __forceinline__ void clusterArriveRelaxed()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory");
#endif
}
__device__ __forceinline__ void clusterArriveRelease()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
#endif
}
__device__ __forceinline__ void clusterWaitAcquire()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
#endif
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024). Every thread gets the result.
__device__ __forceinline__ float blockSum(float x, float* scratch /* [32] shared */)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    x = warpSum(x);
    __syncthreads();  // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = x;
    __syncthreads();
    float total = 0.0f;
    const int numWarps = blockDim.x >> 5;
    for (int w = 0; w < numWarps; ++w) total += scratch[w];
    return total;
}

}  // namespace lector::gpu
