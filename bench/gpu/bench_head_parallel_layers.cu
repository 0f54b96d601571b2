// bench_head_parallel_layers: could the batch-1 decode step get by with two kernels a layer? The chain
// pays six dependencies among all multiprocessors a layer (qkv, QK-norm/RoPE, attention, o, gate/up,
// down; perf.md, call 135: ~1.4 us each, ~200 us of the 653 us step). Partitioned by KV head, as tensor
// parallelism partitions a layer over GPUs, only two of them stay global:
//   kernel A, a thread-block cluster of 16 CTAs per KV head (8 clusters, 128 CTAs): the add + RMSNorm of
//     the residual and the last layer's down partials; the head's 512 qkv rows (q of its 2 query heads,
//     its k and v), 32 a CTA; q pushed into every CTA of the cluster (distributed shared memory) before a
//     cluster barrier; each CTA attends over 1/16 of the context (a warp per 8 keys, online softmax); the
//     16 partials pushed, merged locally; o's 64 rows a CTA times the head's 256 outputs (o is
//     row-parallel over the heads): a partial of the hidden vector per cluster, into global memory;
//   kernel B, clusters of LECTOR_HP_MLP_CLUSTER (16; 8 was slower) over the intermediate columns, 28 a
//     CTA: the add + RMSNorm of the residual and the 8 o partials; gate and up rows, a warp a row; SiLU-mul
//     pushed into the cluster; down's rows times the cluster's products (row-parallel again): partials.
// Every CTA loads its weights (and its share of the K/V) before the PDL wait, and lets the next kernel
// launch at once, so the next kernel's CTAs, resident beside this one's (shared memory and registers are
// sized for that), stream their weights while this one computes. gpu/kernels/head_parallel_decode.cu is
// the decoder built from it (docs/perf.md, calls 144-156).
//
// Not the decoder: no QK-norm, RoPE, norm weights or K/V write of the new token (its k and v go to a
// buffer; the context is the 1076 cached tokens), no LM head; the weights are laid out per CTA. The step
// has the decoder's bytes (39 MB a layer) and its arithmetic otherwise. The bench checks two layers
// against a CPU reference of the same arithmetic, then times 24 layers (one step) in a CUDA graph against
// the bytes at copy bandwidth: as designed, with the attention kernel padded over half a multiprocessor's
// shared memory (two never share one), with each kernel prefetching the next one's slices into the L2,
// with the loads after the wait, without PDL, and each kernel alone; then traces one step per stage
// (clock64) and per cluster (entry and exit on the globaltimer, and the multiprocessors it ran on).
// Without libtorch:
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_head_parallel_layers.cu \
//        -o build-gpu/bench_head_parallel_layers
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <memory>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/common.cuh"
#include "gpu/ref/element_ref.h"

namespace bench = lector::bench;
namespace gpu = lector::gpu;
namespace cg = cooperative_groups;

namespace {

using bench::check;

constexpr int kHidden = 1024, kKvHeads = 8, kGroup = 2, kHeadDim = 128, kInter = 3584, kLayers = 24, kContext = 1076;
constexpr int kCluster = 16, kCtas = kKvHeads * kCluster, kThreads = 256;
constexpr int kQkvRows = (kGroup + 2) * kHeadDim;        // 512 rows of a KV head: q (256), k, v
constexpr int kQkvRowsCta = kQkvRows / kCluster;         // 32
constexpr int kHeadOut = kGroup * kHeadDim;              // 256 attention outputs of a KV head
constexpr int kOutRowsCta = kHidden / kCluster;          // 64 rows of o a CTA
constexpr int kInterCta = kInter / kCtas;                // 28 gate rows and 28 up rows a CTA
// The MLP half's clusters (-DLECTOR_HP_MLP_CLUSTER=16 or 8): only 7 GPCs of the H200 hold a cluster of 16.
#ifndef LECTOR_HP_MLP_CLUSTER
#define LECTOR_HP_MLP_CLUSTER 16
#endif
constexpr int kClusterB = LECTOR_HP_MLP_CLUSTER;
constexpr int kGroupsB = kCtas / kClusterB;              // 16: down partials
constexpr int kInterClusterB = kClusterB * kInterCta;    // 224 intermediate columns a cluster
constexpr int kDownRowsCta = kHidden / kClusterB;        // 128 rows of down a CTA
constexpr int kDownThreadsRow = kThreads / kDownRowsCta; // 2
constexpr int kDownVecs = kInterClusterB / 8 / kDownThreadsRow;  // 14 16-byte vectors of down a thread
constexpr int kTokensCta = (kContext + kCluster - 1) / kCluster;  // 68 (the last CTA: 56)
constexpr int kKRow = kHeadDim + 8;                      // K rows in shared memory, padded (no bank conflicts)
constexpr int kORow = kHeadOut + 32;                     // o rows in shared memory, padded
constexpr float kEps = 1e-6f;
static_assert(kHeadOut == kThreads && kTokensCta <= 16 * 8);

// Halves a layer holds, per CTA and in all, in the order a CTA reads them.
constexpr long long kQkvCta = kQkvRowsCta * kHidden;            // [32][1024]
constexpr long long kOCta = kOutRowsCta * kHeadOut;             // [64][256]
constexpr long long kGuCta = 2 * kInterCta * kHidden;           // [56][1024]: 28 gate rows, then 28 up rows
constexpr long long kDownCta = kDownRowsCta * kInterClusterB;   // [128][224]
constexpr long long kKvHead = (long long)kContext * kHeadDim;   // K (or V) of a KV head: [1076][128]
constexpr long long kLayerHalves = kCtas * (kQkvCta + kOCta + kGuCta + kDownCta) + 2 * kKvHeads * kKvHead;

struct Layer {
    int index;
    const __half* qkv;  // [8][16][32][1024]
    const __half* k;    // [8][1076][128]
    const __half* v;
    const __half* o;    // [8][16][64][256]
    const __half* gu;   // [8][16][56][1024]
    const __half* down; // [16][8][128][224]
};

struct State {
    float* residualA;  // the residual entering the MLP, written by A
    float* residualB;  // the residual entering attention, written by B (the step's input at layer 0)
    float* oPart;      // [8][1024]
    float* downPart;   // [16][1024]
    __half* newKv;     // [8][256]: the new token's k and v
    float scale;       // attention's 1 / sqrt(head dim)
    unsigned long long* trace;  // [layers][2 halves][CTAs][kMarks] clock64, then globaltimer at entry / exit
    int l2Prefetch;    // each kernel asks the L2 for the next kernel's slices at entry
};

// The L2 fetches `bytes` (a multiple of 16) from p onwards; nothing lands in the SM.
__device__ __forceinline__ void prefetchL2(const void* p, uint32_t bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

constexpr int kMarks = 16;  // clock64 at up to 13 stage ends, globaltimer at entry (13) and exit (14)

__device__ __forceinline__ unsigned long long globalTimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Thread 0 of each CTA stamps stage ends of the traced variants.
template <bool kTrace>
__device__ __forceinline__ void mark(const State& st, int layer, int half, int cta, int i)
{
    if constexpr (kTrace) {
        if (threadIdx.x == 0) {
            unsigned long long* t = st.trace + ((size_t(layer) * 2 + half) * kCtas + cta) * kMarks;
            if (i == 13 || i == 14) t[i] = globalTimer();
            else t[i] = clock64();
            if (i == 0) {
                unsigned smid;
                asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
                t[15] = smid;
            }
        }
    }
}

constexpr int kWarps = kThreads / 32;
constexpr int kGuRowsWarp = 2 * kInterCta / kWarps;      // 7 gate/up rows a warp
static_assert(kGuRowsWarp * kWarps == 2 * kInterCta);

struct SmemA {
    __half o[kOutRowsCta * kORow];             // 36 KB, each thread's own chunks
    __half k[kTokensCta * kKRow];              // 18 KB, each warp's own tokens
    __half v[kTokensCta * kHeadDim];           // 17 KB
    alignas(16) __half x[kHidden];
    alignas(16) __half q[kHeadOut];            // pushed by the CTAs of the q rows
    float wpart[kWarps][kHeadOut];             // each warp's unnormalised output
    float wm[kWarps][kGroup], wl[kWarps][kGroup];
    float recv[kCluster][kHeadOut];            // every CTA's partial, pushed by it
    float recvM[kCluster][kGroup], recvL[kCluster][kGroup];
    alignas(16) __half merged[kHeadOut];
    float red[kWarps];
};

// A warp's gate/up rows in shared memory, less their first 32 chunks (row 0's first quarter, one chunk a lane,
// held in registers): 512 bytes a warp, so that the MLP half fits beside an attention half padded to more
// than half a multiprocessor's shared memory (exclusiveSmemA).
constexpr int kGuWarpHalves = kGuRowsWarp * kHidden - 32 * 8;

struct SmemB {
    __half gu[kWarps * kGuWarpHalves];         // 108 KB, each warp's own rows
    alignas(16) __half x[kHidden];
    alignas(16) __half hAll[kInterClusterB];   // pushed by every CTA of the cluster
    float rowOut[2 * kInterCta];
    float red[kWarps];
};

// cp.async and barrier.cluster from gpu/kernels/common.cuh. An exchange pushes into the other CTAs'
// shared memory before it arrives (release), so after the wait (acquire) it reads only its own.
using gpu::clusterArriveRelaxed;
using gpu::cpAsyncCommit;
using gpu::cpAsyncWait;
__device__ __forceinline__ void cpAsync16(void* smemDst, const void* src) { gpu::cpAsync16(smemDst, src, true); }
__device__ __forceinline__ void clusterArrive() { gpu::clusterArriveRelease(); }
__device__ __forceinline__ void clusterWait() { gpu::clusterWaitAcquire(); }

// sum over 8 halves of a times 8 halves of b, in float32
__device__ __forceinline__ float dot8(const uint4& a, const uint4& b)
{
    const __half2* x = reinterpret_cast<const __half2*>(&a);
    const __half2* y = reinterpret_cast<const __half2*>(&b);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 fx = __half22float2(x[i]), fy = __half22float2(y[i]);
        s = fmaf(fx.x, fy.x, fmaf(fx.y, fy.y, s));
    }
    return s;
}

__device__ __forceinline__ float blockSum(float v, float* red)
{
    v = gpu::warpSum(v);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s += red[w];
    return s;
}

// x = RMSNorm(residual + sum of the 8 partials) in float16 into shared memory; the sum itself into
// `keep` by the grid's first CTA. Thread t owns elements 4t .. 4t + 3.
template <int kParts>
__device__ __forceinline__ void addNorm(const float* residual, const float* parts, float* keep, __half* x, float* red)
{
    const int i = 4 * threadIdx.x;
    float4 s = *reinterpret_cast<const float4*>(residual + i);
#pragma unroll
    for (int c = 0; c < kParts; ++c) {
        const float4 p = *reinterpret_cast<const float4*>(parts + c * kHidden + i);
        s.x += p.x, s.y += p.y, s.z += p.z, s.w += p.w;
    }
    if (blockIdx.x == 0) *reinterpret_cast<float4*>(keep + i) = s;
    const float ss = blockSum(s.x * s.x + s.y * s.y + s.z * s.z + s.w * s.w, red);
    const float r = rsqrtf(ss / kHidden + kEps);
    reinterpret_cast<__half2*>(x + i)[0] = __floats2half2_rn(s.x * r, s.y * r);
    reinterpret_cast<__half2*>(x + i)[1] = __floats2half2_rn(s.z * r, s.w * r);
}

template <bool kPrefetch, bool kTrace = false>
__global__ void __launch_bounds__(kThreads, 2) attentionHalf(Layer w, State st)
{
    extern __shared__ __align__(16) uint8_t smemRaw[];
    SmemA& sm = *reinterpret_cast<SmemA*>(smemRaw);
    const cg::cluster_group cluster = cg::this_cluster();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int head = blockIdx.x / kCluster, rank = int(cluster.block_rank());
    const int cta = head * kCluster + rank;
    mark<kTrace>(st, w.index, 0, cta, 0);
    mark<kTrace>(st, w.index, 0, cta, 13);
    const int tok0 = rank * kTokensCta, tokens = min(kTokensCta, kContext - tok0);
    if (st.l2Prefetch && tid == 0) {  // the MLP half's CTA of this index: its gate/up and down slices
        prefetchL2(w.gu + cta * kGuCta, kGuCta * 2);
        prefetchL2(w.down + cta * kDownCta, kDownCta * 2);
    }

    // qkv rows into registers: thread t has row t / 8, 16-byte chunks j * 8 + t % 8. K and V of warp w's
    // tokens (groups of 8: w, w + 8), and thread t's chunks of o (row t / 4, chunks j * 4 + t % 4), by cp.async.
    const int qRow = tid >> 3, qPart = tid & 7;
    const int oRow = tid >> 2, oPart = tid & 3;
    uint4 wq[16];
    auto loadWeights = [&] {
        const __half* src = w.qkv + cta * kQkvCta + qRow * kHidden + qPart * 8;
#pragma unroll
        for (int j = 0; j < 16; ++j) wq[j] = gpu::loadNc16(src + j * 64);
        const __half* k = w.k + head * kKvHead + size_t(tok0) * kHeadDim;
        const __half* v = w.v + head * kKvHead + size_t(tok0) * kHeadDim;
        for (int grp = warp; grp * 8 < tokens; grp += kWarps)
#pragma unroll
            for (int i = lane; i < 8 * 16; i += 32) {
                const int t = grp * 8 + i / 16, c = i % 16;
                if (t < tokens) {
                    cpAsync16(sm.k + t * kKRow + c * 8, k + t * kHeadDim + c * 8);
                    cpAsync16(sm.v + t * kHeadDim + c * 8, v + t * kHeadDim + c * 8);
                }
            }
        cpAsyncCommit();
        const __half* o = w.o + cta * kOCta + oRow * kHeadOut;
#pragma unroll
        for (int j = 0; j < kHeadOut / 32; ++j) cpAsync16(sm.o + oRow * kORow + (j * 4 + oPart) * 8, o + (j * 4 + oPart) * 8);
        cpAsyncCommit();
    };
    if constexpr (kPrefetch) loadWeights();
    clusterArriveRelaxed();  // waited for before the first push: every CTA of the cluster runs by then
    gpu::allowDependentLaunch();
    gpu::gridDependencyWait();
    mark<kTrace>(st, w.index, 0, cta, 1);
    if constexpr (!kPrefetch) loadWeights();

    addNorm<kGroupsB>(st.residualB, st.downPart, st.residualA, sm.x, sm.red);
    __syncthreads();
    mark<kTrace>(st, w.index, 0, cta, 2);

    // qkv rows; q is pushed into every CTA of the cluster
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) acc += dot8(wq[j], *reinterpret_cast<const uint4*>(sm.x + (j * 8 + qPart) * 8));
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    acc += __shfl_xor_sync(0xffffffffu, acc, 2);
    acc += __shfl_xor_sync(0xffffffffu, acc, 4);
    mark<kTrace>(st, w.index, 0, cta, 3);
    clusterWait();
    constexpr int kQCtas = kHeadOut / kQkvRowsCta;  // 8
    if (qPart == 0) {
        const __half hv = __float2half_rn(acc);
        if (rank < kQCtas) {
#pragma unroll
            for (int r = 0; r < kCluster; ++r) *cluster.map_shared_rank(&sm.q[rank * kQkvRowsCta + qRow], r) = hv;
        } else {  // k and v rows: the new token's, for the cache
            st.newKv[head * 2 * kHeadDim + (rank - kQCtas) * kQkvRowsCta + qRow] = hv;
        }
    }
    clusterArrive();
    clusterWait();
    mark<kTrace>(st, w.index, 0, cta, 4);

    // attention over the warp's tokens with a running max and sum (lane = 4 x token + quarter of the dims);
    // each lane keeps the output's dims 4 lane .. + 3 of both heads
    cpAsyncWait<1>();
    __syncwarp();
    {
        const int tq = lane >> 2, quarter = lane & 3;
        uint4 qc[kGroup][4];
#pragma unroll
        for (int g = 0; g < kGroup; ++g)
#pragma unroll
            for (int j = 0; j < 4; ++j) qc[g][j] = *reinterpret_cast<const uint4*>(sm.q + g * kHeadDim + (quarter * 4 + j) * 8);
        float m[kGroup], l[kGroup], out[kGroup][4];
#pragma unroll
        for (int g = 0; g < kGroup; ++g) {
            m[g] = -INFINITY, l[g] = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; ++e) out[g][e] = 0.0f;
        }
        for (int grp = warp; grp * 8 < tokens; grp += kWarps) {
            const int t = grp * 8 + tq;
            const bool live = t < tokens;
            float p[kGroup];
#pragma unroll
            for (int g = 0; g < kGroup; ++g) {
                float d = 0.0f;
                if (live) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) d += dot8(*reinterpret_cast<const uint4*>(sm.k + t * kKRow + (quarter * 4 + j) * 8), qc[g][j]);
                }
                d += __shfl_xor_sync(0xffffffffu, d, 1);
                d += __shfl_xor_sync(0xffffffffu, d, 2);
                const float s = live ? d * st.scale : -INFINITY;
                float top = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, 4));
                top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 8));
                top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 16));
                const float mNew = fmaxf(m[g], top);  // finite: the group has a live token
                const float corr = __expf(m[g] - mNew);
                p[g] = __expf(s - mNew);
                float ps = p[g] + __shfl_xor_sync(0xffffffffu, p[g], 4);
                ps += __shfl_xor_sync(0xffffffffu, ps, 8);
                ps += __shfl_xor_sync(0xffffffffu, ps, 16);
                l[g] = l[g] * corr + ps;
                m[g] = mNew;
#pragma unroll
                for (int e = 0; e < 4; ++e) out[g][e] *= corr;
            }
#pragma unroll
            for (int u = 0; u < 8; ++u) {
                const float p0 = __shfl_sync(0xffffffffu, p[0], 4 * u), p1 = __shfl_sync(0xffffffffu, p[1], 4 * u);
                if (grp * 8 + u < tokens) {
                    const uint2 raw = *reinterpret_cast<const uint2*>(sm.v + (grp * 8 + u) * kHeadDim + 4 * lane);
                    const float2 v01 = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
                    const float2 v23 = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
                    out[0][0] = fmaf(p0, v01.x, out[0][0]), out[0][1] = fmaf(p0, v01.y, out[0][1]);
                    out[0][2] = fmaf(p0, v23.x, out[0][2]), out[0][3] = fmaf(p0, v23.y, out[0][3]);
                    out[1][0] = fmaf(p1, v01.x, out[1][0]), out[1][1] = fmaf(p1, v01.y, out[1][1]);
                    out[1][2] = fmaf(p1, v23.x, out[1][2]), out[1][3] = fmaf(p1, v23.y, out[1][3]);
                }
            }
        }
#pragma unroll
        for (int g = 0; g < kGroup; ++g) {
            *reinterpret_cast<float4*>(&sm.wpart[warp][g * kHeadDim + 4 * lane]) = make_float4(out[g][0], out[g][1], out[g][2], out[g][3]);
            if (lane == 0) sm.wm[warp][g] = m[g], sm.wl[warp][g] = l[g];
        }
    }
    __syncthreads();
    mark<kTrace>(st, w.index, 0, cta, 5);
    {  // the CTA's partial (thread t: output t, head t / 128), pushed into every CTA of the cluster
        const int g = tid / kHeadDim;
        float top = -INFINITY;
#pragma unroll
        for (int v = 0; v < kWarps; ++v) top = fmaxf(top, sm.wm[v][g]);
        float sum = 0.0f, o = 0.0f;
#pragma unroll
        for (int v = 0; v < kWarps; ++v) {
            const float e = __expf(sm.wm[v][g] - top);  // 0 for a warp without tokens
            sum = fmaf(sm.wl[v][g], e, sum);
            o = fmaf(sm.wpart[v][tid], e, o);
        }
#pragma unroll
        for (int r = 0; r < kCluster; ++r) *cluster.map_shared_rank(&sm.recv[rank][tid], r) = o;
        if (tid % kHeadDim == 0) {
#pragma unroll
            for (int r = 0; r < kCluster; ++r) {
                *cluster.map_shared_rank(&sm.recvM[rank][g], r) = top;
                *cluster.map_shared_rank(&sm.recvL[rank][g], r) = sum;
            }
        }
    }
    clusterArrive();
    clusterWait();
    mark<kTrace>(st, w.index, 0, cta, 6);
    {  // merge the 16 partitions from local shared memory
        const int g = tid / kHeadDim;
        float top = -INFINITY;
#pragma unroll
        for (int r = 0; r < kCluster; ++r) top = fmaxf(top, sm.recvM[r][g]);
        float sum = 0.0f, o = 0.0f;
#pragma unroll
        for (int r = 0; r < kCluster; ++r) {
            const float e = __expf(sm.recvM[r][g] - top);
            sum = fmaf(sm.recvL[r][g], e, sum);
            o = fmaf(sm.recv[r][tid], e, o);
        }
        sm.merged[tid] = __float2half_rn(o / sum);
    }
    cpAsyncWait<0>();
    __syncthreads();
    mark<kTrace>(st, w.index, 0, cta, 7);
    {  // o rows: thread t has row t / 4, chunks j * 4 + t % 4
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < kHeadOut / 32; ++j) {
            const int c = j * 4 + oPart;
            s += dot8(*reinterpret_cast<const uint4*>(sm.o + oRow * kORow + c * 8), *reinterpret_cast<const uint4*>(sm.merged + c * 8));
        }
        s += __shfl_xor_sync(0xffffffffu, s, 1);
        s += __shfl_xor_sync(0xffffffffu, s, 2);
        if (oPart == 0) st.oPart[head * kHidden + rank * kOutRowsCta + oRow] = s;
    }
    mark<kTrace>(st, w.index, 0, cta, 8);
    mark<kTrace>(st, w.index, 0, cta, 14);
}

template <bool kPrefetch, bool kTrace = false>
__global__ void __launch_bounds__(kThreads, 2) mlpHalf(Layer w, Layer next, State st)
{
    extern __shared__ __align__(16) uint8_t smemRaw[];
    SmemB& sm = *reinterpret_cast<SmemB*>(smemRaw);
    const cg::cluster_group cluster = cg::this_cluster();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int group = blockIdx.x / kClusterB, rank = int(cluster.block_rank());
    const int cta = group * kClusterB + rank;
    mark<kTrace>(st, w.index, 1, cta, 0);
    mark<kTrace>(st, w.index, 1, cta, 13);
    if (st.l2Prefetch && tid == 0) {  // the next attention half's CTA of this index: qkv, o, K and V slices
        const int headA = cta / kCluster, tok0 = (cta % kCluster) * kTokensCta;
        const int bytes = min(kTokensCta, kContext - tok0) * kHeadDim * 2;
        prefetchL2(next.qkv + cta * kQkvCta, kQkvCta * 2);
        prefetchL2(next.o + cta * kOCta, kOCta * 2);
        prefetchL2(next.k + headA * kKvHead + size_t(tok0) * kHeadDim, bytes);
        prefetchL2(next.v + headA * kKvHead + size_t(tok0) * kHeadDim, bytes);
    }
    // warp w's 7 gate/up rows by cp.async; down rows into registers: thread t has row t / 2, chunks j * 2 + t % 2
    const int dRow = tid / kDownThreadsRow, dPart = tid % kDownThreadsRow;
    uint4 wd[kDownVecs];
    uint4 g0;
    auto loadWeights = [&] {
        const __half* gu = w.gu + cta * kGuCta + warp * kGuRowsWarp * kHidden;
        __half* dst = sm.gu + warp * kGuWarpHalves - 32 * 8;
        g0 = gpu::loadNc16(gu + lane * 8);
#pragma unroll
        for (int i = lane + 32; i < kGuRowsWarp * kHidden / 8; i += 32) cpAsync16(dst + i * 8, gu + i * 8);
        cpAsyncCommit();
        const __half* src = w.down + cta * kDownCta + dRow * kInterClusterB + dPart * 8;
#pragma unroll
        for (int j = 0; j < kDownVecs; ++j) wd[j] = gpu::loadNc16(src + j * kDownThreadsRow * 8);
    };
    if constexpr (kPrefetch) loadWeights();
    clusterArriveRelaxed();  // waited for before the push
    gpu::allowDependentLaunch();
    gpu::gridDependencyWait();
    mark<kTrace>(st, w.index, 1, cta, 1);
    if constexpr (!kPrefetch) loadWeights();

    addNorm<kKvHeads>(st.residualA, st.oPart, st.residualB, sm.x, sm.red);
    __syncthreads();
    mark<kTrace>(st, w.index, 1, cta, 2);
    // gate and up rows, a warp each, x in registers (lane: chunks lane + 32 j)
    cpAsyncWait<0>();
    __syncwarp();
    {
        uint4 xr[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) xr[j] = *reinterpret_cast<const uint4*>(sm.x + (lane + 32 * j) * 8);
        const __half* rows = sm.gu + warp * kGuWarpHalves - 32 * 8;  // chunk c of row rr at rows + (rr * 128 + c) * 8
#pragma unroll
        for (int rr = 0; rr < kGuRowsWarp; ++rr) {
            const int row = warp * kGuRowsWarp + rr;
            float d = rr == 0 ? dot8(g0, xr[0]) : 0.0f;
#pragma unroll
            for (int j = rr == 0 ? 1 : 0; j < 4; ++j)
                d += dot8(*reinterpret_cast<const uint4*>(rows + (rr * 128 + lane + 32 * j) * 8), xr[j]);
            d = gpu::warpSum(d);
            if (lane == 0) sm.rowOut[row] = d;
        }
    }
    __syncthreads();
    mark<kTrace>(st, w.index, 1, cta, 3);
    clusterWait();
    if (tid < kInterCta) {
        const __half h = __float2half_rn(gpu::silu(sm.rowOut[tid]) * sm.rowOut[kInterCta + tid]);
#pragma unroll
        for (int r = 0; r < kClusterB; ++r) *cluster.map_shared_rank(&sm.hAll[rank * kInterCta + tid], r) = h;
    }
    clusterArrive();
    clusterWait();
    mark<kTrace>(st, w.index, 1, cta, 4);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kDownVecs; ++j) s += dot8(wd[j], *reinterpret_cast<const uint4*>(sm.hAll + (j * kDownThreadsRow + dPart) * 8));
#pragma unroll
    for (int o = 1; o < kDownThreadsRow; o <<= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (dPart == 0) st.downPart[group * kHidden + rank * kDownRowsCta + dRow] = s;
    mark<kTrace>(st, w.index, 1, cta, 5);
    mark<kTrace>(st, w.index, 1, cta, 14);
}

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), int clusterSize, size_t smem, cudaStream_t stream, bool pdl, Args... args)
{
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(kCtas);
    config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    cudaLaunchAttribute attribute[2];
    attribute[0] = gpu::clusterDimAttribute(dim3(clusterSize, 1, 1));
    attribute[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[1].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attribute;
    config.numAttrs = pdl ? 2 : 1;
    check(cudaLaunchKernelEx(&config, kernel, args...), "launch");
}

template <class K>
void prepare(K kernel, size_t smem, const char* name)
{
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), name);
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), name);
    cudaFuncAttributes a{};
    check(cudaFuncGetAttributes(&a, kernel), name);
    std::printf("  %-22s %3d registers, %6zu B shared (dynamic) + %zu static, %zu B local\n", name, a.numRegs, smem,
                a.sharedSizeBytes, a.localSizeBytes);
}

// --- the CPU reference of the same arithmetic ---

float h2f(__half h)
{
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return gpu::ref::halfBitsToFloat(b);
}
float roundHalf(float x) { return gpu::ref::halfBitsToFloat(gpu::ref::floatToHalfBits(x)); }

std::vector<float> download(const void* p, size_t halves)
{
    std::vector<__half> h(halves);
    check(cudaMemcpy(h.data(), p, halves * 2, cudaMemcpyDeviceToHost), "download");
    std::vector<float> f(halves);
    for (size_t i = 0; i < halves; ++i) f[i] = h2f(h[i]);
    return f;
}

// One layer on the host: residual (entering attention) and the 8 down partials in, the same out.
void referenceLayer(const Layer& w, float scale, std::vector<float>& residual, std::vector<float>& downPart)
{
    const auto qkv = download(w.qkv, kCtas * kQkvCta), kc = download(w.k, kKvHeads * kKvHead),
               vc = download(w.v, kKvHeads * kKvHead), o = download(w.o, kCtas * kOCta), gu = download(w.gu, kCtas * kGuCta),
               down = download(w.down, kCtas * kDownCta);
    auto addNorm = [](const std::vector<float>& res, const std::vector<float>& parts, std::vector<float>& sum) {
        sum.assign(kHidden, 0.0f);
        double ss = 0;
        for (int i = 0; i < kHidden; ++i) {
            float s = res[i];
            for (size_t c = 0; c < parts.size() / kHidden; ++c) s += parts[c * kHidden + i];
            sum[i] = s;
            ss += double(s) * s;
        }
        const float r = float(1.0 / std::sqrt(ss / kHidden + kEps));
        std::vector<float> x(kHidden);
        for (int i = 0; i < kHidden; ++i) x[i] = roundHalf(sum[i] * r);
        return x;
    };
    std::vector<float> resA;
    const std::vector<float> x = addNorm(residual, downPart, resA);
    std::vector<float> oPart(kKvHeads * kHidden, 0.0f);
    for (int hd = 0; hd < kKvHeads; ++hd) {
        std::vector<float> q(kHeadOut), merged(kHeadOut);
        for (int r = 0; r < kHeadOut; ++r) {
            const float* row = &qkv[(hd * kCluster + r / kQkvRowsCta) * kQkvCta + (r % kQkvRowsCta) * kHidden];
            double s = 0;
            for (int i = 0; i < kHidden; ++i) s += double(row[i]) * x[i];
            q[r] = roundHalf(float(s));
        }
        for (int g = 0; g < kGroup; ++g) {
            std::vector<double> l(kContext);
            double m = -INFINITY;
            for (int t = 0; t < kContext; ++t) {
                double s = 0;
                for (int d = 0; d < kHeadDim; ++d) s += double(kc[hd * kKvHead + t * kHeadDim + d]) * q[g * kHeadDim + d];
                l[t] = s * scale;
                m = std::max(m, l[t]);
            }
            double total = 0;
            for (int t = 0; t < kContext; ++t) total += (l[t] = std::exp(l[t] - m));
            for (int d = 0; d < kHeadDim; ++d) {
                double a = 0;
                for (int t = 0; t < kContext; ++t) a += l[t] * vc[hd * kKvHead + t * kHeadDim + d];
                merged[g * kHeadDim + d] = roundHalf(float(a / total));
            }
        }
        for (int row = 0; row < kHidden; ++row) {
            const float* wr = &o[(hd * kCluster + row / kOutRowsCta) * kOCta + (row % kOutRowsCta) * kHeadOut];
            double s = 0;
            for (int i = 0; i < kHeadOut; ++i) s += double(wr[i]) * merged[i];
            oPart[hd * kHidden + row] = float(s);
        }
    }
    std::vector<float> resB;
    const std::vector<float> x2 = addNorm(resA, oPart, resB);
    for (int c = 0; c < kGroupsB; ++c) {
        std::vector<float> h(kInterClusterB);
        for (int k = 0; k < kInterClusterB; ++k) {
            const float* base = &gu[(c * kClusterB + k / kInterCta) * kGuCta];
            double g = 0, u = 0;
            for (int i = 0; i < kHidden; ++i) {
                g += double(base[(k % kInterCta) * kHidden + i]) * x2[i];
                u += double(base[(kInterCta + k % kInterCta) * kHidden + i]) * x2[i];
            }
            h[k] = roundHalf(float(g / (1.0 + std::exp(-g)) * u));
        }
        for (int row = 0; row < kHidden; ++row) {
            const float* wr = &down[(c * kClusterB + row / kDownRowsCta) * kDownCta + (row % kDownRowsCta) * kInterClusterB];
            double s = 0;
            for (int i = 0; i < kInterClusterB; ++i) s += double(wr[i]) * h[i];
            downPart[c * kHidden + row] = float(s);
        }
    }
    residual = resB;
}

// One step of the traced kernels in a graph (the last of its replays kept): where a layer's time goes.
template <class Reset>
void traceStep(const std::vector<Layer>& layers, State st, cudaStream_t stream, size_t smemA, size_t smemB, Reset reset)
{
    const size_t n = size_t(kLayers) * 2 * kCtas * kMarks;
    bench::DeviceBuffer buf(n * 8);
    check(cudaMemset(buf.ptr, 0, n * 8), "trace");
    st.trace = static_cast<unsigned long long*>(buf.ptr);
    prepare(attentionHalf<true, true>, smemA, "attention half, traced");
    prepare(mlpHalf<true, true>, smemB, "MLP half, traced");
    reset();
    const double us = bench::graphMicros(stream, 1, [&](int) {
        for (int l = 0; l < kLayers; ++l) {
            launch(attentionHalf<true, true>, kCluster, smemA, stream, true, layers[l], st);
            launch(mlpHalf<true, true>, kClusterB, smemB, stream, true, layers[l], layers[(l + 1) % kLayers], st);
        }
        return true;
    });
    std::vector<unsigned long long> t(n);
    check(cudaMemcpy(t.data(), buf.ptr, n * 8, cudaMemcpyDeviceToHost), "trace");
    auto at = [&](int layer, int half, int cta, int i) { return t[((size_t(layer) * 2 + half) * kCtas + cta) * kMarks + i]; };
    const int lastMark[2] = {8, 5};
    // ns a cycle, from each CTA's globaltimer span against its clock64 span
    double ns = 0, cycles = 0;
    for (int l = 2; l < kLayers - 2; ++l)
        for (int h = 0; h < 2; ++h)
            for (int c = 0; c < kCtas; ++c) {
                ns += double(at(l, h, c, 14) - at(l, h, c, 13));
                cycles += double(at(l, h, c, lastMark[h]) - at(l, h, c, 0));
            }
    const double nsPerCycle = ns / cycles;
    std::printf("\ntraced step: %.1f us (%.2f a layer); %.3f ns a cycle (%.2f GHz)\n", us, us / kLayers, nsPerCycle, 1.0 / nsPerCycle);
    const char* names[2][8] = {{"entry -> PDL wait released", "add + RMSNorm (L2 reads of 9 vectors)", "qkv rows (registers)",
                                "q pushed, cluster barrier", "attention, a warp's tokens (online softmax)",
                                "the CTA's partial pushed, cluster barrier", "merge (local), o landed", "o rows, store"},
                               {"entry -> PDL wait released", "add + RMSNorm", "gate/up rows landed, a warp a row",
                                "SiLU-mul pushed, cluster barrier", "down rows, store"}};
    for (int h = 0; h < 2; ++h) {
        std::printf("\n| %s half, stage | us, mean of CTAs | slowest CTA |\n|---|---|---|\n", h == 0 ? "attention" : "MLP");
        double total = 0;
        for (int i = 1; i <= lastMark[h]; ++i) {
            double sum = 0, worst = 0;
            int count = 0;
            for (int l = 2; l < kLayers - 2; ++l) {
                double lw = 0;
                for (int c = 0; c < kCtas; ++c) {
                    const double d = double(at(l, h, c, i) - at(l, h, c, i - 1)) * nsPerCycle / 1000.0;
                    sum += d, ++count, lw = std::max(lw, d);
                }
                worst += lw;
            }
            const double mean = sum / count;
            if (i > 1) total += mean;
            std::printf("| %s | %.2f | %.2f |\n", names[h][i - 1], mean, worst / (kLayers - 4));
        }
        std::printf("| after the wait, in all | %.2f | |\n", total);
    }
    // kernel boundaries on the globaltimer: from the previous kernel's last exit to this one's wait release
    double gap = 0, spread = 0, span = 0;
    int count = 0;
    for (int l = 2; l < kLayers - 2; ++l)
        for (int h = 0; h < 2; ++h) {
            const int pl = h == 0 ? l - 1 : l, ph = 1 - h;
            unsigned long long prevExit = 0, firstExit = ~0ull, lastExit = 0;
            for (int c = 0; c < kCtas; ++c) prevExit = std::max(prevExit, at(pl, ph, c, 14));
            double release = 0;
            for (int c = 0; c < kCtas; ++c) {
                release += double(at(l, h, c, 13)) + double(at(l, h, c, 1) - at(l, h, c, 0)) * nsPerCycle;
                firstExit = std::min(firstExit, at(l, h, c, 14));
                lastExit = std::max(lastExit, at(l, h, c, 14));
            }
            release /= kCtas;
            gap += (release - double(prevExit)) / 1000.0;
            spread += double(lastExit - firstExit) / 1000.0;
            span += (double(lastExit) - release) / 1000.0;
            ++count;
        }
    // per cluster: when its CTAs entered and left against the kernel's wait release (globaltimer, us)
    for (int h = 0; h < 2; ++h) {
        std::printf("\n%s half, per cluster (layers 2-21, mean): entry (first CTA) / exit (last CTA) against the wait release, "
                    "us; multiprocessors of layer 10\n", h == 0 ? "attention" : "MLP");
        const int clusters = h == 0 ? kKvHeads : kGroupsB, size = h == 0 ? kCluster : kClusterB;
        for (int cl = 0; cl < clusters; ++cl) {
            double entry = 0, exit = 0, worstExit = 0;
            for (int l = 2; l < kLayers - 2; ++l) {
                double release = 0;
                for (int c = 0; c < kCtas; ++c)
                    release += double(at(l, h, c, 13)) + double(at(l, h, c, 1) - at(l, h, c, 0)) * nsPerCycle;
                release /= kCtas;
                unsigned long long first = ~0ull, last = 0;
                for (int c = cl * size; c < (cl + 1) * size; ++c) {
                    first = std::min(first, at(l, h, c, 13));
                    last = std::max(last, at(l, h, c, 14));
                }
                entry += (double(first) - release) / 1000.0;
                exit += (double(last) - release) / 1000.0;
                worstExit = std::max(worstExit, (double(last) - release) / 1000.0);
            }
            std::printf("  cluster %d: entry %+6.2f, exit %5.2f (worst %5.2f); SMs", cl, entry / (kLayers - 4), exit / (kLayers - 4), worstExit);
            for (int c = cl * size; c < (cl + 1) * size; ++c) std::printf(" %llu", at(10, h, c, 15));
            std::printf("\n");
        }
    }
    std::printf("\nkernel boundary (previous kernel's last CTA exit -> this kernel's wait released, mean): %.2f us; "
                "wait released -> last CTA exit: %.2f us; first to last CTA exit: %.2f us (globaltimer)\n",
                gap / count, span / count, spread / count);
}

}  // namespace

int main()
{
    std::printf("bench_head_parallel_layers: the batch-1 decode step as two kernels a layer, partitioned by KV head "
                "(attention in clusters of %d, the MLP in clusters of %d)\n", kCluster, kClusterB);
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "device");
    std::printf("device: %s, %d multiprocessors\n", prop.name, prop.multiProcessorCount);
    // The attention half padded to more than half a multiprocessor's shared memory, so that two of its CTAs
    // never share one, while one MLP CTA still fits beside it: then each GPC holds one cluster of each.
    int perSm = 0, reserved = 0;
    check(cudaDeviceGetAttribute(&perSm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0), "attribute");
    check(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0), "attribute");
    const size_t smemB = sizeof(SmemB);
    const size_t exclusiveA = std::max(sizeof(SmemA), size_t((perSm - 2 * reserved) / 2 + 128));
    std::printf("shared memory: %d B a multiprocessor, %d reserved a CTA; attention half %zu B (%zu padded), MLP half %zu B: "
                "padded + MLP %s, two padded %s\n", perSm, reserved, sizeof(SmemA), exclusiveA, smemB,
                exclusiveA + smemB + 2 * reserved <= size_t(perSm) ? "fit" : "DO NOT FIT",
                2 * exclusiveA + 2 * reserved <= size_t(perSm) ? "fit" : "do not fit");
    size_t smemA = exclusiveA;
    prepare(attentionHalf<true>, smemA, "attention half");
    prepare(attentionHalf<false>, smemA, "attention half, late");
    prepare(mlpHalf<true>, smemB, "MLP half");
    prepare(mlpHalf<false>, smemB, "MLP half, late");

    // Weights: 24 layers of random halves (0.05 for products over 1024 inputs, 0.1 over 256 and 448, 1 for K/V).
    std::vector<std::unique_ptr<bench::DeviceBuffer>> store;
    std::vector<Layer> layers(kLayers);
    for (int l = 0; l < kLayers; ++l) {
        const uint32_t seed = 1000u * (l + 1);
        layers[l].index = l;
        store.push_back(bench::halves(kCtas * kQkvCta, seed + 1, 0.05f));
        layers[l].qkv = static_cast<const __half*>(store.back()->ptr);
        store.push_back(bench::halves(kKvHeads * kKvHead, seed + 2, 1.0f));
        layers[l].k = static_cast<const __half*>(store.back()->ptr);
        store.push_back(bench::halves(kKvHeads * kKvHead, seed + 3, 1.0f));
        layers[l].v = static_cast<const __half*>(store.back()->ptr);
        store.push_back(bench::halves(kCtas * kOCta, seed + 4, 0.1f));
        layers[l].o = static_cast<const __half*>(store.back()->ptr);
        store.push_back(bench::halves(kCtas * kGuCta, seed + 5, 0.05f));
        layers[l].gu = static_cast<const __half*>(store.back()->ptr);
        store.push_back(bench::halves(kCtas * kDownCta, seed + 6, 0.1f));
        layers[l].down = static_cast<const __half*>(store.back()->ptr);
    }
    bench::DeviceBuffer resA(kHidden * 4), resB(kHidden * 4), oPart(kKvHeads * kHidden * 4), downPart(kGroupsB * kHidden * 4),
        newKv(kKvHeads * 2 * kHeadDim * 2);
    State st{static_cast<float*>(resA.ptr), static_cast<float*>(resB.ptr), static_cast<float*>(oPart.ptr),
             static_cast<float*>(downPart.ptr), static_cast<__half*>(newKv.ptr), 1.0f / std::sqrt(float(kHeadDim)), nullptr, 0};
    std::vector<float> input(kHidden);
    for (int i = 0; i < kHidden; ++i) input[i] = std::sin(0.37f * i) * 2.0f;
    auto reset = [&] {
        check(cudaMemcpy(resB.ptr, input.data(), kHidden * 4, cudaMemcpyHostToDevice), "input");
        check(cudaMemset(downPart.ptr, 0, kGroupsB * kHidden * 4), "input");
    };
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

    enum class Run { Both, AttentionOnly, MlpOnly };
    auto step = [&](int numLayers, bool pdl, bool prefetch, Run run) {
        for (int l = 0; l < numLayers; ++l) {
            if (run != Run::MlpOnly) {
                if (prefetch) launch(attentionHalf<true>, kCluster, smemA, stream, pdl, layers[l], st);
                else launch(attentionHalf<false>, kCluster, smemA, stream, pdl, layers[l], st);
            }
            if (run != Run::AttentionOnly) {
                if (prefetch) launch(mlpHalf<true>, kClusterB, smemB, stream, pdl, layers[l], layers[(l + 1) % kLayers], st);
                else launch(mlpHalf<false>, kClusterB, smemB, stream, pdl, layers[l], layers[(l + 1) % kLayers], st);
            }
        }
    };

    // The check: two layers against the CPU reference, with PDL and prefetch (the timed form) and without.
    int failures = 0;
    {
        std::vector<float> residual = input, parts(kGroupsB * kHidden, 0.0f);
        for (int l = 0; l < 2; ++l) referenceLayer(layers[l], st.scale, residual, parts);
        std::vector<float> want(kHidden);
        for (int i = 0; i < kHidden; ++i) {
            want[i] = residual[i];
            for (int c = 0; c < kGroupsB; ++c) want[i] += parts[c * kHidden + i];
        }
        for (int form = 0; form < 3; ++form) {
            reset();
            st.l2Prefetch = form == 2;
            step(2, form != 1, form != 1, Run::Both);
            check(cudaStreamSynchronize(stream), "check run");
            std::vector<float> res(kHidden), dp(kGroupsB * kHidden);
            check(cudaMemcpy(res.data(), resB.ptr, kHidden * 4, cudaMemcpyDeviceToHost), "result");
            check(cudaMemcpy(dp.data(), downPart.ptr, dp.size() * 4, cudaMemcpyDeviceToHost), "result");
            double err = 0, norm = 0;
            for (int i = 0; i < kHidden; ++i) {
                float got = res[i];
                for (int c = 0; c < kGroupsB; ++c) got += dp[c * kHidden + i];
                err += std::isfinite(got) ? double(got - want[i]) * (got - want[i]) : INFINITY;
                norm += double(want[i]) * want[i];
            }
            const double rel = std::sqrt(err / std::max(norm, 1e-30));
            const bool ok = rel < 2e-3;
            failures += !ok;
            std::printf("check, 2 layers, %s: relative L2 error %.2e against the CPU reference (|want| %.1f): %s\n",
                        form == 0 ? "PDL, prefetch" : form == 1 ? "no PDL, loads after the wait" : "PDL, prefetch, L2 prefetch", rel, std::sqrt(norm), ok ? "ok" : "FAILED");
        }
    }

    const double copy = bench::copyBandwidth();
    const double layerBytes = double(kLayerHalves) * 2;
    const double floorUs = layerBytes / copy * 1e6;
    std::printf("copy bandwidth %.0f GB/s; a layer's bytes %.1f MB: %.2f us a layer at copy bandwidth, %.1f us a step\n",
                copy / 1e9, layerBytes / 1e6, floorUs, floorUs * kLayers);
    std::printf("\n| way | us a step (24 layers) | us a layer | share of copy bandwidth |\n|---|---|---|---|\n");
    struct Variant {
        const char* name;
        bool pdl, prefetch;
        Run run;
        bool l2;
        bool exclusive;  // the attention half padded (exclusiveA)
        double bytes;  // share of a layer's bytes it moves
    };
    const double aBytes = double(kCtas * (kQkvCta + kOCta) + 2 * kKvHeads * kKvHead) / kLayerHalves;
    const Variant variants[] = {
        {"both kernels, PDL, weights before the wait, attention half padded", true, true, Run::Both, false, true, 1.0},
        {"the same, attention half not padded (two may share a multiprocessor)", true, true, Run::Both, false, false, 1.0},
        {"padded, the next kernel's slices into the L2 at entry", true, true, Run::Both, true, true, 1.0},
        {"padded, weights after the wait", true, false, Run::Both, false, true, 1.0},
        {"padded, no PDL", false, true, Run::Both, false, true, 1.0},
        {"attention half alone, PDL, padded", true, true, Run::AttentionOnly, false, true, aBytes},
        {"MLP half alone, PDL", true, true, Run::MlpOnly, false, true, 1.0 - aBytes},
    };
    for (int round = 0; round < 2; ++round)
        for (const Variant& v : variants) {
            reset();
            st.l2Prefetch = v.l2;
            smemA = v.exclusive ? exclusiveA : sizeof(SmemA);
            const double us = bench::graphMicros(stream, 4, [&](int) {
                step(kLayers, v.pdl, v.prefetch, v.run);
                return true;
            });
            std::printf("| %s | %.1f | %.2f | %.0f %% |\n", v.name, us, us / kLayers, 100.0 * floorUs * v.bytes / (us / kLayers));
        }
    st.l2Prefetch = 0;
    for (int exclusive = 1; exclusive >= 0; --exclusive) {
        smemA = exclusive ? exclusiveA : sizeof(SmemA);
        std::printf("\n### traced, attention half %s\n", exclusive ? "padded" : "not padded");
        traceStep(layers, st, stream, smemA, smemB, reset);
    }
    std::printf("\n(the kernel chain's 24 layers: ~562 us, 23.4 us a layer, perf.md call 143; the skeleton's best 18.0-18.4)\n");
    return failures ? 1 : 0;
}
