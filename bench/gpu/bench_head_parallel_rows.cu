// bench_head_parallel_rows: the attention half of a head-parallel decode layer for 16 and 32 decode rows,
// as a skeleton (timing only): how close to its bytes can one kernel a layer get that does a KV head's
// qkv rows, the attention of every row and o's rows inside a thread-block cluster of 16? The batch-1
// head-parallel decoder (gpu/kernels/head_parallel_decode.cu) does this for one row; at 32 rows the
// chain spends 39.5 us a layer on attention alone and ~72 us on the whole layer, for 42 us of bytes
// (docs/perf.md, the fused MLP experiment of calls 159-160, which says why the MLP needs this structure).
//
// A cluster of 16 CTAs per KV head (8 clusters), 256 threads. Each CTA:
//   - before the PDL wait: its 32 qkv rows as tensor-core fragments in registers, its 64 rows of o (the
//     head's 256 columns) into shared memory (cp.async);
//   - after it: the batch's x into shared memory; qkv on mma.sync (the weight as the 16-row operand, the
//     rows as the 8-wide one, K in quarters over the warps); each row's 32 values pushed into the CTA that
//     owns the row's attention (row s: CTA s % 16; distributed shared memory);
//   - the attention of its rows (1 or 2) over the whole context, 8 or 4 warps a row, each a stretch of
//     keys: a lane a key, 32 keys an iteration (or, with LECTOR_ROWS_LANE_PER_KEY=0, the batch-1 kernels'
//     loop: lane = 4 x key + quarter of the dims, groups of 8, LECTOR_ROWS_DEPTH of them in flight); the
//     warps' partials merged; the row's 256 outputs pushed into every CTA;
//   - o on mma.sync: its 64 rows times every row's 256 outputs, a float32 partial per KV head.
// Left out (a skeleton): the add + RMSNorm (x is the same every layer), RoPE and QK-norm, the new token's
// K/V write, the MLP. Nothing is checked but that the partials come out finite. LECTOR_ROWS_HEADS=N (the
// environment) launches only N KV heads' clusters (perf.md, calls 161-164: 8 make two waves here).
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_head_parallel_rows.cu \
//        -o build-gpu/bench_head_parallel_rows
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/common.cuh"

namespace bench = lector::bench;
namespace gpu = lector::gpu;
namespace cg = cooperative_groups;

namespace {

using bench::check;

constexpr int kHidden = 1024, kKvHeads = 8, kHeadDim = 128, kLayers = 24, kBlock = 16;
constexpr int kCluster = 16, kThreads = 256, kWarps = 8;
constexpr int kQkvRowsCta = 32, kHeadOut = 256, kOutRowsCta = 64, kQkvAll = 4096, kOIn = 2048;
constexpr int kXStride = kHidden + 32, kAStride = kHeadOut + 32;  // 64 mod 128 bytes: conflict-free fragments
// The key loop. 1: each lane one key of 32 (its whole dot products, K and V of the 32 loaded at once, no
// shuffles in the logits); 0: the batch-1 kernels' loop (lane = 4 x key + quarter, groups of 8, kDepth of
// them in registers: the one computed and the rest loading).
#ifndef LECTOR_ROWS_LANE_PER_KEY
#define LECTOR_ROWS_LANE_PER_KEY 1
#endif
// CTAs a multiprocessor the registers are capped for (2: at most 128 a thread, so that at 16 rows, 95 KB of
// shared memory, two clusters can share a GPC).
#ifndef LECTOR_ROWS_CTAS_PER_SM
#define LECTOR_ROWS_CTAS_PER_SM 1
#endif
#if !LECTOR_ROWS_LANE_PER_KEY
#ifndef LECTOR_ROWS_DEPTH
#define LECTOR_ROWS_DEPTH 2
#endif
constexpr int kDepth = LECTOR_ROWS_DEPTH;
#endif

struct LayerPtrs {
    const __half *qkv, *o, *keys, *values;
};
struct Params {
    LayerPtrs layers[kLayers];
    const __half* x;      // [rows, 1024]
    const int* table;     // [rows, maxBlocks]
    int maxBlocks;
    int context;
    float scaleLog2;
    float* oPartials;     // [8][rows][1024]
};

template <int kTiles>
struct Smem {
    uint4 o[4 * 8 * 2 * 32];                     // o rows as fragments [m tile][k block][half][lane]
    alignas(16) __half x[kTiles * 8 * kXStride];
    float4 red[3 * 2 * kTiles * 32];             // qkv's k quarters 1-3 (o's k half 1 reuses it)
    alignas(16) __half qkvLocal[kTiles * 8 * kQkvRowsCta];  // this CTA's 32 values of each row
    alignas(16) __half seqQkv[2][4 * kHeadDim];  // the owned rows' q0 | q1 | k | v, pushed by the cluster
    alignas(16) float qf[2][2 * kHeadDim];       // the owned rows' queries in float32 (lane-per-key loop)
    alignas(16) float wpart[kWarps][kHeadOut];
    float wm[kWarps][2], wl[kWarps][2];
    alignas(16) __half attnAll[kTiles * 8 * kAStride];  // every row's attention output, pushed
};

#if !LECTOR_ROWS_LANE_PER_KEY
__device__ __forceinline__ float dot8h(const uint4 a, const uint4 b)
{
    const __half2* x = reinterpret_cast<const __half2*>(&a);
    const __half2* y = reinterpret_cast<const __half2*>(&b);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 u = __half22float2(x[i]), v = __half22float2(y[i]);
        s = fmaf(u.x, v.x, s);
        s = fmaf(u.y, v.y, s);
    }
    return s;
}
#endif

template <int kTiles>
__global__ void __launch_bounds__(kThreads, LECTOR_ROWS_CTAS_PER_SM) attentionRowsKernel(const __grid_constant__ Params p, int layer)
{
    constexpr int R = kTiles * 8;
    extern __shared__ __align__(16) uint8_t smemRaw[];
    Smem<kTiles>& sm = *reinterpret_cast<Smem<kTiles>*>(smemRaw);
    const cg::cluster_group cluster = cg::this_cluster();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int head = blockIdx.x / kCluster, rank = static_cast<int>(cluster.block_rank());
    const LayerPtrs w = p.layers[layer];

    // Before the wait: qkv fragments (warp: m tile warp & 1, k quarter warp >> 1), o rows by cp.async.
    const int m = warp & 1, kq = warp >> 1;
    const int rowBase = rank < 8 ? kHeadOut * head + kQkvRowsCta * rank
                      : rank < 12 ? 2048 + kHeadDim * head + kQkvRowsCta * (rank - 8)
                                  : 3072 + kHeadDim * head + kQkvRowsCta * (rank - 12);
    uint4 wq[8][2];
#pragma unroll
    for (int kbi = 0; kbi < 8; ++kbi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
            wq[kbi][h] = gpu::loadNc16(w.qkv + int64_t(rowBase + m * 16 + g + 8 * h) * kHidden + (kq * 8 + kbi) * 32 + t * 8);
    for (int q = tid; q < 4 * 8 * 2 * 32; q += kThreads) {
        const int ln = q & 31, half = (q >> 5) & 1, kb = (q >> 6) & 7, mt = q >> 9;
        const int row = rank * kOutRowsCta + mt * 16 + (ln >> 2) + 8 * half;
        gpu::cpAsync16(&sm.o[q], w.o + int64_t(row) * kOIn + head * kHeadOut + kb * 32 + (ln & 3) * 8, true);
    }
    gpu::cpAsyncCommit();
    gpu::clusterArriveRelaxed();
    gpu::allowDependentLaunch();
    gpu::gridDependencyWait();

    for (int i = tid; i < R * (kHidden / 8); i += kThreads)
        gpu::cpAsync16(&sm.x[(i / 128) * kXStride + (i % 128) * 8], p.x + int64_t(i / 128) * kHidden + (i % 128) * 8, true);
    gpu::cpAsyncCommit();
    gpu::cpAsyncWait<0>();
    __syncthreads();

    // qkv: the CTA's 32 rows times the batch, K in quarters.
    float acc[kTiles][4];
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#pragma unroll
    for (int kbi = 0; kbi < 8; ++kbi) {
        const int kb = kq * 8 + kbi;
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
            const uint4 b = *reinterpret_cast<const uint4*>(&sm.x[(nt * 8 + g) * kXStride + kb * 32 + t * 8]);
            gpu::mmaM16N8K16<__half>(acc[nt], wq[kbi][0].x, wq[kbi][1].x, wq[kbi][0].y, wq[kbi][1].y, b.x, b.y);
            gpu::mmaM16N8K16<__half>(acc[nt], wq[kbi][0].z, wq[kbi][1].z, wq[kbi][0].w, wq[kbi][1].w, b.z, b.w);
        }
    }
    if (kq > 0)
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt)
            sm.red[(((kq - 1) * 2 + m) * kTiles + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
    __syncthreads();
    if (kq == 0) {
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
#pragma unroll
            for (int q = 0; q < 3; ++q) {
                const float4 o = sm.red[((q * 2 + m) * kTiles + nt) * 32 + lane];
                acc[nt][0] += o.x, acc[nt][1] += o.y, acc[nt][2] += o.z, acc[nt][3] += o.w;
            }
            const int r0 = nt * 8 + 2 * t, j = m * 16 + g;
            sm.qkvLocal[r0 * kQkvRowsCta + j] = __float2half(acc[nt][0]);
            sm.qkvLocal[(r0 + 1) * kQkvRowsCta + j] = __float2half(acc[nt][1]);
            sm.qkvLocal[r0 * kQkvRowsCta + j + 8] = __float2half(acc[nt][2]);
            sm.qkvLocal[(r0 + 1) * kQkvRowsCta + j + 8] = __float2half(acc[nt][3]);
        }
    }
    __syncthreads();
    gpu::clusterWaitAcquire();  // every CTA of the cluster runs
    if (tid < R * 4) {
        const int s = tid >> 2, part = tid & 3;
        const uint4 v = *reinterpret_cast<const uint4*>(&sm.qkvLocal[s * kQkvRowsCta + part * 8]);
        *cluster.map_shared_rank(reinterpret_cast<uint4*>(&sm.seqQkv[s / 16][rank * kQkvRowsCta + part * 8]), s % 16) = v;
    }
    gpu::clusterArriveRelease();
    gpu::clusterWaitAcquire();

    // Attention of the owned rows: warpsPerRow warps a row, each a stretch of keys, groups of 8.
    constexpr int kOwned = R / 16, kWarpsRow = kWarps / kOwned;
    const int slot = warp / kWarpsRow, wIn = warp % kWarpsRow, seq = rank + 16 * slot;
#if LECTOR_ROWS_LANE_PER_KEY
    // Stretches of whole blocks; 32 keys an iteration, lane = key: K row (256 B) and the 32 V rows' 4 dims
    // of this lane (8 B each) loaded at once, then the dot products against q in shared memory
    // (broadcast reads), the softmax over the 32 by warp reductions, p x V.
    const int stretch = (p.context + kWarpsRow * kBlock - 1) / (kWarpsRow * kBlock) * kBlock;
    const int k0 = wIn * stretch, k1 = min(p.context, k0 + stretch);
    for (int i = lane; i < 2 * kHeadDim; i += 32)
        if (wIn == 0) sm.qf[slot][i] = __half2float(sm.seqQkv[slot][i]);
    __syncthreads();
    const int* table = p.table + int64_t(seq) * p.maxBlocks;
    float mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, out[2][4] = {};
    const float4* q4 = reinterpret_cast<const float4*>(sm.qf[slot]);
    for (int base = k0; base < k1; base += 32) {
        const int b0 = table[base / kBlock], b1 = base / kBlock + 1 < p.maxBlocks ? table[base / kBlock + 1] : b0;
        auto rowOf = [&](int j) -> int64_t {  // key base + j's K/V row of this head
            return (int64_t(j < kBlock ? b0 : b1) * kBlock + j % kBlock) * (kKvHeads * kHeadDim) + head * kHeadDim;
        };
        const bool live = base + lane < k1;
        const int64_t myRow = rowOf(live ? lane : 0);
        uint4 kr[16];
#pragma unroll
        for (int c = 0; c < 16; ++c) kr[c] = gpu::loadNc16(w.keys + myRow + c * 8);
        uint2 vr[32];
#pragma unroll
        for (int j = 0; j < 32; ++j) vr[j] = base + j < k1 ? *reinterpret_cast<const uint2*>(w.values + rowOf(j) + 4 * lane) : make_uint2(0, 0);
        float d0 = 0.0f, d1 = 0.0f;
#pragma unroll
        for (int c = 0; c < 16; ++c) {
            const __half2* e = reinterpret_cast<const __half2*>(&kr[c]);
            const float4 qa0 = q4[c * 2], qb0 = q4[c * 2 + 1], qa1 = q4[32 + c * 2], qb1 = q4[32 + c * 2 + 1];
            const float2 k01 = __half22float2(e[0]), k23 = __half22float2(e[1]), k45 = __half22float2(e[2]), k67 = __half22float2(e[3]);
            d0 = fmaf(k01.x, qa0.x, d0), d0 = fmaf(k01.y, qa0.y, d0), d0 = fmaf(k23.x, qa0.z, d0), d0 = fmaf(k23.y, qa0.w, d0);
            d0 = fmaf(k45.x, qb0.x, d0), d0 = fmaf(k45.y, qb0.y, d0), d0 = fmaf(k67.x, qb0.z, d0), d0 = fmaf(k67.y, qb0.w, d0);
            d1 = fmaf(k01.x, qa1.x, d1), d1 = fmaf(k01.y, qa1.y, d1), d1 = fmaf(k23.x, qa1.z, d1), d1 = fmaf(k23.y, qa1.w, d1);
            d1 = fmaf(k45.x, qb1.x, d1), d1 = fmaf(k45.y, qb1.y, d1), d1 = fmaf(k67.x, qb1.z, d1), d1 = fmaf(k67.y, qb1.w, d1);
        }
        float pr[2];
        const float s[2] = {live ? d0 * p.scaleLog2 : -INFINITY, live ? d1 * p.scaleLog2 : -INFINITY};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float mNew = fmaxf(mx[h], gpu::warpMax(s[h]));
            const float corr = mx[h] == -INFINITY ? 0.0f : gpu::fastExp2(mx[h] - mNew);
            pr[h] = live ? gpu::fastExp2(s[h] - mNew) : 0.0f;
            l[h] = l[h] * corr + gpu::warpSum(pr[h]);
            mx[h] = mNew;
#pragma unroll
            for (int e = 0; e < 4; ++e) out[h][e] *= corr;
        }
#pragma unroll
        for (int j = 0; j < 32; ++j) {
            const float p0 = __shfl_sync(0xffffffffu, pr[0], j), p1 = __shfl_sync(0xffffffffu, pr[1], j);
            const __half2* e = reinterpret_cast<const __half2*>(&vr[j]);
            const float2 a = __half22float2(e[0]), b = __half22float2(e[1]);
            out[0][0] = fmaf(p0, a.x, out[0][0]), out[0][1] = fmaf(p0, a.y, out[0][1]);
            out[0][2] = fmaf(p0, b.x, out[0][2]), out[0][3] = fmaf(p0, b.y, out[0][3]);
            out[1][0] = fmaf(p1, a.x, out[1][0]), out[1][1] = fmaf(p1, a.y, out[1][1]);
            out[1][2] = fmaf(p1, b.x, out[1][2]), out[1][3] = fmaf(p1, b.y, out[1][3]);
        }
    }
#else
    const int stretch = (p.context + kWarpsRow * 8 - 1) / (kWarpsRow * 8) * 8;
    const int k0 = wIn * stretch, k1 = min(p.context, k0 + stretch);
    const int tq = lane >> 2, quarter = lane & 3;
    uint4 qc[2][4];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < 4; ++j) qc[h][j] = *reinterpret_cast<const uint4*>(&sm.seqQkv[slot][h * kHeadDim + (quarter * 4 + j) * 8]);
    const int* table = p.table + int64_t(seq) * p.maxBlocks;
    auto rowOf = [&](int key) -> int64_t {  // element offset of key's K/V row of this head
        return (int64_t(table[key / kBlock]) * kBlock + key % kBlock) * (kKvHeads * kHeadDim) + head * kHeadDim;
    };
    float mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, out[2][4] = {};
    // kDepth groups of 8 keys in registers: the one computed and kDepth - 1 loading.
    uint4 kBuf[kDepth][4];
    uint2 vBuf[kDepth][8];
    auto load = [&](int base, uint4 (&kr)[4], uint2 (&vr)[8]) {
        const int key = min(base + tq, k1 - 1);
        const int64_t row = rowOf(max(key, 0));
#pragma unroll
        for (int j = 0; j < 4; ++j) kr[j] = gpu::loadNc16(w.keys + row + (quarter * 4 + j) * 8);
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int64_t rowU = __shfl_sync(0xffffffffu, row, 4 * u);
            vr[u] = *reinterpret_cast<const uint2*>(w.values + rowU + 4 * lane);
        }
    };
    auto attend = [&](int base, const uint4 (&kr)[4], const uint2 (&vr)[8]) {
        const bool live = base + tq < k1;
        float pr[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float d = 0.0f;
#pragma unroll
            for (int j = 0; j < 4; ++j) d += dot8h(kr[j], qc[h][j]);
            d += __shfl_xor_sync(0xffffffffu, d, 1);
            d += __shfl_xor_sync(0xffffffffu, d, 2);
            const float s = live ? d * p.scaleLog2 : -INFINITY;
            float top = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, 4));
            top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 8));
            top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 16));
            const float mNew = fmaxf(mx[h], top);
            const float corr = mx[h] == -INFINITY ? 0.0f : gpu::fastExp2(mx[h] - mNew);
            pr[h] = live ? gpu::fastExp2(s - mNew) : 0.0f;
            float ps = pr[h] + __shfl_xor_sync(0xffffffffu, pr[h], 4);
            ps += __shfl_xor_sync(0xffffffffu, ps, 8);
            ps += __shfl_xor_sync(0xffffffffu, ps, 16);
            l[h] = l[h] * corr + ps;
            mx[h] = mNew;
#pragma unroll
            for (int e = 0; e < 4; ++e) out[h][e] *= corr;
        }
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const float p0 = __shfl_sync(0xffffffffu, pr[0], 4 * u), p1 = __shfl_sync(0xffffffffu, pr[1], 4 * u);
            const __half2* e = reinterpret_cast<const __half2*>(&vr[u]);
            const float2 a = __half22float2(e[0]), b = __half22float2(e[1]);
            out[0][0] = fmaf(p0, a.x, out[0][0]), out[0][1] = fmaf(p0, a.y, out[0][1]);
            out[0][2] = fmaf(p0, b.x, out[0][2]), out[0][3] = fmaf(p0, b.y, out[0][3]);
            out[1][0] = fmaf(p1, a.x, out[1][0]), out[1][1] = fmaf(p1, a.y, out[1][1]);
            out[1][2] = fmaf(p1, b.x, out[1][2]), out[1][3] = fmaf(p1, b.y, out[1][3]);
        }
    };
#pragma unroll
    for (int d = 0; d + 1 < kDepth; ++d)
        if (k0 + 8 * d < k1) load(k0 + 8 * d, kBuf[d], vBuf[d]);
    for (int base = k0; base < k1; base += 8 * kDepth) {
#pragma unroll
        for (int d = 0; d < kDepth; ++d) {
            const int b = base + 8 * d;
            if (b >= k1) break;
            if (b + 8 * (kDepth - 1) < k1) load(b + 8 * (kDepth - 1), kBuf[(d + kDepth - 1) % kDepth], vBuf[(d + kDepth - 1) % kDepth]);
            attend(b, kBuf[d], vBuf[d]);
        }
    }
#endif
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        *reinterpret_cast<float4*>(&sm.wpart[warp][h * kHeadDim + 4 * lane]) = make_float4(out[h][0], out[h][1], out[h][2], out[h][3]);
        if (lane == 0) sm.wm[warp][h] = mx[h], sm.wl[warp][h] = l[h];
    }
    __syncthreads();
#pragma unroll
    for (int sl = 0; sl < kOwned; ++sl) {  // merge the row's warps; its 256 outputs into every CTA
        const int h = tid / kHeadDim;
        float top = -INFINITY;
        for (int v = sl * kWarpsRow; v < (sl + 1) * kWarpsRow; ++v) top = fmaxf(top, sm.wm[v][h]);
        float sum = 0.0f, o = 0.0f;
        for (int v = sl * kWarpsRow; v < (sl + 1) * kWarpsRow; ++v) {
            const float e = sm.wm[v][h] == -INFINITY ? 0.0f : gpu::fastExp2(sm.wm[v][h] - top);
            sum = fmaf(sm.wl[v][h], e, sum);
            o = fmaf(sm.wpart[v][tid], e, o);
        }
        const __half val = __float2half(o / sum);
        const int s = rank + 16 * sl;
        for (int dst = 0; dst < kCluster; ++dst) *cluster.map_shared_rank(&sm.attnAll[s * kAStride + tid], dst) = val;
    }
    gpu::clusterArriveRelease();
    gpu::cpAsyncWait<0>();
    gpu::clusterWaitAcquire();
    __syncthreads();

    // o: 64 rows x the head's 256 outputs of every row; warp: m tile warp & 3, k half warp >> 2.
    const int mt = warp & 3, kh = warp >> 2;
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#pragma unroll
    for (int kbi = 0; kbi < 4; ++kbi) {
        const int kb = kh * 4 + kbi;
        const uint4 a0 = sm.o[((mt * 8 + kb) * 2) * 32 + lane], a1 = sm.o[((mt * 8 + kb) * 2 + 1) * 32 + lane];
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
            const uint4 b = *reinterpret_cast<const uint4*>(&sm.attnAll[(nt * 8 + g) * kAStride + kb * 32 + t * 8]);
            gpu::mmaM16N8K16<__half>(acc[nt], a0.x, a1.x, a0.y, a1.y, b.x, b.y);
            gpu::mmaM16N8K16<__half>(acc[nt], a0.z, a1.z, a0.w, a1.w, b.z, b.w);
        }
    }
    if (kh == 1)
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) sm.red[(mt * kTiles + nt) * 32 + lane] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
    __syncthreads();
    if (kh == 0) {
        float* part = p.oPartials + int64_t(head) * R * kHidden;
        const int o0 = rank * kOutRowsCta + mt * 16 + g;
#pragma unroll
        for (int nt = 0; nt < kTiles; ++nt) {
            const float4 o = sm.red[(mt * kTiles + nt) * 32 + lane];
            const int r0 = nt * 8 + 2 * t;
            part[r0 * kHidden + o0] = acc[nt][0] + o.x, part[r0 * kHidden + o0 + 8] = acc[nt][2] + o.z;
            part[(r0 + 1) * kHidden + o0] = acc[nt][1] + o.y, part[(r0 + 1) * kHidden + o0 + 8] = acc[nt][3] + o.w;
        }
    }
}

template <int kTiles>
void run(int context, double copyGbs)
{
    constexpr int R = kTiles * 8;
    const int maxBlocks = (context + kBlock - 1) / kBlock;
    const int numBlocks = R * maxBlocks;
    std::vector<std::unique_ptr<bench::DeviceBuffer>> keep;
    Params p{};
    uint32_t seed = 1;
    for (int l = 0; l < kLayers; ++l) {
        keep.push_back(bench::halves(size_t(kQkvAll) * kHidden, seed++, 0.03f));
        p.layers[l].qkv = static_cast<const __half*>(keep.back()->ptr);
        keep.push_back(bench::halves(size_t(kHidden) * kOIn, seed++, 0.02f));
        p.layers[l].o = static_cast<const __half*>(keep.back()->ptr);
        keep.push_back(bench::halves(size_t(numBlocks) * kBlock * kKvHeads * kHeadDim, seed++, 1.0f));
        p.layers[l].keys = static_cast<const __half*>(keep.back()->ptr);
        keep.push_back(bench::halves(size_t(numBlocks) * kBlock * kKvHeads * kHeadDim, seed++, 1.0f));
        p.layers[l].values = static_cast<const __half*>(keep.back()->ptr);
    }
    keep.push_back(bench::halves(size_t(R) * kHidden, seed++, 1.0f));
    p.x = static_cast<const __half*>(keep.back()->ptr);
    std::vector<int> ids(numBlocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(3));
    auto table = bench::upload(ids);
    p.table = static_cast<const int*>(table->ptr);
    p.maxBlocks = maxBlocks;
    p.context = context;
    p.scaleLog2 = 1.4426950408889634f / std::sqrt(float(kHeadDim));
    bench::DeviceBuffer partials(size_t(kKvHeads) * R * kHidden * 4);
    p.oPartials = static_cast<float*>(partials.ptr);
    check(cudaDeviceSynchronize(), "fill");

    const size_t smem = sizeof(Smem<kTiles>);
    check(cudaFuncSetAttribute(attentionRowsKernel<kTiles>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), "smem");
    check(cudaFuncSetAttribute(attentionRowsKernel<kTiles>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), "cluster");
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    // LECTOR_ROWS_HEADS=7: only 7 KV heads' clusters (the GPCs of this H200 that hold a cluster of 16).
    const char* heads = std::getenv("LECTOR_ROWS_HEADS");
    const int numHeads = heads ? std::clamp(std::atoi(heads), 1, kKvHeads) : kKvHeads;
    auto launch = [&](int l) {
        return gpu::launchKernelInClusters(attentionRowsKernel<kTiles>, dim3(numHeads * kCluster), dim3(kThreads), smem, stream,
                                           dim3(kCluster, 1, 1), p, l) == cudaSuccess;
    };
    const double us = bench::graphMicros(stream, kLayers, launch);
    std::vector<float> h(size_t(kKvHeads) * R * kHidden);
    check(cudaMemcpy(h.data(), partials.ptr, h.size() * 4, cudaMemcpyDeviceToHost), "partials");
    const bool finite = std::all_of(h.begin(), h.end(), [](float v) { return std::isfinite(v); });
    const double kvBytes = double(R) * context * numHeads * kHeadDim * 2 * 2;
    const double weightBytes = (double(kQkvAll) * kHidden + double(kHidden) * kOIn) * 2 * numHeads / kKvHeads;
    const double floorUs = (kvBytes + weightBytes) / (copyGbs * 1e3);
    std::printf("| %d | %d | %.2f | %.2f | %.2f | %.1f %% | %zu | %s |\n", R, context, us, kvBytes / (copyGbs * 1e3),
                floorUs, 100.0 * floorUs / us, smem, finite ? "finite" : "NOT FINITE");
    cudaStreamDestroy(stream);
}

}  // namespace

int main()
{
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "device");
    const double copy = bench::copyBandwidth() / 1e9;
    std::printf("bench_head_parallel_rows on %s (%d SMs); copy bandwidth %.0f GB/s\n\n", prop.name, prop.multiProcessorCount, copy);
    std::printf("| rows | context | us a layer (24 in a graph) | K/V at copy bandwidth | K/V + qkv + o weights at copy bandwidth | "
                "of copy bandwidth | shared memory | partials |\n|---|---|---|---|---|---|---|---|\n");
    for (int context : {1076, 2048}) {
        run<2>(context, copy);
        run<4>(context, copy);
    }
    return 0;
}
