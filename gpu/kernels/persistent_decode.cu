// Persistent batch-1 decode step (persistent_decode.cuh): one CTA per SM, 8 consumer warps and one
// producer warp.
//
// The producer walks the CTA's chunk list — for each layer its QKV rows, the K/V blocks of its
// attention unit, its O rows, its gate rows, its up rows and its down rows, then its LM-head rows — and
// copies each chunk into the next free slot of a ring of kSlots shared-memory slots (cp.async.bulk
// completing on the slot's "full" mbarrier; the consumers release a slot through its "empty" mbarrier).
// Weights and past K/V never depend on the step, so the stream runs ahead of the consumers by the
// ring's depth wherever they wait for other CTAs. (Prefetching further ahead into L2 with
// cp.async.bulk.prefetch.L2 measured slower: docs/perf.md.)
//
// The consumers walk the same list. A weight chunk is whole rows; warp w takes the rows of the stage
// whose index is w mod 8 (so the warp that keeps a gate value also meets the matching up row), two rows
// at a time, each a warp-wide dot product of 16-byte vectors against the stage's input vector (float32
// in shared memory). Stages meet the other CTAs through counters in global memory, each on its own
// 128-byte line (release add by thread 0 after a barrier, acquire poll by thread 0 before one):
//   1. QKV: residual += down output of the previous layer; x = RMSNorm(residual); qkv rows -> workspace.
//   2. attention unit (KV head h, partition q) of the first numKvHeads * partitions CTAs, once every
//      CTA's qkv rows are in: RoPE + QK-norm of the group's queries (and, in the last partition, of the
//      new key, which goes to the cache with the new value); each half warp keeps an online softmax
//      over its tokens of the partition (the newest read from the new key and value, not from its
//      stale slot); the 16 states meet in shared memory, the CTA's partial result goes to the workspace,
//      and the last partition of the head to take its ticket merges them into the attention output.
//   3. O rows (once every head is merged) -> workspace.
//   4. gate/up rows (once every O row is in): residual += O output; x = RMSNorm(residual).
//   5. down rows over the activation (once every gate/up row is in) -> workspace.
// Then the final norm and the LM head's rows, as float32 logits.
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/persistent_decode.cuh"

#include <cstdio>
#include <initializer_list>
#include <type_traits>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
// Below sm_90 the kernel is a trap (it needs bulk copies, mbarriers and acquire/release counters), so
// its helpers go unreferenced there: not worth a warning per helper per architecture.
#pragma nv_diag_suppress 177
#endif

namespace lector::gpu {
namespace {

constexpr int kConsumerWarps = 8;
constexpr int kConsumerThreads = kConsumerWarps * 32;
constexpr int kThreads = kConsumerThreads + 32;  // the producer is the last warp
constexpr int kProducerWarp = kConsumerWarps;
#ifndef LECTOR_PERSISTENT_SLOTS
#define LECTOR_PERSISTENT_SLOTS 6
#endif
constexpr int kSlots = LECTOR_PERSISTENT_SLOTS;
// 32 KB: whole rows of the decoder's 1024- (16 rows: its share of QKV in two chunks), 2048- (8: its
// share of O in one) and 3584-wide (4) 16-bit matrices.
constexpr int kSlotBytes = kPersistentDecodeMaxWidth * 2;
constexpr int kHeadDim = 128;
constexpr int kHalfDim = kHeadDim / 2;
constexpr int kMaxGroup = 2;                       // query heads per KV head (see attend())
constexpr int kRowBytes16 = kHeadDim * 2;          // one token of one KV head, 16-bit
constexpr int kKvChunkBlocks = kSlotBytes / (2 * kKvBlockSize * kRowBytes16);  // 4 blocks of K, then of V
constexpr int kKvChunkTokens = kKvChunkBlocks * kKvBlockSize;
constexpr int kValueOffset = kKvChunkTokens * kRowBytes16;  // V rows start here in a KV slot
constexpr uint64_t kWaitTimeoutNs = 5000000000ull;
// Counters of a layer (kPersistentCountersPerLayer of them, then a ticket per KV head).
enum : int { kQkvDone, kAttnDone, kODone, kGateUpDone, kDownDone };

static_assert(kKvChunkBlocks >= 1 && 2 * kValueOffset <= kSlotBytes, "a KV chunk must fit one slot");
static_assert(kMaxGroup + 2 <= kConsumerWarps, "one warp per query head, the new key and the new value");

constexpr int align16(int b) { return (b + 15) / 16 * 16; }

// Dynamic shared memory (byte offsets). The input vector's area (float32, the widest input) doubles as
// the attention's scratch: the warps' softmax states and the partitions' max / sum when merging.
struct SmemLayout {
    int ring, full, empty, x, residual, kvNew, gate, q, reduce, flag, total;
};

LECTOR_HD constexpr int maxInputWidth(const PersistentDecodeParams& p)
{
    const int a = p.hidden, b = p.numQHeads * p.headDim, c = p.intermediate;
    return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

LECTOR_HD constexpr int attentionScratchFloats(const PersistentDecodeParams& p)
{
    const int group = p.numKvHeads > 0 ? p.numQHeads / p.numKvHeads : 0;
    const int states = kConsumerWarps / 2 * group * (kHeadDim + 2);
    const int stats = 2 * group * persistentDecodePartitions(p.numCtas, p.numKvHeads);
    return states > stats ? states : stats;
}

LECTOR_HD constexpr SmemLayout smemLayout(const PersistentDecodeParams& p)
{
    SmemLayout s{};
    s.ring = 0;
    s.full = kSlots * kSlotBytes;
    s.empty = s.full + kSlots * 8;
    s.x = align16(s.empty + kSlots * 8);
    const int xFloats = maxInputWidth(p) > attentionScratchFloats(p) ? maxInputWidth(p) : attentionScratchFloats(p);
    s.residual = align16(s.x + xFloats * 4);
    s.kvNew = align16(s.residual + p.hidden * 2);
    s.gate = align16(s.kvNew + 2 * kRowBytes16);
    const int gateRows = p.numCtas > 0 ? (p.intermediate + p.numCtas - 1) / p.numCtas : 0;
    s.q = align16(s.gate + gateRows * 4);
    s.reduce = align16(s.q + kMaxGroup * kHeadDim * 4);
    s.flag = align16(s.reduce + 32 * 4);
    s.total = align16(s.flag + 16);
    return s;
}

// --- PTX helpers (sm_90) ---

// bytes (a multiple of 16) from global src to shared dst, completing on bar's transaction count.
__device__ __forceinline__ void bulkCopy(void* dst, const void* src, uint32_t bytes, uint64_t* bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smemAddr(dst)),
                 "l"(src), "r"(bytes), "r"(smemAddr(bar))
                 : "memory");
}

// Named barrier 1 of the consumer warps; not .aligned: thread 0 may arrive after the rest of its warp
// (it alone waits for another CTA's counter).
__device__ __forceinline__ void consumerSync() { asm volatile("barrier.sync 1, %0;" ::"n"(kConsumerThreads) : "memory"); }

__device__ __forceinline__ uint32_t fetchAddAcqRel(uint32_t* p, uint32_t v)
{
    uint32_t old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}

// Data other CTAs of this launch wrote: through L2, never a stale L1 line.
__device__ __forceinline__ uint4 loadCg16(const void* p) { return __ldcg(static_cast<const uint4*>(p)); }
template <class T>
__device__ __forceinline__ T loadCgElem(const T* p)
{
    const unsigned short raw = __ldcg(reinterpret_cast<const unsigned short*>(p));
    return *reinterpret_cast<const T*>(&raw);
}

// The two 16-bit elements of a 32-bit word as float32 (bfloat16: a shift; float16: one conversion).
template <class T>
__device__ __forceinline__ float2 widen2(uint32_t w)
{
    if constexpr (std::is_same_v<T, __half>) {
        return __half22float2(*reinterpret_cast<const __half2*>(&w));
    } else {
        return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
    }
}

// acc += the 8 elements of a 16-byte vector of T times x[0..8).
template <class T>
__device__ __forceinline__ float dot8(const uint4& w, const float* x, float acc)
{
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 f = widen2<T>(words[i]);
        acc = fmaf(f.x, x[2 * i], acc);
        acc = fmaf(f.y, x[2 * i + 1], acc);
    }
    return acc;
}

template <class T>
__device__ __forceinline__ void unpack8(const uint4& w, float* out)
{
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 f = widen2<T>(words[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

// One thread: spins until *counter >= target (acquire). A wait of seconds means a CTA never came (not
// resident, or a fault elsewhere): trap rather than hang the device.
__device__ void waitCounter(const uint32_t* counter, uint32_t target)
{
    if (loadAcquire(counter) >= target) return;
    const uint64_t start = globalTimer();
    for (uint32_t n = 1; loadAcquire(counter) < target; ++n) {
        if ((n & 1023u) == 0 && globalTimer() - start > kWaitTimeoutNs) {
            printf("lector persistent decode: CTA %d waited %llu ns for a counter at %u of %u; stopping\n",
                   int(blockIdx.x), static_cast<unsigned long long>(globalTimer() - start), loadAcquire(counter),
                   target);
            __trap();
        }
    }
}

// Consumers: the stage's inputs are in (every consumer thread returns after the wait).
__device__ __forceinline__ void awaitStage(const PersistentDecodeParams& p, const uint32_t* counter, uint32_t target)
{
    if (threadIdx.x == 0 && !(p.flags & kPersistentNoWaits)) waitCounter(counter, target);
    consumerSync();
}

// Consumers: this CTA's part of the stage is written; count it (release: the barrier orders every
// consumer's stores before thread 0's release, as in CUTLASS's grid barrier).
__device__ __forceinline__ void finishStage(uint32_t* counter)
{
    consumerSync();
    if (threadIdx.x == 0) addRelease(counter, 1u);
}

// Benchmarks: thread 0's clock at a trace point (persistent_decode.cuh).
__device__ __forceinline__ void stamp(const PersistentDecodeParams& p, int index)
{
    if (p.trace && threadIdx.x == 0)
        p.trace[int64_t(blockIdx.x) * persistentDecodeTraceStamps(p.numLayers) + index] = clock64();
}
__device__ __forceinline__ void stamp(const PersistentDecodeParams& p, int layer, int event)
{
    stamp(p, 1 + layer * kPersistentTraceEvents + event);
}

// common.cuh's blockSum over the consumer warps only (their named barrier, not __syncthreads).
__device__ float consumerSum(float x, float* scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    x = warpSum(x);
    consumerSync();  // scratch may still be read by the previous call
    if (lane == 0) scratch[warp] = x;
    consumerSync();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kConsumerWarps; ++w) total += scratch[w];
    return total;
}

// --- the plan: both roles derive the same chunk list from it ---

struct Range {
    int begin = 0, end = 0;
    __device__ int size() const { return end - begin; }
};

// Part `part` of `parts` nearly equal shares of [0, n).
__device__ __forceinline__ Range share(int n, int part, int parts)
{
    return {static_cast<int>(int64_t(n) * part / parts), static_cast<int>(int64_t(n) * (part + 1) / parts)};
}

template <class T>
constexpr int rowsPerChunk(int k)
{
    return kSlotBytes / (k * int(sizeof(T)));
}

template <class T>
struct Plan {
    const PersistentDecodeParams& p;
    char* ws;            // workspace base
    PersistentDecodeWorkspace wsl;
    int cta, ctas, group, partitions;
    bool attends;        // this CTA owns an attention unit
    int kvHead, partition;
    int contextLen, contextBlocks;

    __device__ explicit Plan(const PersistentDecodeParams& params)
        : p(params), ws(static_cast<char*>(params.workspace)), wsl(persistentDecodeWorkspace(params))
    {
        cta = blockIdx.x;
        ctas = gridDim.x;
        group = p.numQHeads / p.numKvHeads;
        partitions = persistentDecodePartitions(ctas, p.numKvHeads);
        attends = cta < p.numKvHeads * partitions;
        kvHead = attends ? cta / partitions : 0;
        partition = attends ? cta % partitions : 0;
        contextLen = max(*p.contextLen, 0);
        contextBlocks = static_cast<int>(ceilDiv(contextLen, kKvBlockSize));
    }

    __device__ const T* tensor(int layer, int which) const
    {
        const auto* table = reinterpret_cast<const unsigned long long*>(p.layers);
        return reinterpret_cast<const T*>(__ldg(table + layer * kPlCount + which));
    }
    __device__ T* cache(int layer, int which) const { return const_cast<T*>(tensor(layer, which)); }
    __device__ Range qkvRows() const { return share((p.numQHeads + 2 * p.numKvHeads) * p.headDim, cta, ctas); }
    __device__ Range oRows() const { return share(p.hidden, cta, ctas); }
    __device__ Range gateRows() const { return share(p.intermediate, cta, ctas); }
    __device__ Range downRows() const { return share(p.hidden, cta, ctas); }
    __device__ Range lmRows() const { return share(p.vocab, cta, ctas); }
    __device__ Range kvBlocks() const { return attends ? share(contextBlocks, partition, partitions) : Range{}; }
    __device__ bool validBlock(int id) const { return id >= 0 && id < p.numCacheBlocks; }

    __device__ T* qkv() const { return reinterpret_cast<T*>(ws + wsl.qkv); }
    __device__ T* attn() const { return reinterpret_cast<T*>(ws + wsl.attn); }
    __device__ T* deltaO() const { return reinterpret_cast<T*>(ws + wsl.deltaO); }
    __device__ T* act() const { return reinterpret_cast<T*>(ws + wsl.act); }
    __device__ T* deltaD() const { return reinterpret_cast<T*>(ws + wsl.deltaD); }
    __device__ float* partials() const { return reinterpret_cast<float*>(ws + wsl.partials); }
    // Counter `which` of layer l (kQkvDone ... kDownDone, then kPersistentCountersPerLayer + KV head).
    __device__ uint32_t* counter(int layer, int which) const
    {
        return p.counters +
               (int64_t(layer) * (kPersistentCountersPerLayer + p.numKvHeads) + which) * kPersistentCounterStride;
    }
};

struct Smem {
    unsigned char* ring;
    uint64_t* full;
    uint64_t* empty;
    float* x;         // the stage's input vector, float32 (attention: scratch)
    uint4* residual;  // the residual stream, hidden elements of T
    void* kvNew;      // the new key, then the new value (T, headDim each)
    float* gate;      // this CTA's rounded gate values
    float* q;         // [kMaxGroup][kHeadDim]: rotated, normed queries (rounded to T)
    float* reduce;    // [32]
    int* flag;

    __device__ unsigned char* slot(uint32_t chunk) const { return ring + size_t(chunk % kSlots) * kSlotBytes; }
};

// --- producer ---

template <class T>
__device__ void produce(const Plan<T>& plan, const Smem& s)
{
    const PersistentDecodeParams& p = plan.p;
    const int lane = threadIdx.x & 31;
    const bool copies = !(p.flags & kPersistentNoCopies), suspend = p.flags & kPersistentTryWait;
    uint32_t chunk = 0;
    // Lane 0 issues a weight chunk as one bulk copy of whole rows.
    auto weights = [&](const T* w, int k, Range rows) {
        const int per = rowsPerChunk<T>(k);
        for (int r = rows.begin; r < rows.end; r += per, ++chunk) {
            if (lane != 0) continue;
            const uint32_t slot = chunk % kSlots, bytes = uint32_t(min(per, rows.end - r)) * k * sizeof(T);
            mbarWait(&s.empty[slot], ((chunk / kSlots) & 1) ^ 1, suspend);
            mbarArriveExpectTx(&s.full[slot], copies ? bytes : 0u);
            if (copies) bulkCopy(s.slot(chunk), w + int64_t(r) * k, bytes, &s.full[slot]);
        }
    };
    // K and V of up to kKvChunkBlocks blocks of this unit's KV head: one 256-byte copy per token and
    // tensor, spread over the warp's lanes. Blocks outside the pool are not read (the consumers mask them).
    auto keysValues = [&](const T* keyCache, const T* valueCache, Range blocks) {
        for (int b = blocks.begin; b < blocks.end; b += kKvChunkBlocks, ++chunk) {
            const int n = min(kKvChunkBlocks, blocks.end - b);
            const uint32_t slot = chunk % kSlots;
            uint32_t bytes = 0;
            for (int i = 0; i < n; ++i)
                if (copies && plan.validBlock(p.blockTable[b + i])) bytes += 2 * kKvBlockSize * kRowBytes16;
            if (lane == 0) {
                mbarWait(&s.empty[slot], ((chunk / kSlots) & 1) ^ 1, suspend);
                mbarArriveExpectTx(&s.full[slot], bytes);
            }
            __syncwarp();
            unsigned char* dst = s.slot(chunk);
            for (int i = lane; i < n * kKvBlockSize * 2; i += 32) {
                const int blk = i / (2 * kKvBlockSize), token = (i >> 1) % kKvBlockSize, isValue = i & 1;
                const int id = p.blockTable[b + blk];
                if (!copies || !plan.validBlock(id)) continue;
                const int64_t src = ((int64_t(id) * kKvBlockSize + token) * p.numKvHeads + plan.kvHead) * kHeadDim;
                bulkCopy(dst + (isValue ? kValueOffset : 0) + (blk * kKvBlockSize + token) * kRowBytes16,
                         (isValue ? valueCache : keyCache) + src, kRowBytes16, &s.full[slot]);
            }
        }
    };
    const int numLayers = (p.flags & kPersistentLmHeadOnly) ? 0 : p.numLayers;
    for (int l = 0; l < numLayers; ++l) {
        weights(plan.tensor(l, kPlQkv), p.hidden, plan.qkvRows());
        if (plan.attends) keysValues(plan.tensor(l, kPlKeyCache), plan.tensor(l, kPlValueCache), plan.kvBlocks());
        weights(plan.tensor(l, kPlO), p.numQHeads * p.headDim, plan.oRows());
        const T* gateUp = plan.tensor(l, kPlGateUp);
        weights(gateUp, p.hidden, plan.gateRows());
        weights(gateUp + int64_t(p.intermediate) * p.hidden, p.hidden, plan.gateRows());
        weights(plan.tensor(l, kPlDown), p.intermediate, plan.downRows());
    }
    weights(static_cast<const T*>(p.lmHead), p.hidden, plan.lmRows());
}

// --- consumers ---

// Where a projection's rows go. (Making the GEMV one shared, non-inlined function for every stage, to
// keep one copy of its code in the instruction caches, measured slower: docs/perf.md.)
enum EmitMode : int {
    kEmitT,      // T(dot) to out[begin + r]
    kEmitGate,   // the rounded gate value to s.gate[r]
    kEmitAct,    // T(silu(s.gate[r]) * round(dot)) to out[begin + r]
    kEmitLogit,  // float(T(dot)) to the float32 out[begin + r]
};
struct Emit {
    EmitMode mode;
    void* out;
    int begin;
};

template <class T>
__device__ __forceinline__ void emitRow(const Emit& e, const Smem& s, int r, float dot)
{
    switch (e.mode) {
    case kEmitT: static_cast<T*>(e.out)[e.begin + r] = fromFloat<T>(dot); break;
    case kEmitGate: s.gate[r] = toFloat(fromFloat<T>(dot)); break;
    case kEmitAct: static_cast<T*>(e.out)[e.begin + r] = fromFloat<T>(silu(s.gate[r]) * toFloat(fromFloat<T>(dot))); break;
    case kEmitLogit: static_cast<float*>(e.out)[e.begin + r] = toFloat(fromFloat<T>(dot)); break;
    }
}

// The weight chunks of one stage: the float32 dot product of each row with s.x (float32 in shared
// memory, two 16-byte loads per 8 weights) goes out through emit, from lane 0 of the warp that owns the
// row. Holding the lane's share of x in registers instead measured 9 % slower over the whole step on
// an H200 (the kernel sits at its 168-register limit: docs/perf.md).
template <class T>
__device__ void consumeRows(const Smem& s, uint32_t& chunk, int k, Range rows, int flags, Emit emit)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int per = rowsPerChunk<T>(k), numVec = k / 8, count = rows.size();
    const float4* x = reinterpret_cast<const float4*>(s.x);
    for (int r = 0; r < count; r += per, ++chunk) {
        const int n = min(per, count - r);
        const uint32_t slot = chunk % kSlots;
        mbarWait(&s.full[slot], (chunk / kSlots) & 1, flags & kPersistentTryWait);
        const uint4* w = reinterpret_cast<const uint4*>(s.slot(chunk));
        if (flags & kPersistentNoMath) {
            __syncwarp();
            if (lane == 0) mbarArrive(&s.empty[slot]);
            continue;
        }
        // Two rows at a time (i and i + 8), so their reductions overlap.
        for (int i = (warp - r % kConsumerWarps + kConsumerWarps) % kConsumerWarps; i < n; i += 2 * kConsumerWarps) {
            const bool two = i + kConsumerWarps < n;
            const uint4* rowA = w + size_t(i) * numVec;
            const uint4* rowB = rowA + size_t(kConsumerWarps) * numVec;
            float a = 0.0f, b = 0.0f;
#pragma unroll 2
            for (int v = lane; v < numVec; v += 32) {
                float x8[8];
                *reinterpret_cast<float4*>(x8) = x[2 * v];
                *reinterpret_cast<float4*>(x8 + 4) = x[2 * v + 1];
                a = dot8<T>(rowA[v], x8, a);
                if (two) b = dot8<T>(rowB[v], x8, b);
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                a += __shfl_xor_sync(0xffffffffu, a, o);
                b += __shfl_xor_sync(0xffffffffu, b, o);
            }
            if (lane == 0) {
                emitRow<T>(emit, s, r + i, a);
                if (two) emitRow<T>(emit, s, r + i + kConsumerWarps, b);
            }
        }
        __syncwarp();
        if (lane == 0) mbarArrive(&s.empty[slot]);
    }
}

// residual += delta (rounded to T; none for the first layer); x = round(weight * residual / rms(residual)).
// The numerics of rms_norm.cuh's fused add + RMSNorm.
template <class T>
__device__ void addNormInput(const PersistentDecodeParams& p, const Smem& s, const T* delta, const T* weight)
{
    constexpr int V = kVecElems<T>;
    const int numVec = p.hidden / V;
    float sumSq = 0.0f;
    for (int v = threadIdx.x; v < numVec; v += kConsumerThreads) {
        float sum[V];
        unpack8<T>(s.residual[v], sum);
        if (delta) {
            float d[V];
            unpack8<T>(loadCg16(delta + int64_t(v) * V), d);
#pragma unroll
            for (int e = 0; e < V; ++e) sum[e] = toFloat(fromFloat<T>(sum[e] + d[e]));
            s.residual[v] = pack16<T>(sum);
        }
#pragma unroll
        for (int e = 0; e < V; ++e) sumSq = fmaf(sum[e], sum[e], sumSq);
    }
    const float inv = rsqrtf(consumerSum(sumSq, s.reduce) / p.hidden + p.eps);
    for (int v = threadIdx.x; v < numVec; v += kConsumerThreads) {  // the vectors this thread updated above
        float r[V], w[V];
        unpack8<T>(s.residual[v], r);
        unpack8<T>(loadNc16(weight + int64_t(v) * V), w);
#pragma unroll
        for (int e = 0; e < V; ++e) s.x[v * V + e] = toFloat(fromFloat<T>(r[e] * inv * w[e]));
    }
    consumerSync();
}

// x = k elements another stage wrote.
template <class T>
__device__ void loadInput(const Smem& s, const T* src, int k)
{
    for (int v = threadIdx.x; v < k / 8; v += kConsumerThreads) unpack8<T>(loadCg16(src + int64_t(v) * 8), s.x + v * 8);
    consumerSync();
}

// XD-RoPE + QK-norm of one head by one warp (qk_norm_rope.cuh's numerics): the lane's rotation pairs
// (j, j + 64) for j = lane, lane + 32. Constants are loaded before the wait for the head itself.
struct RopeLane {
    float c[2], sn[2], w1[2], w2[2];
};

template <class T>
__device__ RopeLane ropeConstants(const PersistentDecodeParams& p, const T* normWeight)
{
    const int lane = threadIdx.x & 31;
    RopeLane r;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int j = lane + 32 * i;
        int axis = 0;
        for (int bound = p.sections[0]; axis + 1 < p.numPosAxes && j >= bound; bound += p.sections[axis + 1]) ++axis;
        const int64_t pos = min(max(p.positions[axis * p.positionsAxisStride], int64_t(0)), int64_t(p.maxPosition - 1));
        r.c[i] = __ldg(p.cosSin + pos * kHeadDim + j);
        r.sn[i] = __ldg(p.cosSin + pos * kHeadDim + kHalfDim + j);
        r.w1[i] = toFloat(normWeight[j]);
        r.w2[i] = toFloat(normWeight[kHalfDim + j]);
    }
    return r;
}

// The head x (raw, from another CTA) rotated and normed, rounded to T: to outFloat (as float) and/or
// outT, and to cacheRow when given.
template <class T>
__device__ void ropeNormHead(const PersistentDecodeParams& p, const RopeLane& r, const T* x, float* outFloat, T* outT,
                             T* cacheRow)
{
    const int lane = threadIdx.x & 31;
    float y1[2], y2[2], sumSq = 0.0f;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int j = lane + 32 * i;
        const float x1 = toFloat(loadCgElem(x + j)), x2 = toFloat(loadCgElem(x + kHalfDim + j));
        y1[i] = x1 * r.c[i] - x2 * r.sn[i];
        y2[i] = x2 * r.c[i] + x1 * r.sn[i];
        sumSq += y1[i] * y1[i] + y2[i] * y2[i];
    }
    const float inv = rsqrtf(warpSum(sumSq) / kHeadDim + p.eps);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int j = lane + 32 * i;
        const T a = fromFloat<T>(y1[i] * inv * r.w1[i]);
        const T b = fromFloat<T>(y2[i] * inv * r.w2[i]);
        if (outFloat) {
            outFloat[j] = toFloat(a);
            outFloat[kHalfDim + j] = toFloat(b);
        }
        if (outT) {
            outT[j] = a;
            outT[kHalfDim + j] = b;
        }
        if (cacheRow) {
            cacheRow[j] = a;
            cacheRow[kHalfDim + j] = b;
        }
    }
}

// A softmax state over some keys for G query heads: the lane's 8 dims (of its half warp's 16 lanes).
template <int G>
struct SoftmaxState {
    float m[G], l[G], acc[G][8];

    __device__ void clear()
    {
#pragma unroll
        for (int g = 0; g < G; ++g) {
            m[g] = -INFINITY;
            l[g] = 0.0f;
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
        }
    }
    // To dst [G][kHeadDim + 2] (dims, max, sum): lanes 0-15 of a warp, each its 8 dims.
    __device__ void store(float* dst, int l16) const
    {
#pragma unroll
        for (int g = 0; g < G; ++g) {
#pragma unroll
            for (int e = 0; e < 8; ++e) dst[g * (kHeadDim + 2) + l16 * 8 + e] = acc[g][e];
            if (l16 == 0) {
                dst[g * (kHeadDim + 2) + kHeadDim] = m[g];
                dst[g * (kHeadDim + 2) + kHeadDim + 1] = l[g];
            }
        }
    }
    // This state and the one store() left at src, as one.
    __device__ void mergeFrom(const float* src, int l16)
    {
        float om[G], ol[G], oacc[G][8];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            om[g] = src[g * (kHeadDim + 2) + kHeadDim];
            ol[g] = src[g * (kHeadDim + 2) + kHeadDim + 1];
#pragma unroll
            for (int e = 0; e < 8; ++e) oacc[g][e] = src[g * (kHeadDim + 2) + l16 * 8 + e];
        }
        merge(om, ol, oacc);
    }
    // This state and another one over other keys, as one.
    __device__ void merge(const float (&om)[G], const float (&ol)[G], const float (&oacc)[G][8])
    {
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const float mx = fmaxf(m[g], om[g]);
            const float a = mx == -INFINITY ? 0.0f : __expf(m[g] - mx);
            const float b = mx == -INFINITY ? 0.0f : __expf(om[g] - mx);
            m[g] = mx;
            l[g] = l[g] * a + ol[g] * b;
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[g][e] = acc[g][e] * a + oacc[g][e] * b;
        }
    }
};

// Stage 2 for this CTA's unit (KV head h, partition q) of layer l: waits for every CTA's QKV rows itself
// (the rotation constants are loaded before).
template <class T, int G>
__device__ void attendGroup(const Plan<T>& plan, const Smem& s, uint32_t& chunk, int l)
{
    const PersistentDecodeParams& p = plan.p;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int h = plan.kvHead, P = plan.partitions;
    const bool lastPartition = plan.partition == P - 1;  // holds the newest token (share() ends there)
    const int newest = plan.contextLen - 1;
    const T* qkv = plan.qkv();
    T* kNew = static_cast<T*>(s.kvNew);
    T* vNew = kNew + kHeadDim;

    // Before the wait: what does not depend on this step's projections.
    T* keyRow = nullptr;
    T* valueRow = nullptr;
    if (lastPartition) {
        const int64_t slot = *p.slot;
        if (slot >= 0 && slot < int64_t(p.numCacheBlocks) * kKvBlockSize) {
            const int64_t offset = (slot * p.numKvHeads + h) * kHeadDim;
            keyRow = plan.cache(l, kPlKeyCache) + offset;
            valueRow = plan.cache(l, kPlValueCache) + offset;
        }
    }
    RopeLane rope{};
    if (warp < G) rope = ropeConstants(p, plan.tensor(l, kPlQueryNorm));
    else if (warp == G && lastPartition) rope = ropeConstants(p, plan.tensor(l, kPlKeyNorm));
    awaitStage(p, plan.counter(l, kQkvDone), static_cast<uint32_t>(plan.ctas));
    stamp(p, l, kTraceAttnReady);

    // Queries of the group; in the last partition also the new key and value, into the cache.
    if (warp < G) {
        ropeNormHead<T>(p, rope, qkv + (h * G + warp) * kHeadDim, s.q + warp * kHeadDim, nullptr, nullptr);
    } else if (warp == G && lastPartition) {
        ropeNormHead<T>(p, rope, qkv + (p.numQHeads + h) * kHeadDim, nullptr, kNew, keyRow);
    } else if (warp == G + 1 && lastPartition) {
        const T* v = qkv + (p.numQHeads + p.numKvHeads + h) * kHeadDim;
        for (int d = lane; d < kHeadDim; d += 32) {
            const T value = loadCgElem(v + d);
            vNew[d] = value;
            if (valueRow) valueRow[d] = value;
        }
    }
    consumerSync();

    // Each half warp runs an online softmax over tokens hw, hw + 16, ... of every chunk.
    const int l16 = lane & 15, hw = warp * 2 + (lane >> 4);
    float q[G][8];
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int e = 0; e < 8; ++e) q[g][e] = s.q[g * kHeadDim + l16 * 8 + e];
    SoftmaxState<G> st;
    st.clear();
    const Range blocks = plan.kvBlocks();
    for (int b = blocks.begin; b < blocks.end; b += kKvChunkBlocks, ++chunk) {
        const int nb = min(kKvChunkBlocks, blocks.end - b);
        const int t0 = b * kKvBlockSize, nt = nb * kKvBlockSize;  // nt: a multiple of 16, so every half warp
        const uint32_t slot = chunk % kSlots;                      // takes the same number of tokens
        mbarWait(&s.full[slot], (chunk / kSlots) & 1, p.flags & kPersistentTryWait);
        const T* keys = reinterpret_cast<const T*>(s.slot(chunk));
        const T* values = reinterpret_cast<const T*>(s.slot(chunk) + kValueOffset);
        for (int t = hw; t < nt; t += 16) {
            const int token = t0 + t;
            // The newest token's slot was copied before this step wrote it: read the new key and value.
            const T* kRow = token == newest ? kNew : keys + t * kHeadDim;
            const T* vRow = token == newest ? vNew : values + t * kHeadDim;
            float k8[8];
            unpack8<T>(reinterpret_cast<const uint4*>(kRow)[l16], k8);
            float dot[G];
#pragma unroll
            for (int g = 0; g < G; ++g) {
                dot[g] = 0.0f;
#pragma unroll
                for (int e = 0; e < 8; ++e) dot[g] = fmaf(q[g][e], k8[e], dot[g]);
            }
#pragma unroll
            for (int g = 0; g < G; ++g)
#pragma unroll
                for (int o = 8; o > 0; o >>= 1) dot[g] += __shfl_xor_sync(0xffffffffu, dot[g], o);
            const bool valid = token < plan.contextLen && plan.validBlock(p.blockTable[token / kKvBlockSize]);
            if (!valid) continue;  // masked rows may hold anything
            float v8[8];
            unpack8<T>(reinterpret_cast<const uint4*>(vRow)[l16], v8);
#pragma unroll
            for (int g = 0; g < G; ++g) {
                const float score = dot[g] * p.scale, mx = fmaxf(st.m[g], score);
                const float corr = __expf(st.m[g] - mx), w = __expf(score - mx);  // st.m = -inf: corr 0
                st.m[g] = mx;
                st.l[g] = st.l[g] * corr + w;
#pragma unroll
                for (int e = 0; e < 8; ++e) st.acc[g][e] = fmaf(w, v8[e], st.acc[g][e] * corr);
            }
        }
        __syncwarp();
        if (lane == 0) mbarArrive(&s.empty[slot]);
    }
    // The two halves of each warp (same dims, other tokens), then the warps in rounds through scratch.
    {
        float om[G], ol[G], oacc[G][8];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            om[g] = __shfl_xor_sync(0xffffffffu, st.m[g], 16);
            ol[g] = __shfl_xor_sync(0xffffffffu, st.l[g], 16);
#pragma unroll
            for (int e = 0; e < 8; ++e) oacc[g][e] = __shfl_xor_sync(0xffffffffu, st.acc[g][e], 16);
        }
        st.merge(om, ol, oacc);
    }
    constexpr int stride = kHeadDim + 2;  // per query head: 128 dims, max, sum
    float* scratch = s.x;
    for (int half = kConsumerWarps / 2; half >= 1; half /= 2) {
        if (warp >= half && warp < 2 * half && lane < 16) st.store(scratch + (warp - half) * G * stride, l16);
        consumerSync();
        if (warp < half) st.mergeFrom(scratch + warp * G * stride, l16);
        consumerSync();
    }

    // Warp 0 holds this partition's result: unnormalised output, max and sum per query head.
    float* partials = plan.partials() + int64_t(h) * P * G * stride;
    if (warp == 0 && lane < 16) st.store(partials + int64_t(plan.partition) * G * stride, l16);
    consumerSync();
    if (tid == 0) *s.flag = static_cast<int>(fetchAddAcqRel(plan.counter(l, kPersistentCountersPerLayer + h), 1u));
    consumerSync();
    stamp(p, l, kTraceAttnPartial);
    if (*s.flag != P - 1) return;

    // The last partition of this head to finish merges all of them: weights from every partition's max
    // (loaded once into scratch), then each thread's (head, dim) items over the partitions.
    float* stats = scratch;  // [P][G] max, then [P][G] sum
    for (int i = tid; i < P * G; i += kConsumerThreads) {
        const float* part = partials + int64_t(i / G) * G * stride + (i % G) * stride;
        stats[i] = __ldcg(part + kHeadDim);
        stats[P * G + i] = __ldcg(part + kHeadDim + 1);
    }
    consumerSync();
    T* out = plan.attn();
    for (int item = tid; item < G * kHeadDim; item += kConsumerThreads) {
        const int g = item / kHeadDim, d = item % kHeadDim;
        float maxAll = -INFINITY;
        for (int q2 = 0; q2 < P; ++q2) maxAll = fmaxf(maxAll, stats[q2 * G + g]);
        float num = 0.0f, den = 0.0f;
        if (maxAll != -INFINITY) {
#pragma unroll 8
            for (int q2 = 0; q2 < P; ++q2) {
                const float w = __expf(stats[q2 * G + g] - maxAll);
                num = fmaf(w, __ldcg(partials + (int64_t(q2) * G + g) * stride + d), num);
                den = fmaf(w, stats[P * G + q2 * G + g], den);
            }
        }
        out[(h * G + g) * kHeadDim + d] = fromFloat<T>(den > 0.0f ? num / den : 0.0f);
    }
    stamp(p, l, kTraceAttnMerged);
    finishStage(plan.counter(l, kAttnDone));
}

template <class T>
__device__ void attend(const Plan<T>& plan, const Smem& s, uint32_t& chunk, int l)
{
    // Groups of 1 and 2 only (HunyuanOCR's is 2): a larger group's softmax state does not fit the
    // kernel's 168 registers (inlined, groups of 3 to 6 made the whole kernel spill).
    if (plan.group == 1) attendGroup<T, 1>(plan, s, chunk, l);
    else attendGroup<T, 2>(plan, s, chunk, l);
}

template <class T>
__device__ void consume(const Plan<T>& plan, const Smem& s)
{
    const PersistentDecodeParams& p = plan.p;
    constexpr int V = kVecElems<T>;
    uint32_t chunk = 0;
    const uint32_t all = static_cast<uint32_t>(plan.ctas);
    stamp(p, 0);
    // The residual stream starts as the token's embedding.
    const int64_t id = min(max(*p.tokenId, int64_t(0)), int64_t(p.vocab - 1));
    const T* embed = static_cast<const T*>(p.embed) + id * p.hidden;
    for (int v = threadIdx.x; v < p.hidden / V; v += kConsumerThreads) s.residual[v] = loadNc16(embed + int64_t(v) * V);
    consumerSync();

    T* qkv = plan.qkv();
    T* deltaO = plan.deltaO();
    T* act = plan.act();
    T* deltaD = plan.deltaD();
    for (int l = 0; l < ((p.flags & kPersistentLmHeadOnly) ? 0 : p.numLayers); ++l) {
        // 1. QKV
        stamp(p, l, kTraceQkvWait);
        if (l > 0) awaitStage(p, plan.counter(l - 1, kDownDone), all);
        stamp(p, l, kTraceQkvReady);
        addNormInput<T>(p, s, l > 0 ? deltaD : nullptr, plan.tensor(l, kPlInputNorm));
        const Range qkvRows = plan.qkvRows();
        consumeRows<T>(s, chunk, p.hidden, qkvRows, p.flags, {kEmitT, qkv, qkvRows.begin});
        stamp(p, l, kTraceQkvDone);
        finishStage(plan.counter(l, kQkvDone));
        // 2. attention
        if (plan.attends) attend<T>(plan, s, chunk, l);
        // 3. O
        awaitStage(p, plan.counter(l, kAttnDone), static_cast<uint32_t>(p.numKvHeads));
        stamp(p, l, kTraceOReady);
        loadInput<T>(s, plan.attn(), p.numQHeads * p.headDim);
        const Range oRows = plan.oRows();
        consumeRows<T>(s, chunk, p.numQHeads * p.headDim, oRows, p.flags, {kEmitT, deltaO, oRows.begin});
        stamp(p, l, kTraceODone);
        finishStage(plan.counter(l, kODone));
        // 4. gate/up, SiLU-and-mul
        awaitStage(p, plan.counter(l, kODone), all);
        stamp(p, l, kTraceGateUpReady);
        addNormInput<T>(p, s, deltaO, plan.tensor(l, kPlPostNorm));
        const Range gateRows = plan.gateRows();
        consumeRows<T>(s, chunk, p.hidden, gateRows, p.flags, {kEmitGate, nullptr, 0});
        consumeRows<T>(s, chunk, p.hidden, gateRows, p.flags, {kEmitAct, act, gateRows.begin});
        stamp(p, l, kTraceGateUpDone);
        finishStage(plan.counter(l, kGateUpDone));
        // 5. down
        awaitStage(p, plan.counter(l, kGateUpDone), all);
        stamp(p, l, kTraceDownReady);
        loadInput<T>(s, act, p.intermediate);
        const Range downRows = plan.downRows();
        consumeRows<T>(s, chunk, p.intermediate, downRows, p.flags, {kEmitT, deltaD, downRows.begin});
        stamp(p, l, kTraceDownDone);
        finishStage(plan.counter(l, kDownDone));
    }
    // Final norm and the LM head.
    if (!(p.flags & kPersistentLmHeadOnly)) awaitStage(p, plan.counter(p.numLayers - 1, kDownDone), all);
    stamp(p, 1 + p.numLayers * kPersistentTraceEvents);
    addNormInput<T>(p, s, deltaD, static_cast<const T*>(p.finalNorm));
    const Range lmRows = plan.lmRows();
    consumeRows<T>(s, chunk, p.hidden, lmRows, p.flags, {kEmitLogit, p.logits, lmRows.begin});
    stamp(p, 2 + p.numLayers * kPersistentTraceEvents);
}

template <class T>
__global__ void __launch_bounds__(kThreads, 1) persistentDecodeKernel(const __grid_constant__ PersistentDecodeParams p)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char smem[];
    const SmemLayout layout = smemLayout(p);
    Smem s;
    s.ring = smem + layout.ring;
    s.full = reinterpret_cast<uint64_t*>(smem + layout.full);
    s.empty = reinterpret_cast<uint64_t*>(smem + layout.empty);
    s.x = reinterpret_cast<float*>(smem + layout.x);
    s.residual = reinterpret_cast<uint4*>(smem + layout.residual);
    s.kvNew = smem + layout.kvNew;
    s.gate = reinterpret_cast<float*>(smem + layout.gate);
    s.q = reinterpret_cast<float*>(smem + layout.q);
    s.reduce = reinterpret_cast<float*>(smem + layout.reduce);
    s.flag = reinterpret_cast<int*>(smem + layout.flag);
    if (threadIdx.x == 0) {
        for (int i = 0; i < kSlots; ++i) {
            mbarInit(&s.full[i], 1);                // the producer's arrive, plus the copies' bytes
            mbarInit(&s.empty[i], kConsumerWarps);  // one arrive per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    const Plan<T> plan(p);
    if (threadIdx.x / 32 == kProducerWarp) produce<T>(plan, s);
    else consume<T>(plan, s);

    // The last CTA out returns every counter to zero for the next launch: all others have passed
    // every wait by the time they count themselves out.
    __syncwarp();  // the producer's lane 0 issues its copies after the other lanes are done
    __syncthreads();
    const int64_t words = persistentDecodeCounterWords(p.numLayers, p.numKvHeads);
    if (threadIdx.x == 0)
        *s.flag = fetchAddAcqRel(p.counters + words - kPersistentCounterStride, 1u) == gridDim.x - 1 ? 1 : 0;
    __syncthreads();
    if (*s.flag)
        for (int64_t i = threadIdx.x; i < words; i += kThreads) p.counters[i] = 0;
#else
    __trap();  // launchPersistentDecode refuses devices below sm_90
#endif
}

// Lets the kernel take the device's whole opt-in shared memory (once: graphs captured earlier keep
// working whatever size a later launch needs) and checks that numCtas CTAs of smemBytes are resident at
// once (the stages wait for each other: a CTA that is not resident would never come).
template <class T>
cudaError_t prepare(const PersistentDecodeParams& p, int smemBytes)
{
    static int optIn = 0, checkedSmem = -1, residentCtas = 0;  // engine thread only (the runner)
    int device = 0;
    LECTOR_CUDA_TRY(cudaGetDevice(&device));
    if (optIn == 0) {
        LECTOR_CUDA_TRY(cudaDeviceGetAttribute(&optIn, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
        LECTOR_CUDA_TRY(
            cudaFuncSetAttribute(persistentDecodeKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, optIn));
    }
    if (smemBytes > optIn) return cudaErrorInvalidValue;
    if (smemBytes != checkedSmem) {
        int sms = 0, perSm = 0;
        LECTOR_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        LECTOR_CUDA_TRY(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, persistentDecodeKernel<T>, kThreads, smemBytes));
        checkedSmem = smemBytes;
        residentCtas = perSm * sms;
    }
    return p.numCtas <= residentCtas ? cudaSuccess : cudaErrorCooperativeLaunchTooLarge;
}

bool aligned16All(std::initializer_list<const void*> ptrs)
{
    for (const void* q : ptrs)
        if (!q || !aligned16(q)) return false;
    return true;
}

}  // namespace

int persistentDecodeCtas(int device)
{
    int major = 0, sms = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        return 0;
    return major >= 9 ? sms : 0;
}

int persistentDecodeSmemBytes(const PersistentDecodeParams& p) { return smemLayout(p).total; }

cudaError_t launchPersistentDecode(const PersistentDecodeParams& p, cudaStream_t stream)
{
    if (p.hiddenOut || p.dtype == DType::F32 || p.headDim != kHeadDim || p.numKvHeads <= 0 || p.numQHeads % p.numKvHeads != 0 ||
        p.numQHeads / p.numKvHeads > kMaxGroup || p.numLayers <= 0 || p.vocab <= 0 || p.hidden <= 0 ||
        p.intermediate <= 0 || p.hidden % 8 != 0 || p.intermediate % 8 != 0 || p.maxPosition <= 0 ||
        p.numPosAxes < 1 || p.numPosAxes > 4 || p.numCtas < p.numKvHeads || p.numCacheBlocks < 0)
        return cudaErrorInvalidValue;
    for (int width : {p.hidden, p.numQHeads * p.headDim, p.intermediate})
        if (width * 2 > kSlotBytes) return cudaErrorInvalidValue;
    int sectionSum = 0;
    for (int a = 0; a < p.numPosAxes; ++a) sectionSum += p.sections[a];
    if (sectionSum != kHalfDim) return cudaErrorInvalidValue;
    if (!aligned16All({p.layers, p.embed, p.finalNorm, p.lmHead, p.workspace, p.logits}) || !p.cosSin || !p.tokenId ||
        !p.positions || !p.slot || !p.contextLen || !p.blockTable || !p.counters)
        return cudaErrorInvalidValue;
    int device = 0;
    LECTOR_CUDA_TRY(cudaGetDevice(&device));
    if (persistentDecodeCtas(device) == 0) return cudaErrorNotSupported;
    const int smemBytes = smemLayout(p).total;
    return dispatchDType(p.dtype, [&]<class T>() -> cudaError_t {
        if constexpr (sizeof(T) != 2) {
            return cudaErrorInvalidValue;
        } else {
            LECTOR_CUDA_TRY(prepare<T>(p, smemBytes));
            persistentDecodeKernel<T><<<p.numCtas, kThreads, smemBytes, stream>>>(p);
            return cudaGetLastError();
        }
    });
}

}  // namespace lector::gpu
