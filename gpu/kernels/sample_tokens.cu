// Sampling: one CTA of 512 threads per sequence; every pass streams the sequence's logits (and
// presence bytes) from L2, recomputing the penalty instead of storing penalized logits.
//   1. argmax by ordered key, first index on ties (greedy ends here; it also gives the max logit);
//   2. top-k only: radix select, 4 passes of 8 bits over the ordered keys, finds the k-th largest
//      key and how many ties at it are still wanted;
//   3. top-k only: chunked block scans in vocabulary order sum the selected weights, then find the
//      first selected token whose cumulative weight exceeds u * total.
#include <cub/block/block_scan.cuh>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/sample_tokens.cuh"

namespace lector::gpu {
namespace {

constexpr int kThreads = 512;

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
    __device__ __forceinline__ float logit(int i) const
    {
        return penalizedLogit(toFloat(logits[i]), present && present[i], penalty);
    }
};

// The selected set's membership and weight for one chunk element, with the tie bookkeeping.
struct Selection {
    uint32_t kthKey;
    int tiesWanted;   // ties at kthKey that belong to the top k, in vocabulary order
    float maxLogit;
    float temperature;
};

template <class T>
__global__ void __launch_bounds__(kThreads) sampleTokensKernel(SampleTokensParams p)
{
    using ScanU64 = cub::BlockScan<unsigned long long, kThreads>;  // only its Reduce-like use below
    using ScanF = cub::BlockScan<float, kThreads>;
    using ScanI = cub::BlockScan<int, kThreads>;
    __shared__ union {
        typename ScanU64::TempStorage u64;
        typename ScanF::TempStorage f;
        typename ScanI::TempStorage i;
    } tmp;
    __shared__ unsigned hist[256];
    __shared__ uint32_t sPrefix;
    __shared__ int sRemaining;
    __shared__ int sHit;
    __shared__ int sLast;

    const int seq = blockIdx.x, tid = threadIdx.x, n = p.vocabSize;
    uint8_t* present = p.presence ? p.presence + seq * p.presenceStride : nullptr;
    const SeqView<T> view{static_cast<const T*>(p.logits) + seq * p.logitsStride, present,
                          p.repetitionPenalty ? p.repetitionPenalty[seq] : 1.0f};
    const float temperature = p.temperature ? p.temperature[seq] : 0.0f;
    const int topK = p.topK ? p.topK[seq] : 0;
    const int k = topK <= 0 || topK >= n ? n : topK;

    // 1. argmax: (key << 32) | ~index makes the larger key win and, among equal keys, the lower index.
    unsigned long long best = 0;
    for (int i = tid; i < n; i += kThreads) {
        const unsigned long long c = (static_cast<unsigned long long>(orderedKey(view.logit(i))) << 32) |
                                     static_cast<uint32_t>(~static_cast<uint32_t>(i));
        best = c > best ? c : best;
    }
    unsigned long long bestAll;
    ScanU64(tmp.u64).InclusiveScan(best, best, MaxU64(), bestAll);
    __syncthreads();
    const int argmax = static_cast<int>(~static_cast<uint32_t>(bestAll & 0xffffffffull));
    int token = argmax;

    if (!(temperature <= 0.0f || k == 1)) {
        // 2. radix select of the k-th largest key (skipped when all n tokens are candidates).
        uint32_t prefix = 0, mask = 0;
        int remaining = k;
        if (k < n) {
            for (int shift = 24; shift >= 0; shift -= 8) {
                for (int b = tid; b < 256; b += kThreads) hist[b] = 0;
                __syncthreads();
                for (int i = tid; i < n; i += kThreads) {
                    const uint32_t key = orderedKey(view.logit(i));
                    if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
                }
                __syncthreads();
                if (tid == 0) {
                    int above = 0, b = 255;
                    for (; b > 0 && above + int(hist[b]) < remaining; --b) above += hist[b];
                    sPrefix = prefix | (uint32_t(b) << shift);
                    sRemaining = remaining - above;
                }
                __syncthreads();
                prefix = sPrefix;
                remaining = sRemaining;
                mask |= 255u << shift;
            }
        }
        const Selection sel{prefix, k < n ? remaining : n, view.logit(argmax), temperature};

        // 3. total selected weight, then the inverse-CDF walk; both in vocabulary order.
        auto weightOf = [&](int i, int tieRank, bool& selected) {
            selected = false;
            if (i >= n) return 0.0f;
            const float l = view.logit(i);
            const uint32_t key = orderedKey(l);
            selected = key > sel.kthKey || (key == sel.kthKey && tieRank < sel.tiesWanted);
            if (!selected) return 0.0f;
            const float w = expf((l - sel.maxLogit) / sel.temperature);
            return isfinite(w) ? w : 0.0f;
        };
        auto isTie = [&](int i) { return i < n && orderedKey(view.logit(i)) == sel.kthKey ? 1 : 0; };

        float total = 0.0f;
        int tiesSeen = 0;
        for (int base = 0; base < n; base += kThreads) {
            const int i = base + tid;
            int tieRank, tieCount;
            ScanI(tmp.i).ExclusiveSum(isTie(i), tieRank, tieCount);
            __syncthreads();
            bool selected;
            const float w = weightOf(i, tiesSeen + tieRank, selected);
            float ignored, chunkSum;
            ScanF(tmp.f).ExclusiveSum(w, ignored, chunkSum);
            __syncthreads();
            total += chunkSum;
            tiesSeen += tieCount;
        }

        const float target = uniformDraw(p.seeds ? p.seeds[seq] : 0, p.offsets ? p.offsets[seq] : 0) * total;
        if (tid == 0) {
            sHit = 0x7fffffff;
            sLast = -1;
        }
        __syncthreads();
        float running = 0.0f;
        tiesSeen = 0;
        for (int base = 0; base < n; base += kThreads) {
            const int i = base + tid;
            int tieRank, tieCount;
            ScanI(tmp.i).ExclusiveSum(isTie(i), tieRank, tieCount);
            __syncthreads();
            bool selected;
            const float w = weightOf(i, tiesSeen + tieRank, selected);
            float cumulative, chunkSum;
            ScanF(tmp.f).InclusiveSum(w, cumulative, chunkSum);
            if (selected) {
                atomicMax(&sLast, i);
                if (running + cumulative > target) atomicMin(&sHit, i);
            }
            __syncthreads();
            if (sHit != 0x7fffffff) break;  // uniform: every thread reads it after the barrier
            running += chunkSum;
            tiesSeen += tieCount;
        }
        token = sHit != 0x7fffffff ? sHit : sLast;
    }
    if (tid == 0) {
        p.outTokens[seq] = token;
        if (present && p.updatePresence) present[token] = 1;
    }
}

}  // namespace

cudaError_t launchSampleTokens(const SampleTokensParams& p, cudaStream_t stream)
{
    if (p.numSeqs < 0 || p.vocabSize <= 0 || !p.outTokens) return cudaErrorInvalidValue;
    if (p.numSeqs == 0) return cudaSuccess;
    return dispatchDType(p.dtype, [&]<class T>() {
        sampleTokensKernel<T><<<p.numSeqs, kThreads, 0, stream>>>(p);
        return cudaGetLastError();
    });
}

}  // namespace lector::gpu
