// Skinny matrix product for decode steps: out[r, n] = sum_k x[r, k] * weight[n, k] for at most
// kSkinnyMaxRows rows of x. At one to a few decode rows a projection is one pass over its weight, and
// for the decoder's [1024 x 2048] and [1024 x 3584] projections cuBLAS's kernels leave most of the
// bandwidth unused (6.6 us for the 7.3 MB down projection on an H200, 1.1 TB/s). Accumulates in float32,
// rounds once. The model runner uses it where it measures faster (ModelRunner::tuneLayouts).
//
// Two engines behind one Params struct. Simt (skinny_gemm.cu): float32 FMAs, 1..8 rows, any dtype and K.
// TensorCore (skinny_gemm_tc.cu, sm_90): mma.sync over the weight as the 16-row operand and the rows of x
// as the 8-wide one, 2..64 rows in one pass over the weight; 16-bit dtypes, K a multiple of 32. On the
// H200 it beats cuBLAS (about 5 us per projection whatever the rows) only for the LM head at 2-32 rows and
// the o projection at 8-16 (bench/gpu/bench_skinny_gemm.cu, docs/perf.md). WarpGroup (skinny_gemm_wg.cu,
// sm_90a): wgmma from shared memory with the rows of x as N, 1..64 rows, plain x only (no prologues);
// made for 16 to 64 rows, where the TensorCore engine's cost grows with every row.
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

constexpr int kSkinnyMaxRows = 8;     // Simt
constexpr int kSkinnyTcMaxRows = 64;  // TensorCore

enum class SkinnyEngine : int32_t { Simt, TensorCore, WarpGroup };

struct SkinnyGemmParams {
    DType dtype = DType::F16;
    SkinnyEngine engine = SkinnyEngine::Simt;
    // TensorCore, WarpGroup: CTAs (a thread-block cluster) that split K; 0 picks from the shape.
    int splitK = 0;
    // WarpGroup: stages of 64 k a CTA keeps in flight (its ring, 1..8); 0 picks (skinny_gemm_wg.cu: 4, or
    // a longer slice whole). Fewer stages take less shared memory, so more CTAs fit beside each other.
    int ringStages = 0;
    void* out = nullptr;           // [rows, n], outStride
    const void* x = nullptr;       // [rows, k], xStride ([rows, 2k] with siluMulInput)
    const void* weight = nullptr;  // [n, k], weightStride
    int64_t outStride = 0;         // elements
    int64_t xStride = 0;
    int64_t weightStride = 0;
    int rows = 0;                  // 0 .. kSkinnyMaxRows (Simt), kSkinnyTcMaxRows (TensorCore, WarpGroup)
    int n = 0;
    int k = 0;
    // x holds [gate | up], each k wide, and the product uses silu(gate) * up rounded to the dtype (what
    // silu_and_mul.cuh would store): the MLP's down projection without a separate activation pass.
    bool siluMulInput = false;
    // out is float32 and gets the product rounded to the dtype, then widened: what converting the dtype's
    // output to float32 would give, without that extra pass (the LM head's logits for the sampler).
    bool outFloat = false;
    // Optional residual add + RMSNorm in front (normWeight set; not with siluMulInput): x is the delta,
    // r = round(residualIn + x) goes to residualOut (written by one CTA, so residualOut must not alias
    // residualIn, which the others still read), and the product uses round(normWeight * r / rms(r)):
    // rms_norm.cuh's fused add + RMSNorm and the projection after it in one kernel. Rows of x, residualIn
    // and residualOut 16-byte aligned, k a multiple of the vector width.
    const void* normWeight = nullptr;  // [k]
    const void* residualIn = nullptr;  // [rows, k], residualStride
    void* residualOut = nullptr;       // [rows, k], residualStride
    int64_t residualStride = 0;
    float eps = 1e-5f;
};

// Shared memory of the add + RMSNorm variant: the normalised rows.
constexpr int64_t skinnyNormSmemBytes(int rows, int k, int elemBytes) { return int64_t(rows) * k * elemBytes; }
constexpr int64_t kSkinnyNormMaxSmemBytes = 48 * 1024;

// One contiguous row on the Simt engine: out [n] = x [k] times weight [n, k]^T (rows of k elements);
// outFloat: float32 out, as the LM head's logits.
inline SkinnyGemmParams skinnyRowParams(DType dtype, void* out, const void* x, const void* weight, int n, int k,
                                        bool outFloat = false)
{
    SkinnyGemmParams g;
    g.dtype = dtype;
    g.out = out;
    g.x = x;
    g.weight = weight;
    g.outStride = n;
    g.xStride = k;
    g.weightStride = k;
    g.rows = 1;
    g.n = n;
    g.k = k;
    g.outFloat = outFloat;
    return g;
}

constexpr int skinnyMaxRows(SkinnyEngine e) { return e == SkinnyEngine::Simt ? kSkinnyMaxRows : kSkinnyTcMaxRows; }

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// Any engine, by p.engine. TensorCore returns cudaErrorNotSupported below sm_90, for float32, for K
// not a multiple of 32 and for rows or strides not 16-byte aligned: callers time it before using it.
// WarpGroup likewise off compute capability 9.0, for K not a multiple of 64 and for either prologue.
cudaError_t launchSkinnyGemm(const SkinnyGemmParams& p, cudaStream_t stream);
cudaError_t launchSkinnyGemmTc(const SkinnyGemmParams& p, cudaStream_t stream);  // skinny_gemm_tc.cu
cudaError_t launchSkinnyGemmWg(const SkinnyGemmParams& p, cudaStream_t stream);  // skinny_gemm_wg.cu
#endif

}  // namespace lector::gpu
