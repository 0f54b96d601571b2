// One decode step of one sequence as two kernels a layer, the layer partitioned by KV head the way tensor
// parallelism splits it over GPUs (the second way gpu::PersistentDecoder runs a batch-1 step; the same
// PersistentDecodeParams, the same results as its CPU reference up to the order of float32 sums).
//
// Why: the kernel chain pays six dependencies among all multiprocessors a layer (qkv, QK-norm/RoPE,
// attention, o, gate/up, down: ~1.4 us each, docs/perf.md call 135). Split by KV head, o and down become
// row-parallel, and only two stay grid-wide:
//   attention kernel, a thread-block cluster of 16 CTAs per KV head (8 clusters): add + RMSNorm of the
//     residual and the last layer's down partials; the head's 512 qkv rows (its 2 query heads, its key and
//     value), 32 a CTA; the rows pushed into every CTA of the cluster (distributed shared memory); RoPE,
//     QK-norm and the new token's K/V write; each CTA attends over 1/16 of the context (a warp per 8 keys,
//     online softmax), pushes its partial, and merges the 16 locally; o's 64 rows a CTA times the head's
//     256 outputs: a partial of the hidden vector per KV head, in float32;
//   MLP kernel, clusters of 16 over 448 intermediate columns each: add + RMSNorm of the residual and the
//     8 o partials; 28 gate and 28 up rows a CTA; SiLU-mul pushed into the cluster; down's 64 rows a CTA
//     times the cluster's 448 products: 8 partials, in float32.
// Every CTA loads its weights and its share of the K/V (up to kHpPrefetchKeys keys) before the PDL wait
// and lets the next kernel launch at once; an attention CTA and an MLP CTA fit one multiprocessor
// together, so the next kernel's CTAs stream their weights while this one computes. After the last layer
// a one-CTA kernel adds and normalises, and the SIMT skinny GEMM computes the LM head's logits.
//
// Numerics follow the chain (persistent_decode_ref.h): each projection rounds once to the dtype (o and
// down: the sum of their partials, rounded, is the chain's product); the residual is rounded at each add
// and normalised as rms_norm.cuh; RoPE then QK-norm, rounded once; softmax in float32; SiLU-mul of the
// rounded gate/up, rounded. The weights are read in place ([out, in] rows; no copy).
//
// Requirements (headParallelDecodeUnsupported says which failed): float16 or bfloat16; HunyuanOCR's
// decoder shapes (hidden 1024, intermediate 3584, 16 query and 8 KV heads of 128); sm_90 with clusters of
// 16 CTAs; every matrix contiguous and 16-byte aligned. A CTA's first 64 prefetched keys are attended a
// group of 8 a warp, the next 20 a quad of 4 a warp; keys past kHpPrefetchKeys per CTA (contexts above
// 16 x 84) are read after the wait, one group of 8 a warp at a time. The attention clusters are placed by
// the load-balancing policy (LECTOR_HP_CLUSTER_POLICY=0 / 1: the default / spread policy).
// Engine thread (core/runner/model_runner), one step per launch sequence; CUDA graphs capture it.
#pragma once

#include "gpu/kernels/persistent_decode.cuh"

namespace lector::gpu {

constexpr int kHpHidden = 1024, kHpIntermediate = 3584, kHpQHeads = 16, kHpKvHeads = 8, kHpHeadDim = 128;
constexpr int kHpCluster = 16;           // CTAs a KV head (and a group of 448 intermediate columns)
constexpr int kHpCtas = kHpKvHeads * kHpCluster;
constexpr int kHpPrefetchKeys = 84;      // keys a CTA loads before the wait (one MLP CTA still fits beside)

// Workspace: residual after attention and after the MLP (float32, rounded to the dtype), the o and down
// partials [8, hidden] float32, the final normalised row in the dtype.
struct HeadParallelWorkspace {
    int64_t residualAttn, residualMlp, oPartials, downPartials, finalRow, total;
};
constexpr HeadParallelWorkspace headParallelWorkspace()
{
    HeadParallelWorkspace w{};
    w.residualAttn = 0;
    w.residualMlp = w.residualAttn + kHpHidden * 4;
    w.oPartials = w.residualMlp + kHpHidden * 4;
    w.downPartials = w.oPartials + int64_t(kHpKvHeads) * kHpHidden * 4;
    w.finalRow = w.downPartials + int64_t(kHpKvHeads) * kHpHidden * 4;
    w.total = w.finalRow + kHpHidden * 4;
    return w;
}

// Benchmarks only: where head_parallel_decode.cu is compiled with LECTOR_HP_TRACE defined (bench/gpu/
// build_torch_free.sh bench_hp_trace; never in the product), thread 0 of every CTA stamps p.trace, when set,
// laid out [numLayers][2: attention, MLP kernel][kHpCtas][kHpTraceMarks]: clock64() at the kernel's entry
// (mark 0) and at the end of each stage below, the globaltimer at entry and exit, and its multiprocessor.
constexpr int kHpTraceMarks = 16, kHpTraceEntryNs = 13, kHpTraceExitNs = 14, kHpTraceSm = 15;
enum HpAttentionMark : int {
    kHpAttnWaited = 1,    // the PDL wait released (the weights and the first keys requested before it)
    kHpAttnNormed,        // add + RMSNorm of the residual and the 8 down partials
    kHpAttnQkv,           // the head's qkv rows computed, pushed, the cluster barrier passed
    kHpAttnRope,          // RoPE + QK-norm, the new K/V written
    kHpAttnKvLanded,      // the prefetched keys and values landed (cp.async wait + block barrier)
    kHpAttnWarp0Keys,     // warp 0 done with its groups of keys (before the block barrier)
    kHpAttnKeys,          // every warp done with its keys (after it)
    kHpAttnExchanged,     // the CTA's partial pushed, the cluster barrier passed
    kHpAttnMerged,        // the 16 partials merged, o's rows landed
    kHpAttnDone,          // o's rows times the output, stored
};
enum HpMlpMark : int {
    kHpMlpWaited = 1,     // the PDL wait released
    kHpMlpNormed,         // add + RMSNorm of the residual and the 8 o partials
    kHpMlpLanded,         // the gate/up rows landed (cp.async wait + block barrier)
    kHpMlpGateUp,         // gate/up rows, a warp's 7
    kHpMlpExchanged,      // SiLU-mul pushed, the cluster barrier passed
    kHpMlpDone,           // down's rows, stored
};

// Empty when the shapes of `p` are the ones the kernels are built for, else what differs.
const char* headParallelDecodeShapeMismatch(const PersistentDecodeParams& p);

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// Whether `device` runs the kernels: sm_90 or newer, and clusters of 16 CTAs of their size fit.
bool headParallelDecodeSupported(int device);
// Asynchronous on `stream`. p.workspace holds headParallelWorkspace().total bytes; p.counters and numCtas
// are not used, the trace only in LECTOR_HP_TRACE builds (above). Every kernel is launched under PDL: the
// first reads the step's inputs (the id, positions, slot, context, block table) only after its wait, and lets
// the next launch only then, so the work before may still write them (LECTOR_HP_FIRST_PDL=0: the first
// kernel reads them before its wait and is launched without PDL, after that work, as until 2026-12-05).
cudaError_t launchHeadParallelDecode(const PersistentDecodeParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
