// SIMT paged attention shared by decode and the SIMT prefill path (internal to gpu/kernels; include
// only from .cu). One CTA = one query row (a decode sequence, or one new prefill token) x one KV head
// x one split-K partition; it computes all G query heads of that KV head, so K and V are read once
// for the whole group.
//
// Inside a CTA: 4 warps take the partition's KV blocks round-robin; in a warp each token is read by
// D / kVec lanes with one 16-byte load each (two tokens per warp step for 16-bit types), all 16
// tokens of a block loaded before the first use. The two-pass variants of 16-bit types compute a
// block's logits on the tensor cores instead, K loaded as mma fragments (kMmaLogits below).
// Partitions of more than one block per warp make one pass (attendOnline): each warp loads a block's K
// and V together and keeps its own running max, sum and p * v (online softmax), so each block costs
// one round trip to memory and the partition's length is not bounded by shared memory. The
// short-partition and cluster variants, whose K and V are mostly in registers before the wait, make
// two: pass 1 writes scaled logits to shared memory, the block finds max and sum, pass 2 accumulates
// p * v. Warps merge through shared memory. With several
// partitions the CTA stores its unnormalised output, max and sum, and the last CTA of its (row, KV
// head) to finish merges them (flash-decoding without a second kernel: a ticket counter per (row, KV
// head), returned to zero by that last CTA).
//
// Split-K partitions divide each row's own context into equal whole-block shares: a row of n blocks
// takes ceil(n / (partitionLen / 16)) partitions of n / parts blocks (rounded), not partitionLen-key
// partitions and a short last one, so the CTAs of a row finish together (at context 1076 and 256-key
// partitions: five of 208-224 keys instead of four of 256 and one of 52). With rowPartitions P the
// row takes min(P, n) shares whatever its length: the graphed steps of more than a few sequences,
// whose grid then does not grow with the graph's context bound.
//
// Short partitions (one block per warp: the graphed decode steps of a few sequences) load K and V of
// their blocks up front, before waiting for the previous kernel (kPreBlocks below); the one-pass
// variant loads its first block per warp that way.
//
// Cluster merge (decode only, sm_90; the graphed steps of one sequence): a fixed number P of
// partitions per (row, KV head), each the CTA of one thread-block cluster, split the row's own context
// between them (their lengths follow the context, so a graph sized for 8192 tokens launches no empty
// CTAs), load up to two blocks per warp before the wait, and merge through distributed shared memory:
// every CTA pushes each slice of its partial result into the CTA that owns that slice, one cluster
// barrier, then each CTA merges and writes its own slice. That replaces the ticket's L2 round trips
// (fence, atomic, loading the partials) with one barrier.
#pragma once

#include <cooperative_groups.h>

#include <algorithm>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/paged_decode_attention.cuh"
#include "gpu/kernels/qk_norm_rope_warp.cuh"

namespace lector::gpu::detail {

constexpr int kAttnThreads = 128;
constexpr int kAttnWarps = kAttnThreads / 32;

struct SimtArgs {
    const void* query;           // [numRows, numQHeads, D], queryRowStride
    void* out;                   // [numRows, numQHeads, D], outRowStride
    const void* keyCache;        // [numBlocks, kKvBlockSize, numKvHeads, D]
    const void* valueCache;
    const int32_t* blockTable;   // [numSeqs, blockTableStride]
    const int32_t* contextLens;  // [numSeqs]
    const int32_t* cuSeqlensQ;   // [numSeqs + 1] for prefill rows; nullptr: row r is decode sequence r
    float* workspace;            // split-K partials, layout in partialsOf()
    int32_t* counters;           // split-K tickets [numRows * numKvHeads], zero before and after a launch
    int64_t queryRowStride;
    int64_t outRowStride;
    int64_t blockTableStride;
    int numRows;
    int numSeqs;
    int numQHeads;
    int numKvHeads;
    int numBlocks;
    int partitionLen;            // keys per CTA (multiple of kKvBlockSize); covers maxContextLen if unsplit
    int numPartitions;
    int rowPartitions;           // > 0: each row takes min(rowPartitions, its blocks) equal shares (one pass)
    float scale;
    QkNormRopeParams rope;       // rope.key set (decode rows, one pass): query raw, rotated here (kRope)
};

struct RowInfo {
    int seq;
    int numKeys;  // causal limit: keys [0, numKeys) of sequence seq
};

__device__ __forceinline__ RowInfo rowInfo(const SimtArgs& a, int row)
{
    if (!a.cuSeqlensQ) return {row, a.contextLens[row]};
    int lo = 0, hi = a.numSeqs - 1;  // the last sequence whose first token is <= row
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (a.cuSeqlensQ[mid] <= row) lo = mid;
        else hi = mid - 1;
    }
    const int queryLen = a.cuSeqlensQ[lo + 1] - a.cuSeqlensQ[lo];
    return {lo, a.contextLens[lo] - queryLen + (row - a.cuSeqlensQ[lo]) + 1};
}

// Split-K partials in the workspace: out [rows, qHeads, parts, D], then max and sum [rows, qHeads, parts].
struct Partials {
    float* out;
    float* maxLogit;
    float* expSum;
};

template <int D>
__device__ __forceinline__ Partials partialsOf(const SimtArgs& a)
{
    const int64_t n = int64_t(a.numRows) * a.numQHeads * a.numPartitions;
    return {a.workspace, a.workspace + n * D, a.workspace + n * D + n};
}

template <class T>
__device__ __forceinline__ float softmaxExp(float x)
{
    if constexpr (sizeof(T) == 4) return expf(x);  // float32 is the parity path: keep full precision
    else return __expf(x);
}

// Merges the split-K partitions of (row, KV head): each of its G query heads gets its partitions'
// outputs weighted by exp(max_i - max) / total (flash-decoding). Reads what other CTAs wrote, through L2
// (__ldcg, never a stale L1 line). Max and sum of every partition are loaded at once into shared memory
// (`scratch`, scratchFloats); a warp per query head turns them into weights; then each thread loads a
// chunk of partitions of all its output elements before summing them (kChunk below), so the merge costs
// a few L2 round trips, not one per partition.
template <class T, int D, int G, bool kEarlyLoads>
__device__ void mergePartitions(const SimtArgs& a, int row, int kvHead, int parts, T* out, float* scratch,
                                int scratchFloats)
{
    const Partials p = partialsOf<D>(a);
    const int64_t first = (int64_t(row) * a.numQHeads + kvHead * G) * a.numPartitions;  // + g * numPartitions
    const bool fits = 2 * G * parts <= scratchFloats;
    if (!fits) {  // more partitions than scratch: the plain serial merge
        for (int idx = threadIdx.x; idx < G * D; idx += kAttnThreads) {
            const int g = idx / D, d = idx % D;
            const int64_t g0 = first + int64_t(g) * a.numPartitions;
            const float* src = p.out + g0 * D + d;
            float maxLogit = -INFINITY;
            for (int i = 0; i < parts; ++i) maxLogit = fmaxf(maxLogit, __ldcg(p.maxLogit + g0 + i));
            const float base = maxLogit == -INFINITY ? 0.0f : maxLogit;
            float total = 0.0f, v = 0.0f;
            for (int i = 0; i < parts; ++i) {
                const float w = softmaxExp<T>(__ldcg(p.maxLogit + g0 + i) - base);
                total += __ldcg(p.expSum + g0 + i) * w;
                v += __ldcg(src + int64_t(i) * D) * w;
            }
            out[g * D + d] = fromFloat<T>(total > 0.0f ? v / total : 0.0f);
        }
        return;
    }
    // Outputs: each thread owns kPer (head, dim) elements and loads kChunk partitions of all of them before
    // the first FMA, so the merge waits on L2 about parts / kChunk times, not once per partition.
    // kEarlyLoads (the short-partition kernel of a few sequences, where the merge's L2 round trips are
    // the step's critical path): up to 48 registers of loads in flight, and the first chunk issued before
    // the max/sum loads and the weights (they do not depend on them), so at a few dozen partitions the
    // merge waits on L2 about once. The long-partition kernel (many sequences, bandwidth-bound) keeps 8:
    // the wider chunk took it from 80 to 96 registers, 6 to 5 CTAs per SM, and decode steps of 256
    // sequences 4 % slower (runs 18-20).
    constexpr int kPer = (G * D + kAttnThreads - 1) / kAttnThreads;
    constexpr int kChunk = !kEarlyLoads ? 8 : kPer <= 1 ? 32 : kPer <= 2 ? 24 : 8;
    float o[kPer][kChunk];
    auto loadChunk = [&](int i0) {
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
            const int idx = threadIdx.x + k * kAttnThreads;
            const int g = idx / D, d = idx % D;
            const float* src = p.out + (first + int64_t(g) * a.numPartitions + i0) * D + d;
#pragma unroll
            for (int u = 0; u < kChunk; ++u)
                o[k][u] = idx < G * D && i0 + u < parts ? __ldcg(src + int64_t(u) * D) : 0.0f;
        }
    };
    if constexpr (kEarlyLoads) loadChunk(0);
    float* weight = scratch;             // [G, parts]: max logit, then the normalised weight
    float* expSum = scratch + G * parts;  // [G, parts]
    for (int i = threadIdx.x; i < G * parts; i += kAttnThreads) {
        const int64_t slot = first + int64_t(i / parts) * a.numPartitions + i % parts;
        weight[i] = __ldcg(p.maxLogit + slot);
        expSum[i] = __ldcg(p.expSum + slot);
    }
    __syncthreads();
    // Weights: a warp per query head, its lanes across the partitions (each lane reads and rewrites only
    // its own entries).
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int g = warp; g < G; g += kAttnWarps) {
        float* w = weight + g * parts;
        const float* e = expSum + g * parts;
        float maxLogit = -INFINITY;
        for (int i = lane; i < parts; i += 32) maxLogit = fmaxf(maxLogit, w[i]);
        maxLogit = warpMax(maxLogit);
        const float base = maxLogit == -INFINITY ? 0.0f : maxLogit;
        float total = 0.0f;
        for (int i = lane; i < parts; i += 32) total += e[i] * softmaxExp<T>(w[i] - base);
        total = warpSum(total);
        for (int i = lane; i < parts; i += 32) w[i] = total > 0.0f ? softmaxExp<T>(w[i] - base) / total : 0.0f;
    }
    __syncthreads();
    float acc[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) acc[k] = 0.0f;
    for (int i0 = 0; i0 < parts; i0 += kChunk) {
        if (!kEarlyLoads || i0 > 0) loadChunk(i0);
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
            const int g = (threadIdx.x + k * kAttnThreads) / D;
#pragma unroll
            for (int u = 0; u < kChunk; ++u)
                if (g < G && i0 + u < parts) acc[k] = fmaf(weight[g * parts + i0 + u], o[k][u], acc[k]);
        }
    }
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
        const int idx = threadIdx.x + k * kAttnThreads;
        if (idx < G * D) out[idx] = fromFloat<T>(acc[k]);
    }
}

// Partitions of at most this many keys (one block per warp) take the prefetching variant.
constexpr int kPrefetchPartition = kAttnWarps * kKvBlockSize;

// CTAs per SM the one-pass variant is built for. With 16-bit K/V and up to 2 query heads per KV head
// (the decoder's GQA), kDecodeOnlineCtasPerSm = 4: at most 128 registers, so 16 warps per SM each keep
// a block's K and V (8 KB) in flight. Left to itself the compiler takes 130 and fits 3, which was
// slower from 512-key partitions up at batch 32-128 on an H200 (perf.md, device call 57). Larger
// groups and float32 need more registers than that: the compiler's choice.
template <class T, int G>
constexpr int onlineMinCtas()
{
    return sizeof(T) == 2 && G <= 2 ? kDecodeOnlineCtasPerSm : 1;
}

// q . k of one token for one query head on the SIMT cores: each of the token's kLanesPerToken lanes holds
// kVec of its dims (q already scaled), and the lanes' partial sums meet through shuffles, so every lane of
// the token ends with the whole logit. Shared by both passes' SIMT logits.
template <class T, int kLanesPerToken>
__device__ __forceinline__ float tokenLogit(const float (&q)[kVecElems<T>], const Vec16<T>& k)
{
    float dot = 0.0f;
#pragma unroll
    for (int e = 0; e < kVecElems<T>; ++e) dot = fmaf(q[e], k.v[e], dot);
#pragma unroll
    for (int o = kLanesPerToken / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    return dot;
}

// One pass over a partition's blocks with online softmax (the variant for partitions of more than one
// block per warp). Each warp takes blocks warp, warp + kWarps, ...; it loads a block's K and V at
// once, computes the block's logits, rescales its running p * v and sum to the new max, and adds the
// block. Then the warps meet through shared memory: `partial` [kWarps, G, D] gets each warp's output
// scaled to the CTA's max, and maxLogit / sum the CTA's max and sum of weights per query head, as the
// two-pass path leaves them. Masked blocks (ids outside the pool) and keys past `end` weigh nothing;
// their V is never multiplied (it may be NaN).
//
// first: the warp's first block (page warp of the partition) is already in kFirst / vFirst, loaded
// before the PDL wait (decode rows); firstValid says whether it is a block of the pool.
// Puts the new token of a fused-RoPE launch (kRope) in place of what a block's loads read from its cache
// slot, which the launch writes but never reads back: newestTok is its index in the row (-1: not in this
// partition), newKv its rotated K then its V in shared memory, [2][kLanesPerToken] 16-byte slices (kept
// there, not in registers, so the one-pass loop keeps its 128 registers). kSteps is a compile-time bound.
template <int kSteps, int kTokensPerStep>
__device__ __forceinline__ void substituteNewest(int newestTok, const uint4* newKv, int page, int tokInStep, int sub,
                                                 uint4 (&kRaw)[kSteps], uint4 (&vRaw)[kSteps])
{
    if (newestTok < 0 || page != newestTok / kKvBlockSize) return;  // warp-uniform
    const int step = (newestTok % kKvBlockSize) / kTokensPerStep;
    if (tokInStep != newestTok % kTokensPerStep) return;
    constexpr int kLanesPerToken = 32 / kTokensPerStep;
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
        if (s == step) {
            kRaw[s] = newKv[sub];
            vRaw[s] = newKv[kLanesPerToken + sub];
        }
}

template <class T, int D, int G, int kWarps, int kSteps, bool kRope = false>
__device__ void attendOnline(const SimtArgs& a, const float (&q)[G][kVecElems<T>], const int32_t* table,
                             int firstPage, int numPages, int end, const T* kHead, const T* vHead,
                             int64_t tokenStride, float* partial, float* redMax, float* redSum, float (&maxLogit)[G],
                             float (&sum)[G], bool first, bool firstValid, const uint4 (&kFirst)[kSteps],
                             const uint4 (&vFirst)[kSteps], int newestTok = -1, const uint4* newKv = nullptr)
{
    constexpr int kVec = kVecElems<T>;
    constexpr int kLanesPerToken = D / kVec;
    constexpr int kTokensPerStep = 32 / kLanesPerToken;
    static_assert(kSteps == kKvBlockSize / kTokensPerStep, "a block's loads per lane");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int sub = lane % kLanesPerToken, tokInStep = lane / kLanesPerToken;

    float m[G], l[G], acc[G][kVec];  // m is warp-uniform; l and acc cover this lane's token group
#pragma unroll
    for (int g = 0; g < G; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[g][e] = 0.0f;
    }
    // Adds one block of K and V (this lane's token group) to the running max, sum and p * v.
    auto consume = [&](int page, const uint4 (&kRaw)[kSteps], const uint4 (&vRaw)[kSteps]) {
        float logit[kSteps][G];
        float blockMax[G];
#pragma unroll
        for (int g = 0; g < G; ++g) blockMax[g] = -INFINITY;
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
            const Vec16<T> k = unpack16<T>(kRaw[s]);
            const bool in = page * kKvBlockSize + s * kTokensPerStep + tokInStep < end;
#pragma unroll
            for (int g = 0; g < G; ++g) {
                const float dot = tokenLogit<T, kLanesPerToken>(q[g], k);
                logit[s][g] = in ? dot : -INFINITY;
                blockMax[g] = fmaxf(blockMax[g], logit[s][g]);
            }
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
#pragma unroll
            for (int o = kLanesPerToken; o < 32; o <<= 1)
                blockMax[g] = fmaxf(blockMax[g], __shfl_xor_sync(0xffffffffu, blockMax[g], o));
            const float mNew = fmaxf(m[g], blockMax[g]);
            const float ref = mNew == -INFINITY ? 0.0f : mNew;  // nothing seen yet: weights 0, not NaN
            const float alpha = softmaxExp<T>(m[g] - ref);
            l[g] *= alpha;
#pragma unroll
            for (int e = 0; e < kVec; ++e) acc[g][e] *= alpha;
            m[g] = mNew;
#pragma unroll
            for (int s = 0; s < kSteps; ++s) logit[s][g] = softmaxExp<T>(logit[s][g] - ref);  // -inf: 0
        }
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
            if (page * kKvBlockSize + s * kTokensPerStep + tokInStep >= end) continue;
            const Vec16<T> v = unpack16<T>(vRaw[s]);
#pragma unroll
            for (int g = 0; g < G; ++g) {
                l[g] += logit[s][g];
#pragma unroll
                for (int e = 0; e < kVec; ++e) acc[g][e] = fmaf(logit[s][g], v.v[e], acc[g][e]);
            }
        }
    };
    int pg = warp;
    if (first) {  // warp-uniform
        if (pg < numPages && firstValid) consume(firstPage + pg, kFirst, vFirst);
        pg += kWarps;
    }
    for (; pg < numPages; pg += kWarps) {
        const int page = firstPage + pg;
        const int32_t block = table[page];
        if (block < 0 || block >= a.numBlocks) continue;  // warp-uniform: masked keys weigh nothing
        const int64_t base = int64_t(block) * kKvBlockSize * tokenStride;
        uint4 kRaw[kSteps], vRaw[kSteps];
#pragma unroll
        for (int s = 0; s < kSteps; ++s) kRaw[s] = loadNc16(kHead + base + (s * kTokensPerStep + tokInStep) * tokenStride);
#pragma unroll
        for (int s = 0; s < kSteps; ++s) vRaw[s] = loadNc16(vHead + base + (s * kTokensPerStep + tokInStep) * tokenStride);
        if constexpr (kRope) substituteNewest<kSteps, kTokensPerStep>(newestTok, newKv, page, tokInStep, sub, kRaw, vRaw);
        consume(page, kRaw, vRaw);
    }
    // Token groups of a warp step share dims and the warp's max: fold their sums and outputs.
#pragma unroll
    for (int o = kLanesPerToken; o < 32; o <<= 1)
#pragma unroll
        for (int g = 0; g < G; ++g) {
            l[g] += __shfl_xor_sync(0xffffffffu, l[g], o);
#pragma unroll
            for (int e = 0; e < kVec; ++e) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
        }
    if (lane == 0) {
#pragma unroll
        for (int g = 0; g < G; ++g) redMax[warp * G + g] = m[g];
    }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < G; ++g) {
        maxLogit[g] = -INFINITY;
        for (int w = 0; w < kWarps; ++w) maxLogit[g] = fmaxf(maxLogit[g], redMax[w * G + g]);
        const float ref = maxLogit[g] == -INFINITY ? 0.0f : maxLogit[g];
        const float f = softmaxExp<T>(m[g] - ref);  // this warp's share at the CTA's max (0 if it saw no key)
        if (lane < kLanesPerToken) {
#pragma unroll
            for (int e = 0; e < kVec; ++e) partial[(warp * G + g) * D + sub * kVec + e] = acc[g][e] * f;
        }
        if (lane == 0) redSum[warp * G + g] = l[g] * f;
    }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < G; ++g) {
        sum[g] = 0.0f;
        for (int w = 0; w < kWarps; ++w) sum[g] += redSum[w * G + g];
    }
}

constexpr int kMaxClusterParts = kDecodeMaxClusterPartitions;  // non-portable above 8

// The cluster variant's CTAs have 4 warps, each loading up to two blocks before the wait (16 partitions:
// 2048 tokens) for 16-bit types, one for float32 (whose tokens take twice the lanes); about 200 registers for
// 16-bit types and two query heads per KV head.
// 8 warps of one block each were slower in the chain (H200, perf.md call 48: batch-1 step 0.747 ms
// against 0.680 with the ticket): at 256 threads x 151 registers the CTAs leave no room on the SM for the
// next kernel's CTAs, which under PDL load their weights while attention runs.
constexpr int kClusterThreads = 128;
constexpr int kClusterWarps = kClusterThreads / 32;
template <class T>
constexpr int clusterPreBlocks()
{
    return sizeof(T) == 4 ? 1 : 2;
}

// (barrier.cluster: clusterArriveRelaxed / clusterArriveRelease / clusterWaitAcquire, common.cuh)

// Floats of the cluster merge's receive area in each CTA: its slice of every partition's output, then
// every partition's max and sum per query head.
template <int D, int G>
__host__ __device__ constexpr int clusterSliceLen(int parts)
{
    return (G * D + parts - 1) / parts;
}
template <int D, int G>
__host__ __device__ constexpr int clusterRecvFloats(int parts)
{
    return parts * clusterSliceLen<D, G>(parts) + 2 * parts * G;
}

// The cluster merge of (row, KV head), called by every thread of every CTA of the cluster. `partial` is
// this CTA's [kWarps, G, D] unnormalised output per warp in shared memory (nullptr for a partition
// without keys), with its max logit and sum of weights per query head. `recv` (clusterRecvFloats) must
// not alias anything the CTA still uses: other CTAs write into it as soon as they get here.
template <class T, int D, int G, int kWarps>
__device__ void clusterMerge(const float* partial, const float (&maxLogit)[G], const float (&sum)[G], T* out,
                             float* recv)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    const int parts = static_cast<int>(cluster.num_blocks()), rank = static_cast<int>(cluster.block_rank());
    const int slice = clusterSliceLen<D, G>(parts);
    float* recvOut = recv;                       // [parts, slice]
    float* recvMax = recv + parts * slice;       // [parts, G]
    float* recvSum = recvMax + parts * G;        // [parts, G]
    // The kernel's first instruction arrived on the cluster barrier; waiting here makes sure every CTA
    // of the cluster runs (its shared memory exists) before anything is written into it.
    clusterWaitAcquire();
#pragma unroll
    for (int g = 0; g < G; ++g) {
        for (int d = threadIdx.x; d < D; d += (kWarps * 32)) {
            float v = 0.0f;
            if (partial) {
#pragma unroll
                for (int w = 0; w < kWarps; ++w) v += partial[(w * G + g) * D + d];
            }
            const int idx = g * D + d, owner = idx / slice;
            cluster.map_shared_rank(recvOut, owner)[rank * slice + idx % slice] = v;
        }
    }
    for (int i = threadIdx.x; i < parts * G; i += (kWarps * 32)) {
        const int owner = i / G, gi = i % G;
        float m = -INFINITY, e = 0.0f;
#pragma unroll
        for (int g = 0; g < G; ++g)
            if (g == gi) m = maxLogit[g], e = sum[g];  // registers stay registers: select, not index
        cluster.map_shared_rank(recvMax, owner)[rank * G + gi] = m;
        cluster.map_shared_rank(recvSum, owner)[rank * G + gi] = e;
    }
    clusterArriveRelease();  // this CTA's pushes are visible to the cluster once everyone has arrived
    clusterWaitAcquire();
    // Each partition's weight per query head, exp(max_q - max) / total, into recvMax (its max is read
    // once). Up to 32 (partition, head) pairs take one warp and meet through shuffles; more (G >= 4 with
    // many partitions) loop. A serial loop over the partitions per output element, run by the few threads
    // of the slice, cost about 0.8 us of the batch-1 step's attention (H200, bench_decode_attention).
    float* weight = recvMax;
    if (parts * G <= 32) {
        if (threadIdx.x < 32) {
            const int i = threadIdx.x;
            const bool live = i < parts * G;
            const float m = live ? recvMax[i] : -INFINITY, e = live ? recvSum[i] : 0.0f;
            float top = m;  // lanes of one head: i % G equal, i.e. the lane bits above log2(G)
#pragma unroll
            for (int o = 16; o >= G; o >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
            const float base = top == -INFINITY ? 0.0f : top;  // no keys anywhere: zeros, not NaN
            const float w = live ? softmaxExp<T>(m - base) : 0.0f;
            float total = e * w;
#pragma unroll
            for (int o = 16; o >= G; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o);
            if (live) weight[i] = total > 0.0f ? w / total : 0.0f;
        }
    } else if (threadIdx.x < G) {
        const int g = threadIdx.x;
        float m = -INFINITY;
        for (int q = 0; q < parts; ++q) m = fmaxf(m, recvMax[q * G + g]);
        const float base = m == -INFINITY ? 0.0f : m;
        float total = 0.0f;
        for (int q = 0; q < parts; ++q) {  // each entry is read before this thread overwrites it
            const float w = softmaxExp<T>(recvMax[q * G + g] - base);
            total += recvSum[q * G + g] * w;
            weight[q * G + g] = w;
        }
        for (int q = 0; q < parts; ++q) weight[q * G + g] = total > 0.0f ? weight[q * G + g] / total : 0.0f;
    }
    __syncthreads();
    // Output element t of the slice: kSplit threads each sum every kSplit-th partition, then shuffles.
    constexpr int kSplit = 8, kPerPass = kWarps * 32 / kSplit;
    const int j = threadIdx.x % kSplit;
    for (int t0 = 0; t0 < slice; t0 += kPerPass) {
        const int t = t0 + threadIdx.x / kSplit, idx = rank * slice + t;
        const bool live = t < slice && idx < G * D;  // uniform over the kSplit lanes of an element
        const int g = live ? idx / D : 0;
        float v = 0.0f;
        if (live)
            for (int q = j; q < parts; q += kSplit) v = fmaf(recvOut[q * slice + t], weight[q * G + g], v);
#pragma unroll
        for (int o = kSplit / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (live && j == 0) out[idx] = fromFloat<T>(v);
    }
#else
    // Clusters need sm_90; pagedAttentionClusterFits() never lets this variant launch below it.
    (void)partial, (void)maxLogit, (void)sum, (void)out, (void)recv;
    __trap();
#endif
}

// kPreBlocks > 0: each warp loads K and V of its first kPreBlocks blocks of the partition before
// gridDependencyWait() (decode rows): under PDL the loads overlap the previous kernel (the QK-norm/RoPE
// kernel that writes this step's K/V). The only cache slot that kernel writes for a decode row is the
// row's newest token, so after the wait the lanes holding that token load it again. Prefill rows (many
// new tokens) load after the wait. Blocks past the first kPreBlocks per warp load as they are used.
// kCluster: the partitions are the CTAs of a cluster along z, split by the row's own context, and
// merged by clusterMerge (decode rows only); otherwise split-K partitions (equal shares of the row's
// context, bounded by partitionLen or counted by rowPartitions) merged through the ticket.
// kRope (one pass, decode rows): QK-norm + XD-RoPE of the rows' new tokens and their K/V write done here
// (PagedDecodeAttentionParams::rope): the row's rotation table and norm weights are staged in shared memory
// before the wait; after it a warp per query head rotates into shared memory, and in the CTA whose partition
// ends at the newest token one more warp rotates that key; the key and value go to the cache slot and are
// attended to from shared memory (in place of the stale slot the loads read).
template <class T, int D, int G, int kPreBlocks, bool kCluster, bool kRope = false>
__global__ void __launch_bounds__(kCluster ? kClusterThreads : kAttnThreads,
                                  kPreBlocks == 0 && !kCluster ? onlineMinCtas<T, G>() : 1)
    pagedAttentionSimtKernel(SimtArgs a)
{
    constexpr int kThreads = kCluster ? kClusterThreads : kAttnThreads;
    constexpr int kWarps = kThreads / 32;
    constexpr bool kOnline = kPreBlocks == 0 && !kCluster;  // one pass, attendOnline
    static_assert(!kRope || kOnline, "the fused rotation is built into the one-pass variant only");
    if constexpr (kCluster) clusterArriveRelaxed();  // waited on in clusterMerge
    constexpr int kVec = kVecElems<T>;
    constexpr int kLanesPerToken = D / kVec;
    static_assert(D % kVec == 0 && kLanesPerToken <= 32 && 32 % kLanesPerToken == 0, "head dim layout");
    constexpr int kTokensPerStep = 32 / kLanesPerToken;
    constexpr int kSteps = kKvBlockSize / kTokensPerStep;

    // Row info, block table and context lengths come from the step's host-to-device copies, which
    // precede the step's first kernel: safe to read before the wait.
    const int row = blockIdx.x, kvHead = blockIdx.y, part = blockIdx.z;
    const RowInfo r = rowInfo(a, row);
    // Blocks [part * n / P, (part + 1) * n / P) of the row's n blocks: P is the cluster's size, the row
    // partitions (at most one per block), or the partitions of at most partitionLen keys the row needs
    // (the grid's later partitions get no keys). 32-bit divisions: ceilDiv's are 64-bit.
    const int n = (r.numKeys + kKvBlockSize - 1) / kKvBlockSize;
    const int rowParts = kCluster               ? int(gridDim.z)
                         : a.rowPartitions > 0 ? min(a.rowPartitions, n)
                             : (n + a.partitionLen / kKvBlockSize - 1) / (a.partitionLen / kKvBlockSize);
    const int start = part < rowParts ? part * n / rowParts * kKvBlockSize : r.numKeys;
    const int end = part < rowParts ? min(r.numKeys, (part + 1) * n / rowParts * kKvBlockSize) : r.numKeys;
    const int numTok = end - start;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int sub = lane % kLanesPerToken, tokInStep = lane / kLanesPerToken;
    const int32_t* table = a.blockTable + int64_t(r.seq) * a.blockTableStride;
    const int firstPage = start / kKvBlockSize;
    const int numPages = numTok > 0 ? int(ceilDiv(end, kKvBlockSize)) - firstPage : 0;
    const int64_t tokenStride = int64_t(a.numKvHeads) * D;  // elements between tokens of a block
    const T* kHead = static_cast<const T*>(a.keyCache) + int64_t(kvHead) * D + sub * kVec;
    const T* vHead = static_cast<const T*>(a.valueCache) + int64_t(kvHead) * D + sub * kVec;
    // Tensor-core logits (the two-pass variants, 16-bit types): mma.sync m16n8k16 with a block's 16 keys
    // as the 16-row operand and the query heads as the 8-wide one (zero past G). K is then held as mma
    // fragments: register s = 2c + h of lane (g8, t4) is key g8 + 8h of the block, dims 32c + 8 t4 .. + 8
    // (the k order inside each 32 dims is permuted alike for K and q, as in skinny_gemm_tc.cu). A block's
    // logits take D / 16 products instead of the 16-lane dot products and their shuffles, which made pass 1
    // the longest part of the batch-1 step's attention (H200, bench_decode_attention: ~880 instructions
    // per warp after the wait, one warp per scheduler). V keeps the token-per-16-lanes layout. The one-pass
    // variant (many sequences) is bound by bandwidth, not by its instructions, and keeps the SIMT logits.
    constexpr bool kMmaLogits = !kOnline && sizeof(T) == 2 && D % 32 == 0 && G <= 8;
    const int g8 = lane >> 2, t4 = lane & 3;
    auto kMmaOffset = [&](int s) {  // elements from the block's first key, lane (g8, t4), register s
        return int64_t(g8 + 8 * (s & 1)) * tokenStride + 32 * (s >> 1) + 8 * t4 - sub * kVec;
    };

    constexpr int kPre = kPreBlocks > 0 ? kPreBlocks : 1;
    uint4 kReg[kPre][kSteps], vReg[kPre][kSteps];
    bool preValid[kPre];
    const T* kPreBlock[kPre];
    const T* vPreBlock[kPre];
    // Block j of this warp is the partition's page warp + j * kWarps.
    auto loadPre = [&](int j, bool onlyNewest) {
        const int newest = r.numKeys - 1 - (firstPage + warp + j * kWarps) * kKvBlockSize;  // in that block
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
            if constexpr (kMmaLogits) {
                if (!onlyNewest || g8 + 8 * (s & 1) == newest) kReg[j][s] = loadNc16(kPreBlock[j] + kMmaOffset(s));
            }
            const int t = s * kTokensPerStep + tokInStep;
            if (onlyNewest && t != newest) continue;
            if constexpr (!kMmaLogits) kReg[j][s] = loadNc16(kPreBlock[j] + t * tokenStride);
            vReg[j][s] = loadNc16(vPreBlock[j] + t * tokenStride);
        }
    };
    // The one-pass variant (kOnline) takes its first block per warp this way too, decode rows only (for
    // prefill rows it loads every block in attendOnline). In the chained attention of 8 to 32 sequences
    // that took 1.4-2.6 us a layer, in the decode step 0.3-0.7 (perf.md, device call 85).
    static_assert(kPreBlocks > 0 || kOnline, "every variant loads blocks before the wait");
    const bool early = a.cuSeqlensQ == nullptr;
    const bool preBlocks = kPreBlocks > 0 || early;  // prefill rows of the one-pass variant: none
#pragma unroll
    for (int j = 0; j < kPre; ++j) {
        preValid[j] = false;
        kPreBlock[j] = kHead;
        vPreBlock[j] = vHead;
        const int pg = warp + j * kWarps;
        if (preBlocks && pg < numPages) {
            const int32_t block = table[firstPage + pg];
            preValid[j] = block >= 0 && block < a.numBlocks;  // warp-uniform
            kPreBlock[j] = kHead + int64_t(preValid[j] ? block : 0) * kKvBlockSize * tokenStride;
            vPreBlock[j] = vHead + int64_t(preValid[j] ? block : 0) * kKvBlockSize * tokenStride;
            if (preValid[j] && early) loadPre(j, false);
            if (!preValid[j])  // a masked block: its logits are -inf and p * V skips it, but no garbage
#pragma unroll
                for (int s = 0; s < kSteps; ++s) kReg[j][s] = vReg[j][s] = make_uint4(0, 0, 0, 0);
        }
    }
    extern __shared__ float smem[];
    // kRope (kRopeSmemFloats, after the one-pass variant's other shared memory): [cos | sin | query-norm
    // weight | key-norm weight] per dim for this row's token (step inputs and weights, read before the wait),
    // then the rotated queries [G, D] (scaled, float), then the new token's rotated K and its V [2, D] (T).
    [[maybe_unused]] float* ropeTab = smem + kWarps * G * D + 2 * kWarps * G;
    [[maybe_unused]] float* qRot = ropeTab + 4 * D;
    [[maybe_unused]] uint4* newKv = reinterpret_cast<uint4*>(qRot + G * D);
    [[maybe_unused]] int64_t newSlot = -1;
    if constexpr (kRope) {
        const QkNormRopeParams& rp = a.rope;
        for (int d = threadIdx.x; d < D; d += kThreads) {
            const int j = d % (D / 2);
            const float* cs = rp.cosSinCache + ropePosition(rp, ropeAxisOf(rp, j), row) * D;
            ropeTab[d] = cs[j];
            ropeTab[D + d] = cs[D / 2 + j];
            ropeTab[2 * D + d] = rp.queryNormWeight ? toFloat(static_cast<const T*>(rp.queryNormWeight)[d]) : 1.0f;
            ropeTab[3 * D + d] = rp.keyNormWeight ? toFloat(static_cast<const T*>(rp.keyNormWeight)[d]) : 1.0f;
        }
        newSlot = rp.slotMapping[row];
    }
    gridDependencyWait();
    allowDependentLaunch();
    // Decode: the newest token again (the previous kernel wrote it), except under kRope, where this launch
    // computes it; prefill: all now.
#pragma unroll
    for (int j = 0; j < kPre; ++j)
        if (!kRope && preBlocks && preValid[j]) loadPre(j, early);
    if constexpr (kRope) __syncthreads();  // ropeTab

    T* out = static_cast<T*>(a.out) + row * a.outRowStride + kvHead * G * D;
    const int mainFloats = kOnline ? kWarps * G * D : max(G * a.partitionLen, kWarps * G * D);
    float* logits = smem;                 // [G, partitionLen], then p = exp(logit - max)
    float* redMax = smem + mainFloats;    // [kWarps, G]
    float* redSum = redMax + kWarps * G;  // [kWarps, G]
    float* recv = redSum + kWarps * G;    // kCluster: clusterRecvFloats(gridDim.z)
    if (numTok <= 0) {
        // No keys in this partition, which the merge skips. No keys at all: the output is zeros.
        if constexpr (kCluster) {
            float noMax[G], noSum[G];
#pragma unroll
            for (int g = 0; g < G; ++g) noMax[g] = -INFINITY, noSum[g] = 0.0f;
            clusterMerge<T, D, G, kWarps>(nullptr, noMax, noSum, out, recv);
        } else if (part == 0) {
            for (int i = threadIdx.x; i < G * D; i += kThreads) out[i] = fromFloat<T>(0.0f);
        }
        return;
    }

    // kRope: this partition ends at the row's newest token (CTA-uniform; numTok > 0 here).
    [[maybe_unused]] const bool holdsNewest = kRope && end == r.numKeys;
    float q[G][kVec];
    const T* qRow = static_cast<const T*>(a.query) + row * a.queryRowStride + kvHead * G * D + sub * kVec;
    [[maybe_unused]] uint4 qFrag[kMmaLogits ? D / 32 : 1];  // query head g8 (zero past G), dims 32c + 8 t4 ..
    if constexpr (kMmaLogits) {
        const T* qHead = static_cast<const T*>(a.query) + row * a.queryRowStride + (kvHead * G + min(g8, G - 1)) * D + 8 * t4;
#pragma unroll
        for (int c = 0; c < D / 32; ++c) qFrag[c] = g8 < G ? loadNc16(qHead + 32 * c) : make_uint4(0, 0, 0, 0);
    } else if constexpr (kRope) {
        // A warp per query head of this KV head, and one for the new key where this partition ends at the
        // row's newest token: qk_norm_rope.cu's arithmetic (qkNormRopeWarp) into shared memory; then every
        // lane takes its dims of the rotated queries, and the warp that holds the newest block its K and V.
        const QkNormRopeParams& rp = a.rope;
        constexpr int kPairs = kRopePairsPerLane<D>, kHalf = D / 2;
        T* newK = reinterpret_cast<T*>(newKv);
        for (int h = warp; h < G + (holdsNewest ? 1 : 0); h += kWarps) {  // warp-uniform
            const bool isKey = h == G;
            const T* x = isKey ? static_cast<const T*>(rp.key) + row * rp.keyTokenStride + int64_t(kvHead) * D
                               : static_cast<const T*>(a.query) + row * a.queryRowStride + (kvHead * G + h) * D;
            const float* w = ropeTab + (isKey ? 3 : 2) * D;
            float c[kPairs], sn[kPairs], w1[kPairs], w2[kPairs];
#pragma unroll
            for (int i = 0; i < kPairs; ++i) {
                const int j = min(lane + 32 * i, kHalf - 1);  // lanes past D/2 compute what is not stored
                c[i] = ropeTab[j];
                sn[i] = ropeTab[D + j];
                w1[i] = w[j];
                w2[i] = w[kHalf + j];
            }
            T lo[kPairs], hi[kPairs];
            qkNormRopeWarp<T, D>(x, c, sn, w1, w2, (isKey ? rp.keyNormWeight : rp.queryNormWeight) != nullptr, rp.eps,
                                 lo, hi);
#pragma unroll
            for (int i = 0; i < kPairs; ++i) {
                const int j = lane + 32 * i;
                if (j >= kHalf) continue;
                if (isKey) {
                    newK[j] = lo[i];
                    newK[kHalf + j] = hi[i];
                } else {
                    qRot[h * D + j] = toFloat(lo[i]) * a.scale;
                    qRot[h * D + kHalf + j] = toFloat(hi[i]) * a.scale;
                }
            }
            if (isKey) {  // the value, as it is
                const T* v = static_cast<const T*>(rp.value) + row * rp.valueTokenStride + int64_t(kvHead) * D;
                for (int j = lane; j < D; j += 32) newK[D + j] = v[j];
            }
        }
        __syncthreads();
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
            for (int e = 0; e < kVec; ++e) q[g][e] = qRot[g * D + sub * kVec + e];
    } else {
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const Vec16<T> v = unpack16<T>(loadNc16(qRow + g * D));
#pragma unroll
            for (int e = 0; e < kVec; ++e) q[g][e] = v.v[e] * a.scale;
        }
    }
    // kRope: the new token's K and V into the cache slot, and in place of the stale slot in the block the
    // warp loaded before the wait (later blocks take them in attendOnline).
    [[maybe_unused]] int newestTok = -1;
    if constexpr (kRope) {
        if (holdsNewest) {
            newestTok = r.numKeys - 1;
            if (warp == 0 && lane < kLanesPerToken && newSlot >= 0 && newSlot < a.rope.numCacheSlots) {
                const int64_t cell = (newSlot * a.numKvHeads + kvHead) * D + sub * kVec;
                *reinterpret_cast<uint4*>(static_cast<T*>(a.rope.keyCache) + cell) = newKv[sub];
                *reinterpret_cast<uint4*>(static_cast<T*>(a.rope.valueCache) + cell) = newKv[kLanesPerToken + sub];
            }
            if (preValid[0])
                substituteNewest<kSteps, kTokensPerStep>(newestTok, newKv, firstPage + warp, tokInStep, sub, kReg[0],
                                                         vReg[0]);
        }
    }

    float maxLogit[G], sum[G];
    float* partial = smem;  // [kWarps, G, D]: each warp's unnormalised output at the CTA's max
    if constexpr (kOnline) {
        attendOnline<T, D, G, kWarps, kSteps, kRope>(a, q, table, firstPage, numPages, end, kHead, vHead, tokenStride,
                                                     partial, redMax, redSum, maxLogit, sum, preBlocks, preValid[0],
                                                     kReg[0], vReg[0], newestTok, newKv);
    } else {
        // --- pass 1: logits ---
        float localMax[G];
#pragma unroll
        for (int g = 0; g < G; ++g) localMax[g] = -INFINITY;
        // The logits of one block (K in `raw`; an invalid block's are -inf) into shared memory.
        auto logitsOf = [&](int page, const uint4 (&raw)[kSteps], bool valid) {
            if constexpr (kMmaLogits) {
                // c[e]: key g8 + 8 (e / 2) of the block, query head 2 t4 + e % 2. Keys past the context
                // (stale cache rows, maybe NaN) only reach their own rows of c, which are not stored.
                float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                for (int cc = 0; cc < D / 32; ++cc) {
                    const uint4 lo = raw[2 * cc], hi = raw[2 * cc + 1], qb = qFrag[cc];
                    mmaM16N8K16<T>(c, lo.x, hi.x, lo.y, hi.y, qb.x, qb.y);
                    mmaM16N8K16<T>(c, lo.z, hi.z, lo.w, hi.w, qb.z, qb.w);
                }
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int t = page * kKvBlockSize + g8 + 8 * (e >> 1), head = 2 * t4 + (e & 1);
                    if (head < G && t < end) {
                        const float l = valid ? c[e] * a.scale : -INFINITY;
                        logits[head * a.partitionLen + t - start] = l;
#pragma unroll
                        for (int g = 0; g < G; ++g)
                            if (g == head) localMax[g] = fmaxf(localMax[g], l);  // select, not index
                    }
                }
            } else {
#pragma unroll
                for (int s = 0; s < kSteps; ++s) {
                    const Vec16<T> k = unpack16<T>(raw[s]);
                    float dot[G];
#pragma unroll
                    for (int g = 0; g < G; ++g) dot[g] = tokenLogit<T, kLanesPerToken>(q[g], k);
                    const int t = page * kKvBlockSize + s * kTokensPerStep + tokInStep;
                    if (t < end) {
#pragma unroll
                        for (int g = 0; g < G; ++g) {
                            const float l = valid ? dot[g] : -INFINITY;
                            if (sub == 0) logits[g * a.partitionLen + t - start] = l;
                            localMax[g] = fmaxf(localMax[g], l);
                        }
                    }
                }
            }
        };
        // The blocks loaded before the wait, in iterations unrolled at compile time (so kReg[j] stays
        // in registers without selects), then the rest of the warp's blocks, loaded here.
#pragma unroll
        for (int j = 0; j < kPreBlocks; ++j)
            if (warp + j * kWarps < numPages) logitsOf(firstPage + warp + j * kWarps, kReg[j], preValid[j]);
        for (int pg = warp + kPreBlocks * kWarps; pg < numPages; pg += kWarps) {
            const int page = firstPage + pg;
            const int32_t block = table[page];
            const bool valid = block >= 0 && block < a.numBlocks;  // warp-uniform
            const T* kBlock = kHead + int64_t(valid ? block : 0) * kKvBlockSize * tokenStride;
            uint4 raw[kSteps];
#pragma unroll
            for (int s = 0; s < kSteps; ++s)
                raw[s] = !valid      ? make_uint4(0, 0, 0, 0)
                         : kMmaLogits ? loadNc16(kBlock + kMmaOffset(s))
                                      : loadNc16(kBlock + (s * kTokensPerStep + tokInStep) * tokenStride);
            logitsOf(page, raw, valid);
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const float m = warpMax(localMax[g]);
            if (lane == 0) redMax[warp * G + g] = m;
        }
        __syncthreads();

        // --- softmax weights ---
        float base[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            maxLogit[g] = -INFINITY;
            for (int w = 0; w < kWarps; ++w) maxLogit[g] = fmaxf(maxLogit[g], redMax[w * G + g]);
            base[g] = maxLogit[g] == -INFINITY ? 0.0f : maxLogit[g];  // all keys invalid: weights 0, not NaN
            sum[g] = 0.0f;
        }
        for (int i = threadIdx.x; i < numTok; i += kThreads) {
#pragma unroll
            for (int g = 0; g < G; ++g) {
                const float p = softmaxExp<T>(logits[g * a.partitionLen + i] - base[g]);
                logits[g * a.partitionLen + i] = p;
                sum[g] += p;
            }
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const float s = warpSum(sum[g]);
            if (lane == 0) redSum[warp * G + g] = s;
        }
        __syncthreads();  // also publishes the weights written above
#pragma unroll
        for (int g = 0; g < G; ++g) {
            sum[g] = 0.0f;
            for (int w = 0; w < kWarps; ++w) sum[g] += redSum[w * G + g];
        }

        // --- pass 2: p * V ---
        float acc[G][kVec];
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
            for (int e = 0; e < kVec; ++e) acc[g][e] = 0.0f;
        // p * V of one valid block (V in `raw`).
        auto accumulate = [&](int page, const uint4 (&raw)[kSteps]) {
#pragma unroll
            for (int s = 0; s < kSteps; ++s) {
                const int t = page * kKvBlockSize + s * kTokensPerStep + tokInStep;
                if (t >= end) continue;  // never multiply garbage past the context (it may be NaN)
                const Vec16<T> v = unpack16<T>(raw[s]);
#pragma unroll
                for (int g = 0; g < G; ++g) {
                    const float p = logits[g * a.partitionLen + t - start];
#pragma unroll
                    for (int e = 0; e < kVec; ++e) acc[g][e] = fmaf(p, v.v[e], acc[g][e]);
                }
            }
        };
        // An invalid block's weights are 0: skipped (warp-uniform).
#pragma unroll
        for (int j = 0; j < kPreBlocks; ++j)
            if (warp + j * kWarps < numPages && preValid[j]) accumulate(firstPage + warp + j * kWarps, vReg[j]);
        for (int pg = warp + kPreBlocks * kWarps; pg < numPages; pg += kWarps) {
            const int page = firstPage + pg;
            const int32_t block = table[page];
            if (block < 0 || block >= a.numBlocks) continue;
            const T* vBlock = vHead + int64_t(block) * kKvBlockSize * tokenStride;
            uint4 raw[kSteps];
#pragma unroll
            for (int s = 0; s < kSteps; ++s) raw[s] = loadNc16(vBlock + (s * kTokensPerStep + tokInStep) * tokenStride);
            accumulate(page, raw);
        }
        // Tokens of one warp step share dims: fold the step's token groups, then the warps.
#pragma unroll
        for (int o = kLanesPerToken; o < 32; o <<= 1)
#pragma unroll
            for (int g = 0; g < G; ++g)
#pragma unroll
                for (int e = 0; e < kVec; ++e) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
        __syncthreads();  // logits are dead: reuse as [kWarps, G, D]
        if (lane < kLanesPerToken) {
#pragma unroll
            for (int g = 0; g < G; ++g)
#pragma unroll
                for (int e = 0; e < kVec; ++e) partial[(warp * G + g) * D + sub * kVec + e] = acc[g][e];
        }
        __syncthreads();
    }  // two passes
    if constexpr (kCluster) {
        clusterMerge<T, D, G, kWarps>(partial, maxLogit, sum, out, recv);
        return;
    }
    const Partials parts = partialsOf<D>(a);
#pragma unroll
    for (int g = 0; g < G; ++g) {  // g stays a compile-time index: sum[] and maxLogit[] stay in registers
        const int64_t slot = (int64_t(row) * a.numQHeads + kvHead * G + g) * a.numPartitions + part;
        for (int d = threadIdx.x; d < D; d += kThreads) {
            float v = 0.0f;
#pragma unroll
            for (int w = 0; w < kWarps; ++w) v += partial[(w * G + g) * D + d];
            if (a.numPartitions == 1) {
                out[g * D + d] = fromFloat<T>(sum[g] > 0.0f ? v / sum[g] : 0.0f);
            } else {
                parts.out[slot * D + d] = v;
                if (d == 0) {
                    parts.maxLogit[slot] = maxLogit[g];
                    parts.expSum[slot] = sum[g];
                }
            }
        }
    }
    if (a.numPartitions == 1) return;

    // Split: the last partition of (row, KV head) to finish merges all of them.
    __shared__ bool isLast;
    __threadfence();  // this CTA's partials are visible device-wide before its ticket is
    __syncthreads();
    const int activeParts = rowParts;  // <= numPartitions: numKeys <= maxContextLen
    int32_t* ticket = a.counters + int64_t(row) * a.numKvHeads + kvHead;
    if (threadIdx.x == 0) {
        isLast = atomicAdd(ticket, 1) == activeParts - 1;
        if (isLast) *ticket = 0;  // every partition has counted: ready for the next launch
    }
    __syncthreads();
    if (!isLast) return;
    __threadfence();
    mergePartitions<T, D, G, (kPreBlocks > 0)>(a, row, kvHead, activeParts, out, smem, mainFloats);  // smem is free again
}

// Dynamic shared memory of the kernel: the logits (later the per-warp outputs), the reductions and, for
// the cluster variant, its receive area. At most 38 KB for partitions of kDecodeMaxPartition keys; the
// one-pass variant needs only the per-warp outputs and reductions (4 KB at two query heads per KV head).
template <int D, int G>
constexpr size_t simtSmemBytes(int partitionLen, int warps, int clusterParts, bool online = false)
{
    return ((online ? warps * G * D : std::max(G * partitionLen, warps * G * D)) + 2 * warps * G +
            (clusterParts > 0 ? clusterRecvFloats<D, G>(clusterParts) : 0)) *
           sizeof(float);
}

// The cluster variant, allowed clusters above the portable 8 (once per instantiation).
template <class T, int D, int G>
cudaError_t clusterKernel(void (**kernel)(SimtArgs))
{
    *kernel = pagedAttentionSimtKernel<T, D, G, clusterPreBlocks<T>(), true>;
    static const cudaError_t allowed =
        cudaFuncSetAttribute(pagedAttentionSimtKernel<T, D, G, clusterPreBlocks<T>(), true>,
                             cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    return allowed;
}

// Shared memory the fused rotation adds (floats): [cos | sin | query weight | key weight] x D, the rotated
// queries [G, D], then the new token's K and V (2 D elements of T, at most 2 D floats).
template <int D, int G>
constexpr int kRopeSmemFloats = 4 * D + G * D + 2 * D;

// Launches the SIMT kernel for element type T. cluster: a.numPartitions (2..kMaxClusterParts) CTAs per
// (row, KV head) in one cluster each, merged through distributed shared memory (decode rows, sm_90);
// a.partitionLen must then cover the longest row's share, ceil(blocks / numPartitions) blocks.
template <class T>
cudaError_t launchPagedAttentionSimt(const SimtArgs& a, int headDim, cudaStream_t stream, bool cluster = false)
{
    constexpr int kVec = kVecElems<T>;
    if (a.numKvHeads <= 0 || a.numQHeads % a.numKvHeads != 0) return cudaErrorInvalidValue;
    // The variant: cluster merge, short partitions loaded before the wait, or one pass. The first two keep
    // a partition's logits in shared memory: at most kDecodeMaxPartition keys.
    const bool prefetch = !cluster && a.rowPartitions == 0 && a.partitionLen <= kPrefetchPartition;
    if (a.partitionLen <= 0 || a.partitionLen % kKvBlockSize != 0 ||
        ((cluster || prefetch) && a.partitionLen > kDecodeMaxPartition))
        return cudaErrorInvalidValue;
    if (cluster && (a.cuSeqlensQ || a.numPartitions < 2 || a.numPartitions > kMaxClusterParts))
        return cudaErrorInvalidValue;
    if (!cluster &&
        (a.numPartitions < 1 || a.numPartitions > 65535 || (a.numPartitions > 1 && (!a.workspace || !a.counters))))
        return cudaErrorInvalidValue;
    if (a.queryRowStride % kVec != 0 || a.outRowStride % kVec != 0 || !aligned16(a.query) || !aligned16(a.out) ||
        !aligned16(a.keyCache) || !aligned16(a.valueCache))
        return cudaErrorInvalidValue;
    // The fused rotation: one-pass decode launches only, writing the caches it attends to.
    const QkNormRopeParams& rp = a.rope;
    const bool rope = rp.key != nullptr;
    if (rope && (cluster || prefetch || a.cuSeqlensQ || !rp.value || !rp.slotMapping || !rp.positions ||
                 !rp.cosSinCache || !ropeTableValid(rp, headDim) || rp.keyCache != a.keyCache ||
                 rp.valueCache != a.valueCache || rp.keyTokenStride % kVec != 0 || rp.valueTokenStride % kVec != 0 ||
                 !aligned16(rp.key) || !aligned16(rp.value)))
        return cudaErrorInvalidValue;
    if (a.numRows == 0) return cudaSuccess;
    return dispatchHeadDim(headDim, [&]<int D>() {
        return dispatchGroupSize(a.numQHeads / a.numKvHeads, [&]<int G>() {
            const dim3 grid(a.numRows, a.numKvHeads, a.numPartitions);
            if (cluster) {
                void (*kernel)(SimtArgs) = nullptr;
                LECTOR_CUDA_TRY((clusterKernel<T, D, G>(&kernel)));
                return launchKernelInClusters(kernel, grid, kClusterThreads,
                                              simtSmemBytes<D, G>(a.partitionLen, kClusterWarps, a.numPartitions),
                                              stream, dim3(1, 1, static_cast<unsigned>(a.numPartitions)), a);
            }
            const size_t smem = simtSmemBytes<D, G>(a.partitionLen, kAttnWarps, 0, !prefetch);
            if (rope)  // + the row's rotation table and norm weights, and the new token's K and V
                return launchKernel(pagedAttentionSimtKernel<T, D, G, 0, false, true>, grid, kAttnThreads,
                                    smem + kRopeSmemFloats<D, G> * sizeof(float), stream, a);
            return prefetch ? launchKernel(pagedAttentionSimtKernel<T, D, G, 1, false>, grid, kAttnThreads, smem, stream, a)
                            : launchKernel(pagedAttentionSimtKernel<T, D, G, 0, false>, grid, kAttnThreads, smem, stream, a);
        });
    });
}

// Whether clusters of `parts` CTAs of the cluster kernel fit the current device (sm_90 and newer), for
// element type T, group size G and partitions of up to partitionLen keys.
template <class T>
bool pagedAttentionClusterFits(int parts, int groupSize, int headDim, int partitionLen)
{
    if (parts < 2 || parts > kMaxClusterParts || currentDeviceAttribute(cudaDevAttrComputeCapabilityMajor) < 9)
        return false;
    const cudaError_t err = dispatchHeadDim(headDim, [&]<int D>() {
        return dispatchGroupSize(groupSize, [&]<int G>() {
            void (*kernel)(SimtArgs) = nullptr;
            LECTOR_CUDA_TRY((clusterKernel<T, D, G>(&kernel)));
            cudaLaunchConfig_t config{};
            config.gridDim = dim3(1, 1, static_cast<unsigned>(parts));
            config.blockDim = kClusterThreads;
            config.dynamicSmemBytes = simtSmemBytes<D, G>(partitionLen, kClusterWarps, parts);
            cudaLaunchAttribute attribute = clusterDimAttribute(dim3(1, 1, static_cast<unsigned>(parts)));
            config.attrs = &attribute;
            config.numAttrs = 1;
            int clusters = 0;
            LECTOR_CUDA_TRY(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
            return clusters > 0 ? cudaSuccess : cudaErrorInvalidConfiguration;
        });
    });
    cudaGetLastError();  // a refusal is an answer here, not a sticky error for the next launch
    return err == cudaSuccess;
}

}  // namespace lector::gpu::detail
