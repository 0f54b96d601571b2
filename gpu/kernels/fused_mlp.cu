// The MLP block for 2 to 32 decode rows as one kernel (design: the header).
#include "gpu/kernels/fused_mlp.cuh"

#include <cooperative_groups.h>

#include "gpu/kernels/common.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#pragma nv_diag_suppress 177  // the helpers only the sm_90 body uses
#endif

namespace lector::gpu {

const char* fusedMlpUnsupported(const FusedMlpParams& p)
{
    if (p.dtype != DType::F16 && p.dtype != DType::BF16) return "the kernel takes float16 or bfloat16";
    if (p.hidden != kFusedMlpHidden || p.intermediate != kFusedMlpIntermediate)
        return "the kernel is built for hidden 1024 and intermediate 3584";
    if (p.rows < 1 || p.rows > kFusedMlpMaxRows) return "1 to 32 rows";
    const void* all[] = {p.residualIn, p.delta, p.residualOut, p.normWeight, p.gateUp, p.down, p.out, p.workspace};
    for (const void* q : all)
        if (!q || (reinterpret_cast<uintptr_t>(q) & 15u) != 0) return "every tensor set and 16-byte aligned";
    if (p.residualOut == p.residualIn) return "residualOut must not alias residualIn";
    return "";
}

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kCluster = 16, kCtas = kFusedMlpClusters * kCluster;
constexpr int kHidden = kFusedMlpHidden, kInter = kFusedMlpIntermediate;
constexpr int kInterCta = kInter / kCtas;           // 32 gate and 32 up rows a CTA
constexpr int kInterCluster = kInterCta * kCluster;  // 512
constexpr int kOutRowsCta = kHidden / kCluster;      // 64 rows of down a CTA
constexpr int kGuBlocks = kHidden / 32;              // k blocks of 32 in gate/up
constexpr int kDownBlocksWarp = kInterCluster / 32 / 2;  // 8: a warp takes half of down's k blocks
// Row strides in shared memory that are 64 mod 128 bytes: the 8 rows a quarter-warp reads (lanes g = 0, 1
// at k offsets 0..48 bytes) fall in different banks.
constexpr int kXStride = kHidden + 32, kHStride = kInterCluster + 32;
static_assert(kCtas * kInterCta == kInter && kWarps == 8, "4 row tiles x 2 k halves of warps");
static_assert(8 * kOutRowsCta % kThreads == 0, "the final sums: whole rounds of threads a tile of 8 rows");

// Gate/up rows as the products read them: fragment [m tile][k block][half][lane] of 16 bytes, lane (g, t)
// of half h holding CTA row 16 m + g + 8 h at k = 32 kb + 8 t (conflict-free 16-byte loads).
template <class T, int kTiles>
struct Smem {
    uint4 gu[4 * kGuBlocks * 2 * 32];
    alignas(16) T xh[kTiles * 8 * kXStride];  // the normalised rows; after gate/up, the cluster's products
    float4 red[4 * kTiles * 32];              // the k halves' exchange
    float4 up[2 * kTiles * 32];               // rounded up rows, beside the gate rows of the same warp tile
    alignas(16) T hLocal[kTiles * 8 * kInterCta];  // this CTA's products [row][32], before the push
    int last;
};

__device__ __forceinline__ void stamp(const FusedMlpParams& p, int which)
{
    if (p.trace && threadIdx.x == 0) {
        unsigned long long ns;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
        p.trace[blockIdx.x * kFusedMlpTraceStamps + which] = ns;
    }
}

template <class T>
__device__ __forceinline__ float roundTo(float x)
{
    return toFloat(fromFloat<T>(x));
}

template <class T, int kTiles>
__global__ void __launch_bounds__(kThreads, 1) fusedMlpKernel(const __grid_constant__ FusedMlpParams p)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) uint8_t smemRaw[];
    Smem<T, kTiles>& sm = *reinterpret_cast<Smem<T, kTiles>*>(smemRaw);
    const cg::cluster_group cluster = cg::this_cluster();
    constexpr int kRowsPad = kTiles * 8;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int cta = blockIdx.x, group = cta / kCluster, rank = static_cast<int>(cluster.block_rank());
    const int mt = warp & 3, kh = warp >> 2;  // this warp's 16-row tile and k half
    const T* gu = static_cast<const T*>(p.gateUp);
    const T* down = static_cast<const T*>(p.down);
    stamp(p, 0);

    // Before the wait: the weights (immutable), the norm weight, zeros in the padding rows of x.
    for (int q = tid; q < 4 * kGuBlocks * 2 * 32; q += kThreads) {
        const int ln = q & 31, half = (q >> 5) & 1, kb = (q >> 6) % kGuBlocks, m = q / (kGuBlocks * 64);
        const int lr = m * 16 + (ln >> 2) + 8 * half;  // 0-31 gate rows, 32-63 up rows
        const int row = lr < kInterCta ? cta * kInterCta + lr : kInter + cta * kInterCta + lr - kInterCta;
        cpAsync16(&sm.gu[q], gu + int64_t(row) * kHidden + kb * 32 + (ln & 3) * 8, true);
    }
    cpAsyncCommit();
    uint4 wd[kDownBlocksWarp][2];
#pragma unroll
    for (int kbi = 0; kbi < kDownBlocksWarp; ++kbi)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = rank * kOutRowsCta + mt * 16 + g + 8 * half;
            const int col = group * kInterCluster + (kh * kDownBlocksWarp + kbi) * 32 + t * 8;
            wd[kbi][half] = loadNc16(down + int64_t(row) * kInter + col);
        }
    uint4 nw[4];
    if (warp < 2)
#pragma unroll
        for (int i = 0; i < 4; ++i) nw[i] = loadNc16(static_cast<const T*>(p.normWeight) + (lane + 32 * i) * 8);
    for (int i = tid; i < (kRowsPad - p.rows) * (kHidden / 8); i += kThreads)
        *reinterpret_cast<uint4*>(&sm.xh[(p.rows + i / (kHidden / 8)) * kXStride + (i % (kHidden / 8)) * 8]) = make_uint4(0, 0, 0, 0);
    stamp(p, 1);
    clusterArriveRelaxed();
    allowDependentLaunch();
    gridDependencyWait();
    stamp(p, 2);

    // Add + RMSNorm of rows rank and rank + 16 (warps 0 and 1) into this CTA's x, then pushed by every
    // thread into the other CTAs of the cluster.
    const int normRow = rank + 16 * warp;
    if (warp < 2 && normRow < p.rows) {
        const T* res = static_cast<const T*>(p.residualIn) + int64_t(normRow) * kHidden;
        const T* dl = static_cast<const T*>(p.delta) + int64_t(normRow) * kHidden;
        float s[4][8];
        float sumSq = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int c = (lane + 32 * i) * 8;
            const Vec16<T> a = unpack16<T>(loadNc16(res + c)), d = unpack16<T>(loadNc16(dl + c));
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                s[i][e] = roundTo<T>(a.v[e] + d.v[e]);
                sumSq = fmaf(s[i][e], s[i][e], sumSq);
            }
            if (group == 0)
                *reinterpret_cast<uint4*>(static_cast<T*>(p.residualOut) + int64_t(normRow) * kHidden + c) = pack16<T>(s[i]);
        }
        const float inv = rsqrtf(warpSum(sumSq) / kHidden + p.eps);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const Vec16<T> w = unpack16<T>(nw[i]);
            float h[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) h[e] = s[i][e] * inv * w.v[e];
            *reinterpret_cast<uint4*>(&sm.xh[normRow * kXStride + (lane + 32 * i) * 8]) = pack16<T>(h);
        }
    }
    __syncthreads();
    clusterWaitAcquire();  // every CTA of the cluster runs (the arrive at the start)
    {
        const int r = rank + 16 * (tid >> 7), c = (tid & 127) * 8;
        if (r < p.rows) {
            const uint4 v = *reinterpret_cast<const uint4*>(&sm.xh[r * kXStride + c]);
            for (int dst = 0; dst < kCluster; ++dst)
                if (dst != rank) *cluster.map_shared_rank(reinterpret_cast<uint4*>(&sm.xh[r * kXStride + c]), dst) = v;
        }
    }
    clusterArriveRelease();
    cpAsyncWait<0>();
    clusterWaitAcquire();
    __syncthreads();  // this CTA's own gate/up copies
    stamp(p, 3);

    // gate/up: rows 16 mt .. of this CTA times the batch, k blocks 16 kh .. + 15.
    float acc[kTiles][4];
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#pragma unroll 4
    for (int kbi = 0; kbi < kGuBlocks / 2; ++kbi) {
        const int kb = kh * (kGuBlocks / 2) + kbi;
        const uint4 a0 = sm.gu[((mt * kGuBlocks + kb) * 2) * 32 + lane];
        const uint4 a1 = sm.gu[((mt * kGuBlocks + kb) * 2 + 1) * 32 + lane];
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
            const uint4 b = *reinterpret_cast<const uint4*>(&sm.xh[(nt * 8 + g) * kXStride + kb * 32 + t * 8]);
            mmaM16N8K16<T>(acc[nt], a0.x, a1.x, a0.y, a1.y, b.x, b.y);
            mmaM16N8K16<T>(acc[nt], a0.z, a1.z, a0.w, a1.w, b.z, b.w);
        }
    }
    clusterArriveRelease();  // x is no longer read here: the cluster may push its products over it
    stamp(p, 4);
    if (kh == 1)
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt)
            sm.red[(mt * kTiles + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
    __syncthreads();
    if (kh == 0) {
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
            const float4 o = sm.red[(mt * kTiles + nt) * 32 + lane];
            acc[nt][0] = roundTo<T>(acc[nt][0] + o.x), acc[nt][1] = roundTo<T>(acc[nt][1] + o.y);
            acc[nt][2] = roundTo<T>(acc[nt][2] + o.z), acc[nt][3] = roundTo<T>(acc[nt][3] + o.w);
            if (mt >= 2) sm.up[((mt - 2) * kTiles + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
        }
    }
    __syncthreads();
    // SiLU-and-mul: acc[nt] holds gate rows 16 mt + g (+ 8) at batch rows 8 nt + 2 t (+ 1).
    if (kh == 0 && mt < 2) {
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
            const float4 u = sm.up[(mt * kTiles + nt) * 32 + lane];
            const int r0 = nt * 8 + 2 * t, j = mt * 16 + g;
            sm.hLocal[r0 * kInterCta + j] = fromFloat<T>(silu(acc[nt][0]) * u.x);
            sm.hLocal[(r0 + 1) * kInterCta + j] = fromFloat<T>(silu(acc[nt][1]) * u.y);
            sm.hLocal[r0 * kInterCta + j + 8] = fromFloat<T>(silu(acc[nt][2]) * u.z);
            sm.hLocal[(r0 + 1) * kInterCta + j + 8] = fromFloat<T>(silu(acc[nt][3]) * u.w);
        }
    }
    __syncthreads();
    clusterWaitAcquire();  // every CTA is past its reads of x
    if (tid < kRowsPad * 4) {
        const int r = tid >> 2, part = tid & 3;
        if (r < p.rows) {
            const uint4 v = *reinterpret_cast<const uint4*>(&sm.hLocal[r * kInterCta + part * 8]);
            for (int dst = 0; dst < kCluster; ++dst)
                *cluster.map_shared_rank(reinterpret_cast<uint4*>(&sm.xh[r * kHStride + rank * kInterCta + part * 8]), dst) = v;
        }
    }
    clusterArriveRelease();
    clusterWaitAcquire();
    stamp(p, 5);

    // down: rows 64 rank + 16 mt .. of the output times the cluster's 512 products, k half kh.
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#pragma unroll
    for (int kbi = 0; kbi < kDownBlocksWarp; ++kbi) {
        const int kb = kh * kDownBlocksWarp + kbi;
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
            const uint4 b = *reinterpret_cast<const uint4*>(&sm.xh[(nt * 8 + g) * kHStride + kb * 32 + t * 8]);
            mmaM16N8K16<T>(acc[nt], wd[kbi][0].x, wd[kbi][1].x, wd[kbi][0].y, wd[kbi][1].y, b.x, b.y);
            mmaM16N8K16<T>(acc[nt], wd[kbi][0].z, wd[kbi][1].z, wd[kbi][0].w, wd[kbi][1].w, b.z, b.w);
        }
    }
    if (kh == 1)
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt)
            sm.red[(mt * kTiles + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
    __syncthreads();
    float* partials = static_cast<float*>(p.workspace);
    if (kh == 0) {
        float* mine = partials + int64_t(group) * kFusedMlpMaxRows * kHidden;
        const int o0 = rank * kOutRowsCta + mt * 16 + g;
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
            const float4 o = sm.red[(mt * kTiles + nt) * 32 + lane];
            const int r0 = nt * 8 + 2 * t;
            if (r0 < p.rows) mine[r0 * kHidden + o0] = acc[nt][0] + o.x, mine[r0 * kHidden + o0 + 8] = acc[nt][2] + o.z;
            if (r0 + 1 < p.rows)
                mine[(r0 + 1) * kHidden + o0] = acc[nt][1] + o.y, mine[(r0 + 1) * kHidden + o0 + 8] = acc[nt][3] + o.w;
        }
    }

    // The last of the 7 CTAs of this rank sums the 7 partials of its 64 rows, in cluster order.
    __syncthreads();
    stamp(p, 6);
    uint32_t* tickets = reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(p.workspace) + kFusedMlpPartialBytes);
    if (tid == 0) {
        __threadfence();
        sm.last = atomicAdd(&tickets[rank], 1u) == kFusedMlpClusters - 1;
    }
    __syncthreads();
    stamp(p, 7);
    if (!sm.last) return;
    __threadfence();
    // Every load issued before any sum: a loop of dependent rounds took an L2 round trip each (up to 8).
    constexpr int kPerThread = kRowsPad * kOutRowsCta / kThreads;  // 2 a tile of 8 rows
    float v[kPerThread][kFusedMlpClusters];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
        const int i = tid + j * kThreads, r = i / kOutRowsCta, o = rank * kOutRowsCta + i % kOutRowsCta;
#pragma unroll
        for (int c = 0; c < kFusedMlpClusters; ++c)
            v[j][c] = r < p.rows ? __ldcg(partials + (int64_t(c) * kFusedMlpMaxRows + r) * kHidden + o) : 0.0f;
    }
    T* out = static_cast<T*>(p.out);
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
        const int i = tid + j * kThreads, r = i / kOutRowsCta, o = rank * kOutRowsCta + i % kOutRowsCta;
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < kFusedMlpClusters; ++c) s += v[j][c];
        if (r < p.rows) out[int64_t(r) * kHidden + o] = fromFloat<T>(s);
    }
    if (tid == 0) tickets[rank] = 0;
    stamp(p, 8);
#endif
}

template <class T, int kTiles>
cudaError_t prepare()
{
    static const cudaError_t once = [] {
        LECTOR_CUDA_TRY(cudaFuncSetAttribute(fusedMlpKernel<T, kTiles>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(sizeof(Smem<T, kTiles>))));
        LECTOR_CUDA_TRY(cudaFuncSetAttribute(fusedMlpKernel<T, kTiles>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        return cudaSuccess;
    }();
    return once;
}

template <class T, int kTiles>
cudaError_t launchTiles(const FusedMlpParams& p, cudaStream_t stream)
{
    LECTOR_CUDA_TRY((prepare<T, kTiles>()));
    return launchKernelInClusters(fusedMlpKernel<T, kTiles>, dim3(kCtas), dim3(kThreads), sizeof(Smem<T, kTiles>), stream,
                                  dim3(kCluster, 1, 1), p);
}

template <class T>
cudaError_t launchTyped(const FusedMlpParams& p, cudaStream_t stream)
{
    switch ((p.rows + 7) / 8) {
    case 1: return launchTiles<T, 1>(p, stream);
    case 2: return launchTiles<T, 2>(p, stream);
    case 3: return launchTiles<T, 3>(p, stream);
    default: return launchTiles<T, 4>(p, stream);
    }
}

}  // namespace

bool fusedMlpSupported(int device)
{
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess || major < 9) return false;
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess || current != device || prepare<__half, 4>() != cudaSuccess) return false;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(kCtas);
    config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = sizeof(Smem<__half, 4>);
    cudaLaunchAttribute attribute = clusterDimAttribute(dim3(kCluster, 1, 1));
    config.attrs = &attribute;
    config.numAttrs = 1;
    int clusters = 0;
    const bool ok = cudaOccupancyMaxActiveClusters(&clusters, fusedMlpKernel<__half, 4>, &config) == cudaSuccess && clusters > 0;
    cudaGetLastError();
    return ok;
}

cudaError_t launchFusedMlp(const FusedMlpParams& p, cudaStream_t stream)
{
    if (*fusedMlpUnsupported(p)) return cudaErrorInvalidValue;
    return p.dtype == DType::F16 ? launchTyped<__half>(p, stream) : launchTyped<__nv_bfloat16>(p, stream);
}

#endif  // LECTOR_GPU_HAVE_LAUNCHERS

}  // namespace lector::gpu
