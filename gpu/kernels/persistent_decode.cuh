// One decode step of one sequence through the whole text decoder in a single persistent kernel: the
// embedding row, every layer (add + RMSNorm, QKV, XD-RoPE + QK-norm + K/V write, paged attention,
// O, add + RMSNorm, gate/up + SiLU-and-mul, down), the final norm and the LM head's float32 logits.
//
// Why: a batch-1 decode step has to read the whole decoder (1.08 GB in float16, ~0.26 ms at the H200's
// copy bandwidth), but as ~120 dependent kernels of a few microseconds it took 0.69 ms: every kernel
// ramps up and drains, and PDL hides only part of each gap (docs/perf.md, runs 16-24). Here one CTA
// per SM runs the step from start to end. A producer warp streams the CTA's share of every weight
// matrix (and of the KV cache) through a ring of shared-memory slots with bulk copies, in the order
// the CTA will use them. Weights do not depend on the step, so the stream never waits for another
// CTA; eight consumer warps compute from shared memory and meet the other CTAs only where the data
// flow needs it, through counters in global memory (one per stage and layer):
//
//   QKV rows  -> [all CTAs]  attention (KV head x partition) -> [merge by the last partition of a head]
//   -> [all heads] O rows -> [all CTAs] gate/up rows -> [all CTAs] down rows -> [all CTAs] next layer
//
// Each CTA keeps its own copy of the residual stream in shared memory (all of them add the same
// deltas in the same order), so the residual itself never travels.
//
// Numerics follow the kernel chain it replaces (and its references): projections accumulate in
// float32 and round once to the dtype; add + RMSNorm as rms_norm.cuh; RoPE then QK-norm as
// qk_norm_rope.cuh; softmax in float32; SiLU-and-mul of the rounded gate/up; logits are the rounded
// product widened to float32. The CPU reference (gpu/ref/persistent_decode_ref.h) is that chain of
// references.
//
// Requirements (the launcher returns cudaErrorInvalidValue otherwise): float16 or bfloat16; head dim
// 128; numQHeads / numKvHeads 1 or 2; hidden, intermediate and numQHeads * headDim multiples of 8 whose
// rows fit a ring slot; every matrix contiguous [out, in] and 16-byte aligned; numCtas CTAs resident
// at once (one per SM; cudaErrorNotSupported below sm_90, where the bulk copies do not exist).
// The counters must be zero before a launch; every launch leaves them zero (CUDA-graph replays need no
// memset). A step that waits more than a few seconds on another CTA (which only a broken launch can
// cause) stops the kernel with a trap rather than hang the device.
// Engine thread (core/runner/model_runner), one launch per decode step of a batch of one.
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

// The tensors of one layer, in the order of a row of PersistentDecodeParams::layers.
enum PersistentLayerTensor : int {
    kPlInputNorm,  // [hidden]
    kPlQkv,        // [(numQHeads + 2 numKvHeads) headDim, hidden]
    kPlQueryNorm,  // [headDim]
    kPlKeyNorm,    // [headDim]
    kPlO,          // [hidden, numQHeads headDim]
    kPlPostNorm,   // [hidden]
    kPlGateUp,     // [2 intermediate, hidden]: gate rows, then up rows
    kPlDown,       // [hidden, intermediate]
    kPlKeyCache,   // [numCacheBlocks, kKvBlockSize, numKvHeads, headDim]
    kPlValueCache,
    kPlCount
};

struct PersistentDecodeParams {
    DType dtype = DType::F16;
    int numLayers = 0;
    int hidden = 0;
    int intermediate = 0;
    int numQHeads = 0;
    int numKvHeads = 0;
    int headDim = 0;
    int vocab = 0;
    float eps = 1e-5f;
    float scale = 1.0f;                 // softmax scale
    const void* const* layers = nullptr;  // [numLayers * kPlCount] addresses (on the device for the kernel)
    const void* embed = nullptr;        // [vocab, hidden]
    const void* finalNorm = nullptr;    // [hidden]
    const void* lmHead = nullptr;       // [vocab, hidden]
    const float* cosSin = nullptr;      // [maxPosition, headDim] float32: cos | sin halves (qk_norm_rope.cuh)
    int maxPosition = 0;
    int numPosAxes = 1;
    int sections[4] = {0, 0, 0, 0};
    int numCacheBlocks = 0;             // block ids outside [0, numCacheBlocks) are masked, as in the attention ops

    // The step: one sequence, one new token (read on the device, so a graph replays it).
    const int64_t* tokenId = nullptr;   // [1]; clamped into the vocabulary
    const int64_t* positions = nullptr; // [numPosAxes] at positionsAxisStride
    int64_t positionsAxisStride = 1;
    const int64_t* slot = nullptr;      // [1]: cache slot of the new token (outside the cache: not written)
    const int32_t* contextLen = nullptr;  // [1]: keys attended, the new token included (>= 1)
    const int32_t* blockTable = nullptr;  // [ceil(contextLen / kKvBlockSize)] block ids

    float* logits = nullptr;            // [vocab] float32
    // [hidden] in the dtype, or nullptr: where set, the step ends with the final norm's row written here and
    // computes no logits (the greedy screen takes it from there). Head-parallel kernels and the reference only.
    void* hiddenOut = nullptr;
    void* workspace = nullptr;          // persistentDecodeWorkspaceBytes()
    uint32_t* counters = nullptr;       // persistentDecodeCounterWords() words, zero
    int numCtas = 0;                    // grid size: the device's SM count (persistentDecodeCtas)

    // Benchmarks only (bench/gpu/bench_persistent_decode.cu): clock64() stamps of every stage of every
    // CTA, [numCtas][persistentDecodeTraceStamps()], when set; flags as below.
    long long* trace = nullptr;
    int flags = 0;
};

// flags, for benchmarks that take the step apart (all but kPersistentTryWait give wrong results):
constexpr int kPersistentNoWaits = 1;          // skip every wait for another CTA
constexpr int kPersistentNoCopies = 4;         // the producer copies nothing (consumer work alone; wrong results)
constexpr int kPersistentNoMath = 8;           // consumers skip the dot products (data delivery alone)
constexpr int kPersistentLmHeadOnly = 16;      // only the final norm and the LM head (streaming at its plainest)
constexpr int kPersistentTryWait = 32;         // ring waits suspend in mbarrier.try_wait instead of spinning on test_wait

// Trace stamps per CTA: kernel start; per layer the kPersistentTraceEvents below; the LM head's wait,
// its end.
enum PersistentTraceEvent : int {
    kTraceQkvWait, kTraceQkvReady, kTraceQkvDone, kTraceAttnReady, kTraceAttnPartial, kTraceAttnMerged,
    kTraceOReady, kTraceODone, kTraceGateUpReady, kTraceGateUpDone, kTraceDownReady, kTraceDownDone,
    kPersistentTraceEvents
};
constexpr int persistentDecodeTraceStamps(int numLayers) { return 1 + numLayers * kPersistentTraceEvents + 2; }

// Widest matrix row (hidden, intermediate, numQHeads * headDim) the kernel's 32 KB ring slots take.
// (LECTOR_PERSISTENT_SLOT_KB / LECTOR_PERSISTENT_SLOTS: ring geometry for benchmark builds only.)
#ifndef LECTOR_PERSISTENT_SLOT_KB
#define LECTOR_PERSISTENT_SLOT_KB 32
#endif
constexpr int kPersistentDecodeMaxWidth = LECTOR_PERSISTENT_SLOT_KB * 1024 / 2;

// Attention split: numKvHeads x partitions units over the CTAs.
constexpr int persistentDecodePartitions(int numCtas, int numKvHeads)
{
    return numKvHeads > 0 && numCtas >= numKvHeads ? numCtas / numKvHeads : 0;
}

// Workspace layout (bytes, each part 256-aligned): qkv, attention output, O output, activation, down
// output in the dtype, then the float32 split-K partials [numKvHeads * partitions][group][headDim + 2].
struct PersistentDecodeWorkspace {
    int64_t qkv, attn, deltaO, act, deltaD, partials, total;
};

constexpr int64_t persistentAlign256(int64_t b) { return (b + 255) / 256 * 256; }

LECTOR_HD constexpr PersistentDecodeWorkspace persistentDecodeWorkspace(const PersistentDecodeParams& p)
{
    const int64_t e = dtypeBytes(p.dtype);
    const int group = p.numKvHeads > 0 ? p.numQHeads / p.numKvHeads : 0;
    PersistentDecodeWorkspace w{};
    w.qkv = 0;
    w.attn = w.qkv + persistentAlign256(int64_t(p.numQHeads + 2 * p.numKvHeads) * p.headDim * e);
    w.deltaO = w.attn + persistentAlign256(int64_t(p.numQHeads) * p.headDim * e);
    w.act = w.deltaO + persistentAlign256(int64_t(p.hidden) * e);
    w.deltaD = w.act + persistentAlign256(int64_t(p.intermediate) * e);
    w.partials = w.deltaD + persistentAlign256(int64_t(p.hidden) * e);
    w.total = w.partials + persistentAlign256(int64_t(p.numKvHeads) * persistentDecodePartitions(p.numCtas, p.numKvHeads) *
                                              group * (p.headDim + 2) * 4);
    return w;
}

inline int64_t persistentDecodeWorkspaceBytes(const PersistentDecodeParams& p) { return persistentDecodeWorkspace(p).total; }

// Counters: per layer [qkv done, attention heads done, O done, gate/up done, down done, a ticket per KV
// head], then one for the CTAs that have finished; each on a 128-byte line of its own (polls of one
// do not slow the atomics of another).
constexpr int kPersistentCountersPerLayer = 5;
constexpr int kPersistentCounterStride = 32;  // words
constexpr int64_t persistentDecodeCounterWords(int numLayers, int numKvHeads)
{
    return (int64_t(numLayers) * (kPersistentCountersPerLayer + numKvHeads) + 1) * kPersistentCounterStride;
}

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// CTAs a launch on `device` uses (its SM count), or 0 when the kernel cannot run there (below sm_90).
int persistentDecodeCtas(int device);
// Dynamic shared memory a launch with these shapes and numCtas needs (at most the device's opt-in limit).
int persistentDecodeSmemBytes(const PersistentDecodeParams& p);
// Asynchronous on `stream`; launched without PDL (it needs every SM, and starts after the work before it).
cudaError_t launchPersistentDecode(const PersistentDecodeParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
