// The greedy screen (greedy_screen.cuh): CTAs of 8 warps, each warp 4 consecutive q rows a round (4 KB
// contiguous), the next round's rows loaded while this one's are multiplied; a lane owns the same 16-byte
// chunks of every row (chunk lane and lane + 32), so x's quantized chunks stay in its registers. dp4a takes
// 4 int8 products at a time, against x's high and low halves; the 4 rows' per-lane sums meet in 6 shuffles.
// Then every row's penalized range goes to shared memory, the CTA's largest lower end to the atomic max, and
// the rows that can still win are recomputed from the float16 head, a warp a row.
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/greedy_screen.cuh"

namespace lector::gpu {
namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kRows = 4;                            // rows a warp takes a round
constexpr int kChunks = kScreenMaxK / (32 * 16);    // 16-byte q chunks a lane takes a row

struct RowsInFlight {
    uint4 q[kRows][kChunks];
    float scale[kRows];
};

// The 4 values of v (one per row, each split over the lanes) summed: lane l gets row l >> 3's sum.
__device__ __forceinline__ float reduceFourRows(const float (&v)[kRows], int lane)
{
    const bool up16 = lane & 16, up8 = lane & 8;
    float keep0 = up16 ? v[2] : v[0], keep1 = up16 ? v[3] : v[1];
    keep0 += __shfl_xor_sync(0xffffffffu, up16 ? v[0] : v[2], 16);
    keep1 += __shfl_xor_sync(0xffffffffu, up16 ? v[1] : v[3], 16);
    float keep = up8 ? keep1 : keep0;
    keep += __shfl_xor_sync(0xffffffffu, up8 ? keep0 : keep1, 8);
    keep += __shfl_xor_sync(0xffffffffu, keep, 4);
    keep += __shfl_xor_sync(0xffffffffu, keep, 2);
    keep += __shfl_xor_sync(0xffffffffu, keep, 1);
    return keep;
}

__device__ __forceinline__ int dot4x4(const uint4 a, const uint4 b, int acc)
{
    acc = __dp4a(static_cast<int>(a.x), static_cast<int>(b.x), acc);
    acc = __dp4a(static_cast<int>(a.y), static_cast<int>(b.y), acc);
    acc = __dp4a(static_cast<int>(a.z), static_cast<int>(b.z), acc);
    return __dp4a(static_cast<int>(a.w), static_cast<int>(b.w), acc);
}

template <class T>
__global__ void __launch_bounds__(kThreads, 2) greedyScreenKernel(const __grid_constant__ GreedyScreenParams p)
{
    extern __shared__ __align__(16) uint8_t smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int k = p.k, numChunks = k / 16;
    const int rowsPer = (p.vocab + static_cast<int>(gridDim.x) - 1) / static_cast<int>(gridDim.x);
    const int rowBegin = static_cast<int>(blockIdx.x) * rowsPer;
    const int n = max(0, min(p.vocab, rowBegin + rowsPer) - rowBegin);
    // Shared: x as float [k] | x's high bytes [k] | low bytes [k] | lower [rowsPer] | upper [rowsPer] | present [rowsPer]
    float* xs = reinterpret_cast<float*>(smem);
    int8_t* xHi = reinterpret_cast<int8_t*>(xs + k);
    int8_t* xLo = xHi + k;
    float* lower = reinterpret_cast<float*>(xLo + k);
    float* upper = lower + rowsPer;
    uint8_t* present = reinterpret_cast<uint8_t*>(upper + rowsPer);
    __shared__ float red[2][kWarps];
    __shared__ unsigned long long bestOfWarp[kWarps];
    __shared__ float threshold;
    __shared__ bool isLast;
    __shared__ unsigned candidates;

    // Round `round`'s rows of this warp: local rows (round * kWarps + warp) * kRows + j.
    auto issue = [&](int round, RowsInFlight& f) {
#pragma unroll
        for (int j = 0; j < kRows; ++j) {
            const int local = (round * kWarps + warp) * kRows + j;
            const bool in = local < n;
            const int64_t row = rowBegin + (in ? local : 0);
            f.scale[j] = in ? __ldg(p.scales + row) : 0.0f;
#pragma unroll
            for (int c = 0; c < kChunks; ++c) {
                const int chunk = lane + 32 * c;
                f.q[j][c] = in && chunk < numChunks ? loadNc16(p.q + row * k + chunk * 16) : make_uint4(0, 0, 0, 0);
            }
        }
    };
    const int rounds = (n + kWarps * kRows - 1) / (kWarps * kRows);
    RowsInFlight cur;
    if (rounds > 0) issue(0, cur);  // the weights do not depend on the step: before the wait
    if (tid == 0) candidates = 0;

    gridDependencyWait();
    allowDependentLaunch();

    // x (written by the kernel before), the presence of this CTA's rows, the penalty.
    const int64_t presenceRow = p.presenceRow ? *p.presenceRow : 0;
    const uint8_t* presentRow = p.presence ? p.presence + presenceRow * p.presenceStride + rowBegin : nullptr;
    for (int i = tid; i < n; i += kThreads) present[i] = presentRow ? presentRow[i] : 0;
    const float penalty = p.penalty ? *p.penalty : 1.0f;
    float amax = 0.0f, asum = 0.0f;
    for (int i = tid; i < k; i += kThreads) {
        const float v = toFloat(static_cast<const T*>(p.x)[i]);
        xs[i] = v;
        amax = fmaxf(amax, fabsf(v));
        asum += fabsf(v);
    }
    amax = warpMax(amax);
    asum = warpSum(asum);
    if (lane == 0) red[0][warp] = amax, red[1][warp] = asum;
    __syncthreads();
    amax = 0.0f, asum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) amax = fmaxf(amax, red[0][w]), asum += red[1][w];
    const float sx = screenXScale(amax);
    const float bound = screenBound(asum, sx, k);
    for (int i = tid; i < k; i += kThreads) {
        int hi, lo;
        screenXSplit(screenXLevel(xs[i], sx), hi, lo);
        xHi[i] = static_cast<int8_t>(hi);
        xLo[i] = static_cast<int8_t>(lo);
    }
    __syncthreads();
    uint4 xh[kChunks], xl[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
        const int chunk = lane + 32 * c;
        xh[c] = chunk < numChunks ? *reinterpret_cast<const uint4*>(xHi + chunk * 16) : make_uint4(0, 0, 0, 0);
        xl[c] = chunk < numChunks ? *reinterpret_cast<const uint4*>(xLo + chunk * 16) : make_uint4(0, 0, 0, 0);
    }

    // Every row's penalized range; the largest lower end of the CTA's rows.
    float lowest = -INFINITY;
    for (int round = 0; round < rounds; ++round) {
        RowsInFlight next;
        if (round + 1 < rounds) issue(round + 1, next);
        float v[kRows];
#pragma unroll
        for (int j = 0; j < kRows; ++j) {
            int hi = 0, lo = 0;
#pragma unroll
            for (int c = 0; c < kChunks; ++c) {
                hi = dot4x4(cur.q[j][c], xh[c], hi);
                lo = dot4x4(cur.q[j][c], xl[c], lo);
            }
            v[j] = static_cast<float>(128 * hi + lo);  // |.| < 2^31: 64 products of <= 127 x 16064 a lane
        }
        const float sum = reduceFourRows(v, lane);
        const int j = lane >> 3, local = (round * kWarps + warp) * kRows + j;
        if ((lane & 7) == 0 && local < n) {
            const float s = j == 0 ? cur.scale[0] : j == 1 ? cur.scale[1] : j == 2 ? cur.scale[2] : cur.scale[3];
            float lo, hi;
            screenRange(s * sx * sum, s * bound, present[local] != 0, penalty, lo, hi);
            lower[local] = lo;
            upper[local] = hi;
            lowest = fmaxf(lowest, lo);
        }
        if (round + 1 < rounds) cur = next;
    }
    lowest = warpMax(lowest);
    __syncthreads();  // red is read above; lower / upper written
    if (lane == 0) red[0][warp] = lowest;
    __syncthreads();
    if (tid == 0) {
        float mine = -INFINITY;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) mine = fmaxf(mine, red[0][w]);
        // Any lower end any CTA has published is a valid threshold: the largest so far, this CTA's included.
        const unsigned long long key = orderedKey(mine);
        const unsigned long long before = atomicMax(p.scratch + 1, key);
        threshold = orderedKeyValue(static_cast<uint32_t>(before > key ? before : key));
    }
    __syncthreads();

    // The rows that can still win, recomputed from the head itself: a warp a row.
    const float limit = threshold;
    unsigned long long best = 0;
    unsigned recomputed = 0;
    constexpr int kVec = 16 / sizeof(T);
    for (int base = warp * 32; base < n; base += kThreads) {
        const int local = base + lane;
        unsigned open = __ballot_sync(0xffffffffu, local < n && upper[local] >= limit);
        while (open) {
            const int bit = __ffs(open) - 1;
            open &= open - 1;
            const int row = rowBegin + base + bit;
            const T* w = static_cast<const T*>(p.weight) + int64_t(row) * p.weightStride;
            float acc = 0.0f;
#pragma unroll 4
            for (int vec = lane; vec * kVec < k; vec += 32) {
                const uint4 raw = loadNc16(w + vec * kVec);
                const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
                for (int i = 0; i < kVec; ++i) acc = fmaf(toFloat(e[i]), xs[vec * kVec + i], acc);
            }
            acc = warpSum(acc);
            const float pen = penalizedLogit(acc, present[base + bit] != 0, penalty);
            const unsigned long long c = screenCandidateKey(pen, row);
            best = c > best ? c : best;
            ++recomputed;
        }
    }
    if (lane == 0) {
        bestOfWarp[warp] = best;
        if (p.stats && recomputed) atomicAdd(&candidates, recomputed);
    }
    __syncthreads();
    unsigned long long* ticket = p.scratch;
    unsigned long long* partials = p.scratch + 2;
    if (tid == 0) {
        unsigned long long b = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) b = bestOfWarp[w] > b ? bestOfWarp[w] : b;
        partials[blockIdx.x] = b;
        if (p.stats && candidates) atomicAdd(p.stats, static_cast<unsigned long long>(candidates));
        __threadfence();  // the partial is visible device-wide before the ticket counts it
        isLast = atomicAdd(ticket, 1ull) == static_cast<unsigned long long>(gridDim.x - 1);
        if (isLast) *ticket = 0, p.scratch[1] = 0;  // every CTA has counted and published: ready for the next launch
    }
    __syncthreads();
    if (!isLast) return;
    __threadfence();
    unsigned long long b = 0;
    for (int i = tid; i < static_cast<int>(gridDim.x); i += kThreads) {
        const unsigned long long c = __ldcg(partials + i);
        partials[i] = 0;  // every CTA has written its own: the scratch is left zero, as the launch found it
        b = c > b ? c : b;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long other = __shfl_xor_sync(0xffffffffu, b, o);
        b = other > b ? other : b;
    }
    if (lane == 0) bestOfWarp[warp] = b;
    __syncthreads();
    if (tid == 0) {
#pragma unroll
        for (int w = 0; w < kWarps; ++w) b = bestOfWarp[w] > b ? bestOfWarp[w] : b;
        const int64_t token = screenTokenOf(b);
        *p.outToken = token;
        if (p.presence && p.updatePresence) p.presence[presenceRow * p.presenceStride + token] = 1;
        if (p.advance.contextLens) advanceDecodeRow(p.advance, 0, token);
        if (p.stats) atomicAdd(p.stats + 1, 1ull);
    }
}

}  // namespace

cudaError_t launchGreedyScreen(const GreedyScreenParams& p, cudaStream_t stream)
{
    if (p.vocab <= 0 || p.k <= 0 || p.k % 16 != 0 || p.k > kScreenMaxK || p.numCtas < 1 || !p.x || !p.weight ||
        !p.q || !p.scales || !p.outToken || !p.scratch || p.weightStride < p.k)
        return cudaErrorInvalidValue;
    if ((reinterpret_cast<uintptr_t>(p.q) & 15u) || (reinterpret_cast<uintptr_t>(p.weight) & 15u) ||
        (p.weightStride * dtypeBytes(p.dtype)) % 16 != 0)
        return cudaErrorInvalidValue;
    if (decodeAdvanceMalformed(p.advance, 1)) return cudaErrorInvalidValue;
    const int rowsPer = static_cast<int>((int64_t(p.vocab) + p.numCtas - 1) / p.numCtas);
    const size_t smem = size_t(p.k) * (sizeof(float) + 2) + size_t(rowsPer) * (2 * sizeof(float) + 1);
    return dispatchDType(p.dtype, [&]<class T>() -> cudaError_t {
        if (smem > 48 * 1024)
            LECTOR_CUDA_TRY(cudaFuncSetAttribute(greedyScreenKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        return launchKernelWithPdl(greedyScreenKernel<T>, dim3(p.numCtas), dim3(kThreads), smem, stream, dim3(0, 0, 0),
                                   true, p);
    });
}

}  // namespace lector::gpu
