// Sampling: CTAs of 512 threads, `slices` per sequence; every pass streams logits (and presence bytes)
// from L2 in chunks of 512 x 8 elements, all 8 loads of a thread issued before use, recomputing the
// penalty instead of storing penalized logits.
//   1. argmax by ordered key, first index on ties, each CTA over its slice; the last CTA of the
//      sequence to finish reduces the slices' results (greedy ends here; it also gives the max logit);
//      that CTA alone goes on with 2 and 3 over the whole vocabulary;
//   2. top-k only: radix select, 4 passes of 8 bits over the ordered keys (warp-aggregated shared
//      histogram updates), finds the k-th largest key and how many ties at it are still wanted;
//   3. top-k only: the total weight is a plain reduction (all ties share one weight); the draw walks
//      chunks in vocabulary order (each thread owns 8 consecutive tokens, block scans give the prefix)
//      until the cumulative weight passes u * total.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/sample_tokens.cuh"

namespace lector::gpu {
namespace {

constexpr int kThreads = 512;
constexpr int kItems = 8;                    // tokens per thread per chunk
constexpr int kChunk = kThreads * kItems;
static_assert(kChunk == kSampleChunkTokens, "slices are whole passes");
constexpr int kNoHit = 0x7fffffff;

struct MaxU64 {
    __device__ __forceinline__ unsigned long long operator()(unsigned long long a, unsigned long long b) const
    {
        return a > b ? a : b;
    }
};

template <class T>
struct SeqView {
    const T* logits;
    const uint8_t* present;
    float penalty;
    int n;

    __device__ __forceinline__ float logit(int i) const
    {
        return penalizedLogit(toFloat(logits[i]), present && present[i], penalty);
    }

    // Penalised logits of one chunk. Strided: token base + j * kThreads + tid (coalesced, for the
    // order-free passes). Contiguous: base + tid * kItems + j (vocabulary order within a thread).
    // Tokens past the end read as NaN with valid = false.
    template <bool kContiguous>
    __device__ __forceinline__ void load(int base, float (&l)[kItems], int (&idx)[kItems]) const
    {
        T raw[kItems];
        uint8_t pr[kItems];
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            idx[j] = kContiguous ? base + threadIdx.x * kItems + j : base + j * kThreads + threadIdx.x;
            const bool in = idx[j] < n;
            raw[j] = in ? logits[idx[j]] : T(0.0f);
            pr[j] = in && present ? present[idx[j]] : uint8_t(0);
        }
#pragma unroll
        for (int j = 0; j < kItems; ++j)
            l[j] = idx[j] < n ? penalizedLogit(toFloat(raw[j]), pr[j] != 0, penalty) : NAN;
    }
};

// Inverse of orderedKey for non-NaN keys.
__device__ __forceinline__ float keyValue(uint32_t key)
{
    return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// The block's largest of v (every thread gets it).
__device__ __forceinline__ unsigned long long blockMax(unsigned long long v, void* tempStorage)
{
    using ScanU64 = cub::BlockScan<unsigned long long, kThreads>;
    unsigned long long all;
    ScanU64(*static_cast<typename ScanU64::TempStorage*>(tempStorage)).InclusiveScan(v, v, MaxU64(), all);
    __syncthreads();
    return all;
}

__device__ __forceinline__ int tokenOf(unsigned long long best)
{
    return static_cast<int>(~static_cast<uint32_t>(best & 0xffffffffull));
}

// Best of tokens [begin, view.n) as (key << 32) | ~index: the larger key wins and, among equal keys,
// the lower index, so the best of several ranges is their plain maximum.
template <class T>
__device__ __forceinline__ unsigned long long argmaxKey(const SeqView<T>& view, int begin, void* tempStorage)
{
    unsigned long long best = 0;
    for (int base = begin; base < view.n; base += kChunk) {
        float l[kItems];
        int idx[kItems];
        view.template load<false>(base, l, idx);
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            if (idx[j] >= view.n) continue;
            const unsigned long long c = (static_cast<unsigned long long>(orderedKey(l[j])) << 32) |
                                         static_cast<uint32_t>(~static_cast<uint32_t>(idx[j]));
            best = c > best ? c : best;
        }
    }
    return blockMax(best, tempStorage);
}

struct KthKey {
    uint32_t key;
    int tiesWanted;  // tokens equal to key that belong to the top k (the first ones in vocabulary order)
};

// Exact k-th largest ordered key by 4 passes of an 8-bit radix histogram.
template <class T>
__device__ __forceinline__ KthKey radixSelect(const SeqView<T>& view, int k, unsigned* hist, uint32_t* sPrefix,
                                              int* sRemaining)
{
    const int lane = threadIdx.x & 31;
    uint32_t prefix = 0, mask = 0;
    int remaining = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = threadIdx.x; b < 256; b += kThreads) hist[b] = 0;
        __syncthreads();
        for (int base = 0; base < view.n; base += kChunk) {
            float l[kItems];
            int idx[kItems];
            view.template load<false>(base, l, idx);
#pragma unroll
            for (int j = 0; j < kItems; ++j) {
                const uint32_t key = orderedKey(l[j]);
                const bool take = idx[j] < view.n && (key & mask) == prefix;
                const unsigned bin = take ? (key >> shift) & 255u : 256u;
                // Logits crowd into few exponent bins: one atomic per distinct bin per warp.
                const unsigned same = __match_any_sync(0xffffffffu, bin);
                if (take && lane == __ffs(same) - 1) atomicAdd(&hist[bin], static_cast<unsigned>(__popc(same)));
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int above = 0, b = 255;
            for (; b > 0 && above + int(hist[b]) < remaining; --b) above += hist[b];
            *sPrefix = prefix | (uint32_t(b) << shift);
            *sRemaining = remaining - above;
        }
        __syncthreads();
        prefix = *sPrefix;
        remaining = *sRemaining;
        mask |= 255u << shift;
        __syncthreads();  // hist and the two scalars are rewritten by the next pass
    }
    return {prefix, remaining};
}

template <class T>
__global__ void __launch_bounds__(kThreads) sampleTokensKernel(SampleTokensParams p)
{
    gridDependencyWait();
    allowDependentLaunch();
    using ScanU64 = cub::BlockScan<unsigned long long, kThreads>;
    using ScanF = cub::BlockScan<float, kThreads>;
    using ScanI = cub::BlockScan<int, kThreads>;
    using ReduceF = cub::BlockReduce<float, kThreads>;
    __shared__ union {
        typename ScanU64::TempStorage u64;
        typename ScanF::TempStorage f;
        typename ScanI::TempStorage i;
        typename ReduceF::TempStorage r;
    } tmp;
    __shared__ unsigned hist[256];
    __shared__ uint32_t sPrefix;
    __shared__ int sRemaining, sHit, sLast;
    __shared__ float sTotal;

    const int seq = blockIdx.y, slice = blockIdx.x, tid = threadIdx.x, n = p.vocabSize;
    const int64_t presenceRow = p.presenceRows ? p.presenceRows[seq] : seq;
    uint8_t* present = p.presence ? p.presence + presenceRow * p.presenceStride : nullptr;
    const SeqView<T> view{static_cast<const T*>(p.logits) + seq * p.logitsStride, present,
                          p.repetitionPenalty ? p.repetitionPenalty[seq] : 1.0f, n};
    const float temperature = p.temperature ? p.temperature[seq] : 0.0f;
    const int topK = p.topK ? p.topK[seq] : 0;
    const int k = topK <= 0 || topK >= n ? n : topK;

    int token;
    if (p.slices == 1) {
        token = tokenOf(argmaxKey(view, 0, &tmp.u64));
    } else {
        // This CTA's stretch of whole passes; its best goes to the scratch, and the sequence's last CTA
        // to finish takes over.
        const int sliceLen = sampleTokensPassesPerSlice(n, p.slices) * kChunk;
        const int begin = slice * sliceLen;
        SeqView<T> part = view;
        part.n = min(n, begin + sliceLen);
        const unsigned long long best = argmaxKey(part, begin, &tmp.u64);
        unsigned long long* ticket = p.scratch + int64_t(seq) * sampleTokensScratchStride(n);
        unsigned long long* partials = ticket + 1;
        __shared__ bool isLast;
        if (tid == 0) {
            partials[slice] = best;
            __threadfence();  // the partial is visible device-wide before the ticket counts it
            isLast = atomicAdd(ticket, 1ull) == static_cast<unsigned long long>(p.slices - 1);
            if (isLast) *ticket = 0;  // every slice has counted: ready for the next launch
        }
        __syncthreads();
        if (!isLast) return;
        __threadfence();
        token = tokenOf(blockMax(tid < p.slices ? __ldcg(partials + tid) : 0ull, &tmp.u64));
    }
    if (!(temperature <= 0.0f || k == 1)) {
        const KthKey kth = k < n ? radixSelect(view, k, hist, &sPrefix, &sRemaining) : KthKey{0u, n};
        const float maxLogit = view.logit(token);
        auto weight = [&](float l) {
            const float w = expf((l - maxLogit) / temperature);
            return isfinite(w) ? w : 0.0f;
        };
        // Total: every token above the k-th key, plus the wanted ties (equal keys, equal weights).
        float local = 0.0f;
        for (int base = 0; base < n; base += kChunk) {
            float l[kItems];
            int idx[kItems];
            view.template load<false>(base, l, idx);
#pragma unroll
            for (int j = 0; j < kItems; ++j)
                if (idx[j] < n && orderedKey(l[j]) > kth.key) local += weight(l[j]);
        }
        const float above = ReduceF(tmp.r).Sum(local);
        if (tid == 0) {
            const float tieWeight = kth.key == 0u ? 0.0f : weight(keyValue(kth.key));
            sTotal = above + kth.tiesWanted * tieWeight;
            sHit = kNoHit;
            sLast = -1;
        }
        __syncthreads();
        const float target = uniformDraw(p.seeds ? p.seeds[seq] : 0, p.offsets ? p.offsets[seq] : 0) * sTotal;

        // The draw, in vocabulary order.
        float running = 0.0f;
        int tiesSeen = 0;
        for (int base = 0; base < n; base += kChunk) {
            float l[kItems];
            int idx[kItems];
            view.template load<true>(base, l, idx);
            int myTies = 0;
#pragma unroll
            for (int j = 0; j < kItems; ++j) myTies += idx[j] < n && orderedKey(l[j]) == kth.key;
            int tieRank, chunkTies;
            ScanI(tmp.i).ExclusiveSum(myTies, tieRank, chunkTies);
            __syncthreads();
            tieRank += tiesSeen;
            float w[kItems], mySum = 0.0f;
            bool selected[kItems];
#pragma unroll
            for (int j = 0; j < kItems; ++j) {
                const uint32_t key = orderedKey(l[j]);
                const bool tie = idx[j] < n && key == kth.key;
                selected[j] = idx[j] < n && (key > kth.key || (tie && tieRank < kth.tiesWanted));
                tieRank += tie;
                w[j] = selected[j] ? weight(l[j]) : 0.0f;
                mySum += w[j];
            }
            float cumulative, chunkSum;
            ScanF(tmp.f).ExclusiveSum(mySum, cumulative, chunkSum);
            cumulative += running;
            int hit = kNoHit, last = -1;
#pragma unroll
            for (int j = 0; j < kItems; ++j) {
                cumulative += w[j];
                if (!selected[j]) continue;
                last = idx[j];
                if (hit == kNoHit && cumulative > target) hit = idx[j];
            }
            if (hit != kNoHit) atomicMin(&sHit, hit);
            if (last >= 0) atomicMax(&sLast, last);
            __syncthreads();
            if (sHit != kNoHit) break;  // uniform: every thread reads it after the barrier
            running += chunkSum;
            tiesSeen += chunkTies;
        }
        token = sHit != kNoHit ? sHit : sLast;
    }
    if (tid == 0) {
        p.outTokens[seq] = token;
        if (present && p.updatePresence) present[token] = 1;
        if (p.advance.contextLens) advanceDecodeRow(p.advance, seq, token);
    }
}

}  // namespace

cudaError_t launchSampleTokens(const SampleTokensParams& p, cudaStream_t stream)
{
    if (p.numSeqs < 0 || p.numSeqs > 65535 || p.vocabSize <= 0 || !p.outTokens) return cudaErrorInvalidValue;
    if (p.slices < 1 || p.slices > kThreads || (p.slices > 1 && !p.scratch)) return cudaErrorInvalidValue;
    if (decodeAdvanceMalformed(p.advance, p.numSeqs)) return cudaErrorInvalidValue;
    if (p.numSeqs == 0) return cudaSuccess;
    // Every slice must own at least one token: the kernel's slice length is whole passes.
    if (p.slices > 1 &&
        (p.slices - 1) * sampleTokensPassesPerSlice(p.vocabSize, p.slices) >= sampleTokensPasses(p.vocabSize))
        return cudaErrorInvalidValue;
    return dispatchDType(p.dtype, [&]<class T>() {
        return launchKernel(sampleTokensKernel<T>, dim3(p.slices, p.numSeqs), kThreads, 0, stream, p);
    });
}

}  // namespace lector::gpu
