// The batch-1 decode step as two kernels a layer, partitioned by KV head (design: the header).
// bench/gpu/bench_head_parallel_layers.cu measured the structure first (docs/perf.md, calls 144-150).
#include "gpu/kernels/head_parallel_decode.cuh"

#include <cooperative_groups.h>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/skinny_gemm.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#pragma nv_diag_suppress 177  // the helpers only the sm_90 bodies use
#endif

namespace lector::gpu {

const char* headParallelDecodeShapeMismatch(const PersistentDecodeParams& p)
{
    if (p.dtype != DType::F16 && p.dtype != DType::BF16) return "the kernels take float16 or bfloat16";
    if (p.hidden != kHpHidden || p.intermediate != kHpIntermediate || p.numQHeads != kHpQHeads ||
        p.numKvHeads != kHpKvHeads || p.headDim != kHpHeadDim)
        return "the kernels are built for hidden 1024, intermediate 3584, 16 query and 8 KV heads of 128";
    if (p.numPosAxes < 1 || p.numPosAxes > 4) return "1 to 4 position axes";
    return "";
}

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kGroupSize = kHpQHeads / kHpKvHeads;                  // 2 query heads a KV head
constexpr int kQkvRowsCta = (kGroupSize + 2) * kHpHeadDim / kHpCluster;  // 32
constexpr int kHeadOut = kGroupSize * kHpHeadDim;                   // 256 attention outputs a KV head
constexpr int kOutRowsCta = kHpHidden / kHpCluster;                 // 64 rows of o and of down a CTA
constexpr int kInterCta = kHpIntermediate / kHpCtas;                // 28 gate and 28 up rows a CTA
constexpr int kInterCluster = kInterCta * kHpCluster;               // 448
constexpr int kGuRowsWarp = 2 * kInterCta / kWarps;                 // 7 (warps 0-3 gate rows, 4-7 up rows)
constexpr int kKRow = kHpHeadDim + 8;                               // K rows in shared memory, padded
constexpr int kORow = kHeadOut + 32;                                // o rows in shared memory, padded
constexpr int kHalfDim = kHpHeadDim / 2;
static_assert(kHeadOut == kThreads && kHpHidden == 4 * kThreads && kGuRowsWarp * kWarps == 2 * kInterCta);
static_assert(kInterCta % kGuRowsWarp == 0, "a warp's rows are all gate or all up rows");

// A warp's gate/up rows in shared memory, less row 0's first 32 chunks (one a lane, in registers): so
// that an MLP CTA fits beside an attention CTA on one multiprocessor.
constexpr int kGuWarpElems = kGuRowsWarp * kHpHidden - 32 * 8;

template <class T>
struct SmemAttention {
    T o[kOutRowsCta * kORow];              // this CTA's rows of o, its head's columns (each thread its chunks)
    T k[kHpPrefetchKeys * kKRow];           // the partition's first keys (each warp its own)
    T v[kHpPrefetchKeys * kHpHeadDim];
    alignas(16) T x[kHpHidden];             // the normalised input
    alignas(16) T qkv[(kGroupSize + 2) * kHpHeadDim];  // the head's rows, pushed by every CTA of the cluster
    alignas(16) T q[kHeadOut];              // after RoPE and QK-norm
    alignas(16) T newKey[kHpHeadDim];
    float cosF[kHalfDim], sinF[kHalfDim];   // the new token's rotation per frequency
    alignas(16) float wpart[kWarps][kHeadOut];  // each warp's unnormalised output (float4 stores)
    float wm[kWarps][kGroupSize], wl[kWarps][kGroupSize];
    float recv[kHpCluster][kHeadOut];       // every CTA's partial, pushed by it
    float recvM[kHpCluster][kGroupSize], recvL[kHpCluster][kGroupSize];
    alignas(16) T merged[kHeadOut];
    float red[32];                          // blockSum's scratch
    uint8_t keyLoaded[kHpPrefetchKeys];     // the prefetched key's block is in the pool (else it is masked)
};

template <class T>
struct SmemMlp {
    T gu[kWarps * kGuWarpElems];
    alignas(16) T x[kHpHidden];
    alignas(16) T hAll[kInterCluster];      // pushed by every CTA of the cluster
    float rowOut[2 * kInterCta];
    float red[32];                          // blockSum's scratch
};

struct Buffers {
    float* residualAttn;  // written by the attention kernel (CTA 0), read by the MLP kernel
    float* residualMlp;   // written by the MLP kernel (CTA 0), read by the next attention kernel
    float* oPartials;     // [8][1024]
    float* downPartials;  // [8][1024]
    void* finalRow;       // [1024] in the dtype
};

// Exchanges inside a cluster (common.cuh's barrier.cluster): a CTA pushes into the other CTAs' shared
// memory, then arrives (release); after the wait (acquire) it reads only its own. The relaxed arrive at a
// kernel's start, waited for before the first push, makes sure every CTA of the cluster runs (its shared
// memory exists) by then.

// By value: an operand read from shared memory is then one 16-byte load; through a reference unpack16
// reads it as eight 2-byte loads (the PTX had 339 ld.shared.u16 in the attention kernel so).
template <class T>
__device__ __forceinline__ float dot8(const uint4 a, const uint4 b)
{
    const Vec16<T> x = unpack16<T>(a), y = unpack16<T>(b);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) s = fmaf(x.v[i], y.v[i], s);
    return s;
}

template <class T>
__device__ __forceinline__ const T* tensorOf(const PersistentDecodeParams& p, int layer, int which)
{
    return static_cast<const T*>(p.layers[layer * kPlCount + which]);
}

// x = RMSNorm(r) * weight in the dtype into shared memory, where r = round(residual + round(sum of the 8
// partials)) is the chain's residual after its add (rms_norm.cuh), or the embedding row at layer 0;
// CTA 0 of the grid stores r into `keep` where given. Thread t owns elements 4t .. 4t + 3; `weight` its 4
// weights.
template <class T>
__device__ __forceinline__ void addNorm(const float* residual, const float* partials, const T* embedRow, float* keep,
                                        const float (&weight)[4], float eps, T* x, float* red)
{
    const int i = 4 * threadIdx.x;
    float r[4];
    if (embedRow) {
#pragma unroll
        for (int e = 0; e < 4; ++e) r[e] = toFloat(embedRow[i + e]);
    } else {
        const float4 base = *reinterpret_cast<const float4*>(residual + i);
        float4 s = *reinterpret_cast<const float4*>(partials + i);
#pragma unroll
        for (int c = 1; c < kHpKvHeads; ++c) {
            const float4 p = *reinterpret_cast<const float4*>(partials + c * kHpHidden + i);
            s.x += p.x, s.y += p.y, s.z += p.z, s.w += p.w;
        }
        r[0] = roundTo<T>(base.x + roundTo<T>(s.x)), r[1] = roundTo<T>(base.y + roundTo<T>(s.y));
        r[2] = roundTo<T>(base.z + roundTo<T>(s.z)), r[3] = roundTo<T>(base.w + roundTo<T>(s.w));
    }
    if (keep && blockIdx.x == 0) *reinterpret_cast<float4*>(keep + i) = make_float4(r[0], r[1], r[2], r[3]);
    const float inv = rsqrtf(blockSum(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3], red) / kHpHidden + eps);
#pragma unroll
    for (int e = 0; e < 4; ++e) x[i + e] = fromFloat<T>(r[e] * inv * weight[e]);
}

template <class T>
__device__ __forceinline__ void loadWeight4(const T* w, float (&out)[4])
{
    const int i = 4 * threadIdx.x;
#pragma unroll
    for (int e = 0; e < 4; ++e) out[e] = toFloat(w[i + e]);
}

// Element offset of key `t`'s row of KV head `head` in a cache whose block `block` holds it.
__device__ __forceinline__ int64_t cacheOffset(int block, int t, int head)
{
    return ((int64_t(block) * kKvBlockSize + t % kKvBlockSize) * kHpKvHeads + head) * kHpHeadDim;
}

// Key `t` of the sequence: its cache row of KV head `head`, or nullptr where its block id is masked.
template <class T>
__device__ __forceinline__ const T* cacheRow(const T* cache, const PersistentDecodeParams& p, int t, int head)
{
    const int block = p.blockTable[t / kKvBlockSize];
    if (block < 0 || block >= p.numCacheBlocks) return nullptr;
    return cache + cacheOffset(block, t, head);
}

// Benchmarks' trace (the header): thread 0's stamp of `mark`; nothing unless built with LECTOR_HP_TRACE.
#ifdef LECTOR_HP_TRACE
constexpr bool kTrace = true;
#else
constexpr bool kTrace = false;
#endif
__device__ __forceinline__ void traceMark(const PersistentDecodeParams& p, int layer, int kernel, int mark)
{
    if constexpr (kTrace) {
        if (!p.trace || threadIdx.x != 0) return;
        long long* t = p.trace + ((int64_t(layer) * 2 + kernel) * kHpCtas + blockIdx.x) * kHpTraceMarks;
        t[mark] = clock64();
        if (mark == 0) t[kHpTraceEntryNs] = static_cast<long long>(globalTimer()), t[kHpTraceSm] = smId();
    }
}
__device__ __forceinline__ void traceExit(const PersistentDecodeParams& p, int layer, int kernel)
{
    if constexpr (kTrace) {
        if (p.trace && threadIdx.x == 0)
            p.trace[((int64_t(layer) * 2 + kernel) * kHpCtas + blockIdx.x) * kHpTraceMarks + kHpTraceExitNs] =
                static_cast<long long>(globalTimer());
    }
}

// kFirst: layer 0's kernel, launched under PDL after the step before's sampler (or greedy screen), which
// moves this step's inputs on in place (launches of several steps, SampleAdvance). It reads them only after
// its wait, and lets the next kernel launch only then: every later kernel reads them before its own wait.
// The other layers read them before the wait, as the first kernel's wait ordered them after the writes.
// After its wait kFirst issues the inputs' loads at once and uses them behind the norm (which waits for the
// token's embedding row): the K/V prefetch right after it, the rotation's table row during the qkv rows.
template <class T, bool kFirst>
__global__ void __launch_bounds__(kThreads, 2)
    hpAttentionKernel(const __grid_constant__ PersistentDecodeParams p, Buffers b, int layer)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) uint8_t smemRaw[];
    SmemAttention<T>& sm = *reinterpret_cast<SmemAttention<T>*>(smemRaw);
    traceMark(p, layer, 0, 0);
    const cg::cluster_group cluster = cg::this_cluster();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int head = blockIdx.x / kHpCluster, rank = static_cast<int>(cluster.block_rank());
    const T* qkvW = tensorOf<T>(p, layer, kPlQkv);
    const T* oW = tensorOf<T>(p, layer, kPlO);
    T* keyCache = const_cast<T*>(tensorOf<T>(p, layer, kPlKeyCache));
    T* valueCache = const_cast<T*>(tensorOf<T>(p, layer, kPlValueCache));
    // From the step's inputs (see kFirst for when they are read): the new key's index, this CTA's partition
    // of the context and how many of its keys are prefetched, the new key's cache slot.
    int newKey = 0, first = 0, keys = 0, prefetched = 0;
    int64_t newSlot = 0;
    auto readPartition = [&](int contextLen) {
        const int context = max(contextLen, 1);
        newKey = context - 1;
        const int share = (context + kHpCluster - 1) / kHpCluster;
        first = rank * share;
        keys = max(0, min(share, context - first));
        prefetched = min(keys, kHpPrefetchKeys);
    };
    if constexpr (!kFirst) readPartition(*p.contextLen);

    // Before the wait: qkv rows into registers (thread t: row t / 8, chunks j * 8 + t % 8; CTAs 0-7 the
    // query rows, 8-11 the key's, 12-15 the value's), the norm weights, the partition's first keys and
    // values, this thread's chunks of o (row t / 4, chunks j * 4 + t % 4), the rotation (kFirst: the keys
    // and the rotation after the wait).
    const int qRow = tid >> 3, qPart = tid & 7, oRow = tid >> 2, oPart = tid & 3;
    const int rowBase = rank < 8 ? kHeadOut * head + kQkvRowsCta * rank
                      : rank < 12 ? kHpQHeads * kHpHeadDim + kHpHeadDim * head + kQkvRowsCta * (rank - 8)
                                  : (kHpQHeads + kHpKvHeads) * kHpHeadDim + kHpHeadDim * head + kQkvRowsCta * (rank - 12);
    uint4 wq[16];
    {
        const T* src = qkvW + int64_t(rowBase + qRow) * kHpHidden + qPart * 8;
#pragma unroll
        for (int j = 0; j < 16; ++j) wq[j] = loadNc16(src + j * 64);
    }
    float normW[4];
    loadWeight4(tensorOf<T>(p, layer, kPlInputNorm), normW);
    // QK-norm weights of warp 0, 1 (query heads) and 2 (the key): dims lane + 32 h, h < 4.
    float qkNormW[4] = {0, 0, 0, 0};
    if (warp <= kGroupSize) {
        const T* w = tensorOf<T>(p, layer, warp < kGroupSize ? kPlQueryNorm : kPlKeyNorm);
#pragma unroll
        for (int h = 0; h < 4; ++h) qkNormW[h] = toFloat(w[lane + 32 * h]);
    }
    if constexpr (!kFirst) newSlot = *p.slot;
    // The partition's first keys, 16 chunks a row, spread over all the CTA's threads
    // (key = i / 16 of chunk i = tid + 256 j), one cp.async group. (A warp a group of 8 keys, as before, left
    // warps 0-2 a second group at 65-84 keys a CTA, and the step ~17 us slower at a page's contexts:
    // perf.md, call 184.) Every round's block id is loaded first, all in flight together: cp.async's memory
    // clobber keeps the compiler from moving a load past a copy, so loaded between the copies (as before)
    // each round waited for two dependent block-table loads, K's and V's, one round after the other.
    auto prefetchKeys = [&] {
        constexpr int kPrefetchRounds = (kHpPrefetchKeys * 16 + kThreads - 1) / kThreads;
        int blockOf[kPrefetchRounds];
#pragma unroll
        for (int j = 0; j < kPrefetchRounds; ++j) {
            const int t = first + (tid + j * kThreads) / 16;
            blockOf[j] = t < first + prefetched && t != newKey ? p.blockTable[t / kKvBlockSize] : -1;
        }
#pragma unroll
        for (int j = 0; j < kPrefetchRounds; ++j) {
            const int i = tid + j * kThreads, key = i / 16, c = i % 16, t = first + key;
            if (key >= prefetched) break;
            const bool in = blockOf[j] >= 0 && blockOf[j] < p.numCacheBlocks;  // masked blocks and the new key: not
            if (c == 0) sm.keyLoaded[key] = in;
            if (!in) continue;
            const int64_t at = cacheOffset(blockOf[j], t, head) + c * 8;
            cpAsync16(sm.k + key * kKRow + c * 8, keyCache + at, true);
            cpAsync16(sm.v + key * kHpHeadDim + c * 8, valueCache + at, true);
        }
        cpAsyncCommit();
    };
    // The new token's rotation (threads below kHalfDim, a frequency each): its table row depends on a loaded
    // position, and storing it into shared memory waits for both loads; before the wait it comes last, so as
    // not to hold warps 0 and 1 back from issuing their copies.
    auto positionOf = [&]() -> int64_t {
        int axis = 0, bound = p.sections[0];
        while (tid >= bound && axis + 1 < p.numPosAxes) bound += p.sections[++axis];
        return p.positions[axis * p.positionsAxisStride];
    };
    auto rotationOf = [&](int64_t position) {
        const int64_t pos = min(max(position, int64_t(0)), int64_t(p.maxPosition - 1));
        return make_float2(p.cosSin[pos * kHpHeadDim + tid], p.cosSin[pos * kHpHeadDim + kHalfDim + tid]);
    };
    auto storeRotation = [&](float2 rotation) { sm.cosF[tid] = rotation.x, sm.sinF[tid] = rotation.y; };
    if constexpr (!kFirst) prefetchKeys();
    {
        const T* src = oW + int64_t(kOutRowsCta * rank + oRow) * (kHpQHeads * kHpHeadDim) + kHeadOut * head;
#pragma unroll
        for (int j = 0; j < kHeadOut / 32; ++j) cpAsync16(sm.o + oRow * kORow + (j * 4 + oPart) * 8, src + (j * 4 + oPart) * 8, true);
    }
    cpAsyncCommit();
    if constexpr (!kFirst)
        if (tid < kHalfDim) storeRotation(rotationOf(positionOf()));
    clusterArriveRelaxed();
    if constexpr (!kFirst) allowDependentLaunch();
    gridDependencyWait();
    // kFirst: the step's inputs loaded now and used after the norm below (which itself waits for the token's
    // embedding row), so that their round trips overlap it.
    int contextLen = 0;
    int64_t position = 0;
    float2 rotation = make_float2(0.0f, 0.0f);
    if constexpr (kFirst) {
        allowDependentLaunch();
        contextLen = *p.contextLen;
        newSlot = *p.slot;
        if (tid < kHalfDim) position = positionOf();
    }
    traceMark(p, layer, 0, kHpAttnWaited);

    const T* embedRow = nullptr;
    if (layer == 0) {
        const int64_t id = min(max(*p.tokenId, int64_t(0)), int64_t(p.vocab - 1));
        embedRow = static_cast<const T*>(p.embed) + id * kHpHidden;
    }
    addNorm<T>(b.residualMlp, b.downPartials, embedRow, b.residualAttn, normW, p.eps, sm.x, sm.red);
    __syncthreads();
    if constexpr (kFirst) {
        // The keys and the rotation are read after the cluster barriers below, which order these stores. The
        // rotation is stored just before that barrier, so that its loads overlap the qkv rows.
        readPartition(contextLen);
        prefetchKeys();  // committed after o's copies: the wait for the keys below waits for both
        if (tid < kHalfDim) rotation = rotationOf(position);
    }
    traceMark(p, layer, 0, kHpAttnNormed);

    // qkv rows, rounded, pushed into every CTA of the cluster
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) acc += dot8<T>(wq[j], *reinterpret_cast<const uint4*>(sm.x + (j * 8 + qPart) * 8));
    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
    acc += __shfl_xor_sync(0xffffffffu, acc, 2);
    acc += __shfl_xor_sync(0xffffffffu, acc, 4);
    clusterWaitAcquire();
    if (qPart == 0) {
        const T v = fromFloat<T>(acc);
#pragma unroll
        for (int r = 0; r < kHpCluster; ++r) *cluster.map_shared_rank(&sm.qkv[rank * kQkvRowsCta + qRow], r) = v;
    }
    if constexpr (kFirst)
        if (tid < kHalfDim) storeRotation(rotation);
    clusterArriveRelease();
    clusterWaitAcquire();
    traceMark(p, layer, 0, kHpAttnQkv);

    // RoPE, then QK-norm, of the query heads (warps 0, 1) and the key (warp 2): lane has pairs (j, j + 64)
    // for j = lane, lane + 32. CTA 0 writes the new key and value into the cache.
    if (warp <= kGroupSize) {
        const T* src = sm.qkv + warp * kHpHeadDim;
        float y[4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int j = lane + 32 * h;
            const float x1 = toFloat(src[j]), x2 = toFloat(src[j + kHalfDim]);
            y[2 * h] = x1 * sm.cosF[j] - x2 * sm.sinF[j];
            y[2 * h + 1] = x2 * sm.cosF[j] + x1 * sm.sinF[j];
        }
        const float inv = rsqrtf(warpSum(y[0] * y[0] + y[1] * y[1] + y[2] * y[2] + y[3] * y[3]) / kHpHeadDim + p.eps);
        T* dst = warp < kGroupSize ? sm.q + warp * kHpHeadDim : sm.newKey;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int j = lane + 32 * h;
            dst[j] = fromFloat<T>(y[2 * h] * inv * qkNormW[h]);
            dst[j + kHalfDim] = fromFloat<T>(y[2 * h + 1] * inv * qkNormW[h + 2]);
        }
        // The new key and value also take their place among this CTA's prefetched keys, if theirs.
        const int newIndex = newKey - first;
        if (warp == kGroupSize && newIndex >= 0 && newIndex < prefetched) {
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                sm.k[newIndex * kKRow + lane + 32 * h] = dst[lane + 32 * h];
                sm.v[newIndex * kHpHeadDim + lane + 32 * h] = sm.qkv[(kGroupSize + 1) * kHpHeadDim + lane + 32 * h];
            }
            if (lane == 0) sm.keyLoaded[newIndex] = 1;
        }
        if (rank == 0 && warp == kGroupSize && newSlot >= 0 && newSlot < int64_t(p.numCacheBlocks) * kKvBlockSize) {
            const int64_t at = (newSlot * kHpKvHeads + head) * kHpHeadDim;
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                keyCache[at + lane + 32 * h] = dst[lane + 32 * h];
                valueCache[at + lane + 32 * h] = sm.qkv[(kGroupSize + 1) * kHpHeadDim + lane + 32 * h];
            }
        }
    }
    traceMark(p, layer, 0, kHpAttnRope);
    if constexpr (kFirst) cpAsyncWait<0>();  // the keys' group is the last
    else cpAsyncWait<1>();                   // the keys' group is before o's
    __syncthreads();
    traceMark(p, layer, 0, kHpAttnKvLanded);

    // Attention over the partition: a warp takes a group of 8 prefetched keys, then a quad of 4 (keys 65-84),
    // then groups of the keys read after the wait (warp, warp + 8, ...); a running max and sum, and the
    // output's dims 4 lane .. + 3 of both heads.
    {
        const int tq = lane >> 2, quarter = lane & 3;
        uint4 qc[kGroupSize][4];
#pragma unroll
        for (int g = 0; g < kGroupSize; ++g)
#pragma unroll
            for (int j = 0; j < 4; ++j) qc[g][j] = *reinterpret_cast<const uint4*>(sm.q + g * kHpHeadDim + (quarter * 4 + j) * 8);
        const float scaleLog2 = p.scale * 1.4426950408889634f;
        float m[kGroupSize], l[kGroupSize], out[kGroupSize][4];
#pragma unroll
        for (int g = 0; g < kGroupSize; ++g) {
            m[g] = -INFINITY, l[g] = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; ++e) out[g][e] = 0.0f;
        }
        // The online softmax's step for head g over a round of keys: s is this lane's scaled logit (-inf where
        // not live), lanes that differ in bit kKeyBit or above hold different keys (the same key below). The
        // running max, sum and output move on; returns this lane's p = 2^(s - the new max).
        auto softmaxStep = [&]<int kKeyBit>(int g, float s, bool live) {
            float top = s;
#pragma unroll
            for (int o = kKeyBit; o < 32; o <<= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, o));
            const float mNew = fmaxf(m[g], top);
            const float corr = mNew == -INFINITY ? 1.0f : fastExp2(m[g] - mNew);
            const float pr = live ? fastExp2(s - mNew) : 0.0f;
            float ps = pr;
#pragma unroll
            for (int o = kKeyBit; o < 32; o <<= 1) ps += __shfl_xor_sync(0xffffffffu, ps, o);
            l[g] = l[g] * corr + ps;
            m[g] = mNew;
#pragma unroll
            for (int e = 0; e < 4; ++e) out[g][e] *= corr;
            return pr;
        };
        // out += p0 v (head 0) and p1 v (head 1) at this lane's 4 dims of the value row v.
        auto addValue = [&](float p0, float p1, const T* v) {
            const uint2 raw = *reinterpret_cast<const uint2*>(v + 4 * lane);
            const T* e = reinterpret_cast<const T*>(&raw);
            const float v0 = toFloat(e[0]), v1 = toFloat(e[1]), v2 = toFloat(e[2]), v3 = toFloat(e[3]);
            out[0][0] = fmaf(p0, v0, out[0][0]), out[0][1] = fmaf(p0, v1, out[0][1]);
            out[0][2] = fmaf(p0, v2, out[0][2]), out[0][3] = fmaf(p0, v3, out[0][3]);
            out[1][0] = fmaf(p1, v0, out[1][0]), out[1][1] = fmaf(p1, v1, out[1][1]);
            out[1][2] = fmaf(p1, v2, out[1][2]), out[1][3] = fmaf(p1, v3, out[1][3]);
        };
        // The end of a round of 32 / kLanes keys, kLanes lanes a key (lane = kLanes x key + part), from each
        // lane's partial dot products d with the two heads: summed over the key's lanes, the softmax moved on,
        // and out += p v over the round's live keys (valueOf(u): the value row of the round's key u, called
        // by every lane).
        auto finishRound = [&]<int kLanes>(float (&d)[kGroupSize], bool live, auto valueOf) {
            const unsigned liveKeys = __ballot_sync(0xffffffffu, live);  // bit kLanes u: key u of the round
            float pr[kGroupSize];
#pragma unroll
            for (int g = 0; g < kGroupSize; ++g) {
#pragma unroll
                for (int o = 1; o < kLanes; o <<= 1) d[g] += __shfl_xor_sync(0xffffffffu, d[g], o);
                pr[g] = softmaxStep.template operator()<kLanes>(g, live ? d[g] * scaleLog2 : -INFINITY, live);
            }
#pragma unroll
            for (int u = 0; u < 32 / kLanes; ++u) {
                const float p0 = __shfl_sync(0xffffffffu, pr[0], kLanes * u), p1 = __shfl_sync(0xffffffffu, pr[1], kLanes * u);
                const T* vu = valueOf(u);
                if (liveKeys >> (kLanes * u) & 1u) addValue(p0, p1, vu);
            }
        };
        // A group of 8 keys: lane = 4 x key + quarter of the dims, q's in registers; this lane's key row kr
        // (used where live).
        auto attendGroup = [&](const T* kr, bool live, auto valueOf) {
            float d[kGroupSize];
#pragma unroll
            for (int g = 0; g < kGroupSize; ++g) {
                d[g] = 0.0f;
                if (live) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) d[g] += dot8<T>(*reinterpret_cast<const uint4*>(kr + (quarter * 4 + j) * 8), qc[g][j]);
                }
            }
            finishRound.template operator()<4>(d, live, valueOf);
        };
        // A quad of 4 prefetched keys from `base` (those below `prefetched` and loaded): lane = 8 x key + e,
        // with the key's 16-byte chunks e and e + 8 (a phase of 8 lanes reads 128 contiguous bytes), q's from
        // shared memory (the group's stay in registers for the groups after this). A quad's chain is shorter
        // than a group's (two dot8 a head instead of four, one shuffle level less in its max and sum, 4 values
        // instead of 8): at 65-84 keys a CTA (a page's decode) the warps' second round took 4-7 us a step
        // less as quads than as groups (call 190).
        auto attendQuad = [&](int base) {
            const int key = base + (lane >> 3), e = lane & 7;
            const bool live = key < prefetched && sm.keyLoaded[key];
            float d[kGroupSize];
#pragma unroll
            for (int g = 0; g < kGroupSize; ++g) {
                d[g] = 0.0f;
                if (live) {
                    const T* kr = sm.k + key * kKRow;
                    const T* qr = sm.q + g * kHpHeadDim;
                    d[g] = dot8<T>(*reinterpret_cast<const uint4*>(kr + e * 8), *reinterpret_cast<const uint4*>(qr + e * 8)) +
                           dot8<T>(*reinterpret_cast<const uint4*>(kr + (e + 8) * 8), *reinterpret_cast<const uint4*>(qr + (e + 8) * 8));
                }
            }
            finishRound.template operator()<8>(d, live, [&](int w) { return sm.v + (base + w) * kHpHeadDim; });
        };
        static_assert(kHpPrefetchKeys <= 8 * kWarps + 4 * kWarps, "a round of groups and one of quads cover the prefetch");
        // The keys loaded before the wait (the new key among them where it is this CTA's), from shared memory:
        // the first 64 a group of 8 a warp, the rest (65-84 keys a CTA: a page's decode) 4 a warp.
        const int inGroups = min(prefetched, 8 * kWarps);
        if (warp * 8 < inGroups) {
            const int key = warp * 8 + tq;
            attendGroup(sm.k + key * kKRow, key < inGroups && sm.keyLoaded[key],
                        [&](int u) { return sm.v + (warp * 8 + u) * kHpHeadDim; });
        }
        if (inGroups + 4 * warp < prefetched) attendQuad(inGroups + 4 * warp);
        // The rest of the partition (contexts above 16 x kHpPrefetchKeys), from the cache.
        for (int grp = warp; prefetched + grp * 8 < keys; grp += kWarps) {
            const int key = prefetched + grp * 8 + tq, t = first + key;
            const T *kr = nullptr, *vr = nullptr;
            if (key < keys) {
                if (t == newKey) kr = sm.newKey, vr = sm.qkv + (kGroupSize + 1) * kHpHeadDim;
                else if ((kr = cacheRow(keyCache, p, t, head))) vr = valueCache + (kr - keyCache);
            }
            const unsigned long long vrBits = reinterpret_cast<unsigned long long>(vr);
            attendGroup(kr, kr != nullptr,
                        [&](int u) { return reinterpret_cast<const T*>(__shfl_sync(0xffffffffu, vrBits, 4 * u)); });
        }
#pragma unroll
        for (int g = 0; g < kGroupSize; ++g) {
            *reinterpret_cast<float4*>(&sm.wpart[warp][g * kHpHeadDim + 4 * lane]) = make_float4(out[g][0], out[g][1], out[g][2], out[g][3]);
            if (lane == 0) sm.wm[warp][g] = m[g], sm.wl[warp][g] = l[g];
        }
    }
    traceMark(p, layer, 0, kHpAttnWarp0Keys);
    __syncthreads();
    traceMark(p, layer, 0, kHpAttnKeys);
    {  // the CTA's partial (thread t: output t, head t / 128), pushed into every CTA of the cluster
        const int g = tid / kHpHeadDim;
        float top = -INFINITY;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) top = fmaxf(top, sm.wm[w][g]);
        float sum = 0.0f, o = 0.0f;
        if (top != -INFINITY) {
#pragma unroll
            for (int w = 0; w < kWarps; ++w) {
                const float e = fastExp2(sm.wm[w][g] - top);  // 0 for a warp without keys
                sum = fmaf(sm.wl[w][g], e, sum);
                o = fmaf(sm.wpart[w][tid], e, o);
            }
        }
#pragma unroll
        for (int r = 0; r < kHpCluster; ++r) *cluster.map_shared_rank(&sm.recv[rank][tid], r) = o;
        if (tid % kHpHeadDim == 0) {
#pragma unroll
            for (int r = 0; r < kHpCluster; ++r) {
                *cluster.map_shared_rank(&sm.recvM[rank][g], r) = top;
                *cluster.map_shared_rank(&sm.recvL[rank][g], r) = sum;
            }
        }
    }
    clusterArriveRelease();
    clusterWaitAcquire();
    traceMark(p, layer, 0, kHpAttnExchanged);
    {  // merge the 16 partitions (the new key's makes the max finite), rounded as the attention's output
        const int g = tid / kHpHeadDim;
        float top = -INFINITY;
#pragma unroll
        for (int r = 0; r < kHpCluster; ++r) top = fmaxf(top, sm.recvM[r][g]);
        float sum = 0.0f, o = 0.0f;
#pragma unroll
        for (int r = 0; r < kHpCluster; ++r) {
            const float e = fastExp2(sm.recvM[r][g] - top);
            sum = fmaf(sm.recvL[r][g], e, sum);
            o = fmaf(sm.recv[r][tid], e, o);
        }
        sm.merged[tid] = fromFloat<T>(o / sum);
    }
    cpAsyncWait<0>();
    __syncthreads();
    traceMark(p, layer, 0, kHpAttnMerged);
    {  // o rows: this CTA's 64 rows times the head's 256 outputs, a partial of the hidden vector
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < kHeadOut / 32; ++j) {
            const int c = j * 4 + oPart;
            s += dot8<T>(*reinterpret_cast<const uint4*>(sm.o + oRow * kORow + c * 8), *reinterpret_cast<const uint4*>(sm.merged + c * 8));
        }
        s += __shfl_xor_sync(0xffffffffu, s, 1);
        s += __shfl_xor_sync(0xffffffffu, s, 2);
        if (oPart == 0) b.oPartials[head * kHpHidden + rank * kOutRowsCta + oRow] = s;
    }
    traceMark(p, layer, 0, kHpAttnDone);
    traceExit(p, layer, 0);
#endif
}

template <class T>
__global__ void __launch_bounds__(kThreads, 2)
    hpMlpKernel(const __grid_constant__ PersistentDecodeParams p, Buffers b, int layer)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) uint8_t smemRaw[];
    SmemMlp<T>& sm = *reinterpret_cast<SmemMlp<T>*>(smemRaw);
    traceMark(p, layer, 1, 0);
    const cg::cluster_group cluster = cg::this_cluster();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int cta = blockIdx.x, group = cta / kHpCluster, rank = static_cast<int>(cluster.block_rank());
    const T* guW = tensorOf<T>(p, layer, kPlGateUp);
    const T* downW = tensorOf<T>(p, layer, kPlDown);

    // Before the wait: warp w's 7 gate (w < 4) or up rows by cp.async (row 0's first chunk a lane in a
    // register), the down rows into registers (thread t: row t / 4, chunks j * 4 + t % 4 of the cluster's
    // 448 columns), the norm weights.
    const int warpRow0 = warp * kGuRowsWarp;  // of the CTA's 56: 0-27 gate, 28-55 up
    const int globalRow0 = warpRow0 < kInterCta ? kInterCta * cta + warpRow0 : kHpIntermediate + kInterCta * cta + warpRow0 - kInterCta;
    const T* guSrc = guW + int64_t(globalRow0) * kHpHidden;
    T* guDst = sm.gu + warp * kGuWarpElems - 32 * 8;  // chunk c of row rr at guDst + (rr * 128 + c) * 8
    const uint4 g0 = loadNc16(guSrc + lane * 8);
#pragma unroll
    for (int i = lane + 32; i < kGuRowsWarp * kHpHidden / 8; i += 32) cpAsync16(guDst + i * 8, guSrc + i * 8, true);
    cpAsyncCommit();
    const int dRow = tid >> 2, dPart = tid & 3;
    uint4 wd[kInterCluster / 32];
    {
        const T* src = downW + int64_t(kOutRowsCta * rank + dRow) * kHpIntermediate + kInterCluster * group + dPart * 8;
#pragma unroll
        for (int j = 0; j < kInterCluster / 32; ++j) wd[j] = loadNc16(src + j * 32);
    }
    float normW[4];
    loadWeight4(tensorOf<T>(p, layer, kPlPostNorm), normW);
    clusterArriveRelaxed();
    allowDependentLaunch();
    gridDependencyWait();
    traceMark(p, layer, 1, kHpMlpWaited);

    addNorm<T>(b.residualAttn, b.oPartials, nullptr, b.residualMlp, normW, p.eps, sm.x, sm.red);
    traceMark(p, layer, 1, kHpMlpNormed);
    cpAsyncWait<0>();
    __syncthreads();
    traceMark(p, layer, 1, kHpMlpLanded);
    {  // gate and up rows, a warp each, rounded (lane: chunks lane + 32 j, x in registers)
        uint4 xr[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) xr[j] = *reinterpret_cast<const uint4*>(sm.x + (lane + 32 * j) * 8);
#pragma unroll
        for (int rr = 0; rr < kGuRowsWarp; ++rr) {
            float d = rr == 0 ? dot8<T>(g0, xr[0]) : 0.0f;
#pragma unroll
            for (int j = rr == 0 ? 1 : 0; j < 4; ++j)
                d += dot8<T>(*reinterpret_cast<const uint4*>(guDst + (rr * 128 + lane + 32 * j) * 8), xr[j]);
            d = warpSum(d);
            if (lane == 0) sm.rowOut[warpRow0 + rr] = roundTo<T>(d);
        }
    }
    __syncthreads();
    traceMark(p, layer, 1, kHpMlpGateUp);
    clusterWaitAcquire();
    if (tid < kInterCta) {
        const float g = sm.rowOut[tid], u = sm.rowOut[kInterCta + tid];
        const T h = fromFloat<T>(silu(g) * u);
#pragma unroll
        for (int r = 0; r < kHpCluster; ++r) *cluster.map_shared_rank(&sm.hAll[rank * kInterCta + tid], r) = h;
    }
    clusterArriveRelease();
    clusterWaitAcquire();
    traceMark(p, layer, 1, kHpMlpExchanged);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kInterCluster / 32; ++j) s += dot8<T>(wd[j], *reinterpret_cast<const uint4*>(sm.hAll + (j * 4 + dPart) * 8));
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    if (dPart == 0) b.downPartials[group * kHpHidden + rank * kOutRowsCta + dRow] = s;
    traceMark(p, layer, 1, kHpMlpDone);
    traceExit(p, layer, 1);
#endif
}

// After the last layer: the final add + RMSNorm into the LM head's input row (one CTA).
template <class T>
__global__ void __launch_bounds__(kThreads) hpFinalNormKernel(const __grid_constant__ PersistentDecodeParams p, Buffers b)
{
    __shared__ float red[32];
    float normW[4];
    loadWeight4(static_cast<const T*>(p.finalNorm), normW);
    gridDependencyWait();
    allowDependentLaunch();
    addNorm<T>(b.residualMlp, b.downPartials, nullptr, nullptr, normW, p.eps,
               static_cast<T*>(p.hiddenOut ? p.hiddenOut : b.finalRow), red);
}

template <class T>
cudaError_t prepareKernels()
{
    static const cudaError_t once = [] {
        for (auto [kernel, smem] : {std::pair{reinterpret_cast<const void*>(hpAttentionKernel<T, false>), sizeof(SmemAttention<T>)},
                                    std::pair{reinterpret_cast<const void*>(hpAttentionKernel<T, true>), sizeof(SmemAttention<T>)},
                                    std::pair{reinterpret_cast<const void*>(hpMlpKernel<T>), sizeof(SmemMlp<T>)}}) {
            LECTOR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
            LECTOR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        }
        return cudaSuccess;
    }();
    return once;
}

template <class T>
cudaError_t launchAll(const PersistentDecodeParams& p, cudaStream_t stream)
{
    LECTOR_CUDA_TRY(prepareKernels<T>());
    const HeadParallelWorkspace w = headParallelWorkspace();
    uint8_t* ws = static_cast<uint8_t*>(p.workspace);
    Buffers b{reinterpret_cast<float*>(ws + w.residualAttn), reinterpret_cast<float*>(ws + w.residualMlp),
              reinterpret_cast<float*>(ws + w.oPartials), reinterpret_cast<float*>(ws + w.downPartials), ws + w.finalRow};
    PersistentDecodeParams params = p;
    // The attention kernel's clusters placed by the load-balancing policy (call 190: 6-12 us a step faster than
    // the default at every context of a page's decode, 1024-1344, in both dtypes; the spread policy was no
    // faster than the default). Two attention CTAs fit one multiprocessor, and where the default packs a
    // cluster onto a GPC's SMs two at a time, the next kernel's CTAs find less room beside them (call 147).
    // LECTOR_HP_CLUSTER_POLICY=0 (default placement) or 1 (spread) for comparison runs.
    static const cudaLaunchAttribute policy = [] {
        const char* env = std::getenv("LECTOR_HP_CLUSTER_POLICY");
        const int value = env && env[0] >= '0' && env[0] <= '2' && env[1] == 0 ? env[0] - '0' : 2;
        cudaLaunchAttribute a{};
        a.id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
        a.val.clusterSchedulingPolicyPreference = static_cast<cudaClusterSchedulingPolicy>(value);
        return a;
    }();
    const cudaLaunchAttribute* attentionPolicy = &policy;
    // Layer 0 under PDL too (its kernel reads the step's inputs after its wait), unless LECTOR_HP_FIRST_PDL=0:
    // then the kernel of the other layers, which reads them before, starting after the work before it.
    static const bool firstPdl = [] {
        const char* env = std::getenv("LECTOR_HP_FIRST_PDL");
        return !(env && env[0] == '0');
    }();
    for (int layer = 0; layer < p.numLayers; ++layer) {
        auto* attention = layer == 0 && firstPdl ? hpAttentionKernel<T, true> : hpAttentionKernel<T, false>;
        LECTOR_CUDA_TRY(launchKernelWithAttribute(attention, dim3(kHpCtas), dim3(kThreads), sizeof(SmemAttention<T>), stream,
                                                  dim3(kHpCluster, 1, 1), layer > 0 || firstPdl, attentionPolicy, params, b, layer));
        LECTOR_CUDA_TRY(launchKernelInClusters(hpMlpKernel<T>, dim3(kHpCtas), dim3(kThreads), sizeof(SmemMlp<T>), stream,
                                               dim3(kHpCluster, 1, 1), params, b, layer));
    }
    LECTOR_CUDA_TRY(launchKernel(hpFinalNormKernel<T>, dim3(1), dim3(kThreads), 0, stream, params, b));
    if (p.hiddenOut) return cudaSuccess;  // no logits: the greedy screen reads the row
    return launchSkinnyGemm(skinnyRowParams(p.dtype, p.logits, b.finalRow, p.lmHead, p.vocab, kHpHidden, /*outFloat=*/true),
                            stream);
}

}  // namespace

bool headParallelDecodeSupported(int device)
{
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess || major < 9) return false;
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess || current != device || prepareKernels<__half>() != cudaSuccess) return false;
    // Clusters of 16 of the attention kernel's size must fit (not on every part: MIG slices, smaller GPCs).
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(kHpCtas);
    config.blockDim = dim3(kThreads);
    config.dynamicSmemBytes = sizeof(SmemAttention<__half>);
    cudaLaunchAttribute attribute = clusterDimAttribute(dim3(kHpCluster, 1, 1));
    config.attrs = &attribute;
    config.numAttrs = 1;
    int clusters = 0;
    const bool ok = cudaOccupancyMaxActiveClusters(&clusters, hpAttentionKernel<__half, false>, &config) == cudaSuccess && clusters > 0;
    cudaGetLastError();
    return ok;
}

cudaError_t launchHeadParallelDecode(const PersistentDecodeParams& p, cudaStream_t stream)
{
    if (*headParallelDecodeShapeMismatch(p) || !p.layers || !p.embed || !p.finalNorm || !p.lmHead || !p.cosSin ||
        !p.tokenId || !p.positions || !p.slot || !p.contextLen || !p.blockTable || (!p.logits && !p.hiddenOut) || !p.workspace ||
        p.numLayers <= 0 || p.maxPosition <= 0)
        return cudaErrorInvalidValue;
    return p.dtype == DType::F16 ? launchAll<__half>(p, stream) : launchAll<__nv_bfloat16>(p, stream);
}

#endif  // LECTOR_GPU_HAVE_LAUNCHERS

}  // namespace lector::gpu
