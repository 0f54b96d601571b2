// The decoder layer's MLP block for 2 to 32 decode rows as one kernel: residual add + RMSNorm, gate/up,
// SiLU-and-mul, down. In the kernel chain that is four kernels (fused add + RMSNorm, the gate/up product,
// silu_and_mul, the down product), each a wait for the whole card, and at 8 to 64 rows the block took
// ~16-19 us a layer for ~5 us of weight bytes (docs/perf.md, call 84).
//
// Structure (the batch-1 head-parallel MLP kernel's, head_parallel_decode.cuh, for many rows): 7
// thread-block clusters of 16 CTAs, each cluster 512 intermediate columns, each CTA 32 gate and 32 up
// rows (seven clusters: the H200's GPCs that hold a cluster of 16, so none starts late). A CTA
//   - before the PDL wait: copies its 64 gate/up rows into shared memory (cp.async, laid out as the
//     tensor-core fragments the product reads), its 64 rows x 512 columns of down into registers;
//   - normalises whole rows of the batch (CTA rank c: rows c and c + 16) and pushes each into every CTA of
//     the cluster (distributed shared memory), so no CTA reads the batch from the L2 more than once;
//   - gate/up on the tensor cores (mma.sync, the weight as the 16-row operand, the batch as the 8-wide
//     one); SiLU-and-mul; pushes its 32 products a row into the cluster;
//   - down: its 64 output rows times the cluster's 512 products, a float32 partial of the output;
//   - the last of the 7 CTAs of one rank (a ticket) sums the 7 partials of those 64 rows in cluster order
//     and stores them rounded: the block's output as the chain's down product gives it.
//
// Numerics are the chain's: r = round(residual + delta) stored; x = round(r * rsqrt(mean(r^2) + eps) *
// weight); gate/up accumulated in float32, rounded; silu(gate) * up in float32, rounded; down in float32,
// rounded once. Only the order of the float32 sums differs.
//
// Requirements (fusedMlpUnsupported says which failed): float16 or bfloat16; hidden 1024 and
// intermediate 3584 (HunyuanOCR's decoder); 1 to 32 rows; every tensor contiguous, 16-byte aligned;
// sm_90 with clusters of 16. Engine thread (core/runner/model_runner), one launch per layer.
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

constexpr int kFusedMlpHidden = 1024, kFusedMlpIntermediate = 3584;
constexpr int kFusedMlpMaxRows = 32;
constexpr int kFusedMlpClusters = 7;  // of 16 CTAs, 512 intermediate columns each

struct FusedMlpParams {
    DType dtype = DType::F16;
    int rows = 0;                     // 1 .. kFusedMlpMaxRows
    int hidden = kFusedMlpHidden;
    int intermediate = kFusedMlpIntermediate;
    float eps = 1e-5f;
    const void* residualIn = nullptr;  // [rows, hidden]
    const void* delta = nullptr;       // [rows, hidden]: what the residual add adds (the o projection)
    void* residualOut = nullptr;       // [rows, hidden]: round(residualIn + delta); not residualIn
    const void* normWeight = nullptr;  // [hidden]
    const void* gateUp = nullptr;      // [2 intermediate, hidden]: gate rows, then up rows
    const void* down = nullptr;        // [hidden, intermediate]
    void* out = nullptr;               // [rows, hidden]: the down product
    void* workspace = nullptr;         // fusedMlpWorkspaceBytes(); its tickets zero before the first launch
    // Benchmarks only (bench/gpu/bench_fused_mlp.cu): %globaltimer stamps (ns) of each CTA's phases,
    // [112][kFusedMlpTraceStamps], when set.
    unsigned long long* trace = nullptr;
};
// start, weights issued, the wait over, x normalised and pushed, gate/up done, products pushed, down done,
// ticket taken, the sums stored (the last CTA of a rank; the others leave it 0)
constexpr int kFusedMlpTraceStamps = 9;

// Float32 partials [7][32][hidden], then 16 tickets, which every launch leaves zero (graph replays need no
// memset).
constexpr int64_t kFusedMlpPartialBytes = int64_t(kFusedMlpClusters) * kFusedMlpMaxRows * kFusedMlpHidden * 4;
constexpr int64_t fusedMlpWorkspaceBytes() { return kFusedMlpPartialBytes + 16 * 4; }

// Empty when `p` is within the requirements (the device aside), else what is not.
const char* fusedMlpUnsupported(const FusedMlpParams& p);

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// Whether `device` runs the kernel: sm_90 or newer, and clusters of 16 CTAs of its size fit.
bool fusedMlpSupported(int device);
// Asynchronous on `stream`, with PDL where enabled.
cudaError_t launchFusedMlp(const FusedMlpParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
