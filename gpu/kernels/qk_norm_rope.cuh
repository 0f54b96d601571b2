// Rotary embedding followed by per-head RMSNorm of queries and keys, in place, as HunyuanOCR's
// decoder does it (docs/hunyuanocr-spec.md §5.3, §6: XD-RoPE first, QK-norm after). XD-RoPE gives
// each frequency band its own position axis: with sections {16,16,16,16} frequencies [0,16) rotate
// by axis 0 (p), [16,32) by axis 1 (w), [32,48) by h, [48,64) by t. Neox (rotate-half) pairing:
// dim j pairs with j + headDim/2. Plain 1-D RoPE is numPosAxes = 1, sections {headDim/2}.
// Engine thread, once per layer, on the q/k views of the fused QKV projection.
// PDL contract (common.cuh): positions, slotMapping, the table and the weights are read before waiting for
// the previous kernel (step inputs come from host-to-device copies, which a kernel never overlaps); only
// query, key and value may be written by the kernel just before it.
//
// With keyCache set, the same kernel also writes the new tokens' K (after rotation and norm) and V into
// the paged KV cache at slotMapping (what kv_cache_write.cuh does on its own): one launch less per layer,
// and K is stored straight from registers.
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

struct QkNormRopeParams {
    DType dtype = DType::F16;         // of query, key and the norm weights
    void* query = nullptr;            // [numTokens, numQHeads, headDim], queryTokenStride, in place
    void* key = nullptr;              // [numTokens, numKvHeads, headDim], keyTokenStride, in place
    const void* positions = nullptr;  // [numPosAxes, numTokens], positionsAxisStride; int64 or int32
    bool positionsInt64 = true;
    const float* cosSinCache = nullptr;  // [maxPosition, headDim] float32: cos(pos*f_j) at j,
                                         // sin(pos*f_j) at headDim/2 + j, j < headDim/2
    const void* queryNormWeight = nullptr;  // [headDim] or nullptr (no QK-norm)
    const void* keyNormWeight = nullptr;    // [headDim] or nullptr
    int64_t queryTokenStride = 0;     // elements; heads are contiguous (head stride = headDim)
    int64_t keyTokenStride = 0;
    int64_t positionsAxisStride = 0;  // elements between the axes of positions
    int numTokens = 0;
    int numQHeads = 0;
    int numKvHeads = 0;
    int headDim = 0;                  // 128
    int maxPosition = 0;              // rows of cosSinCache; positions are clamped into [0, maxPosition)
    int numPosAxes = 1;               // 1 (RoPE) to 4 (XD-RoPE)
    int sections[4] = {0, 0, 0, 0};   // frequencies per axis; the first numPosAxes sum to headDim / 2
    float eps = 1e-5f;
    // Optional paged KV write (all null / 0: none). Cache layout [numCacheSlots / 16, 16, numKvHeads,
    // headDim], contiguous; slotMapping [numTokens] int64, a slot outside [0, numCacheSlots) is skipped.
    void* keyCache = nullptr;
    void* valueCache = nullptr;
    const void* value = nullptr;      // [numTokens, numKvHeads, headDim], valueTokenStride
    int64_t valueTokenStride = 0;
    const int64_t* slotMapping = nullptr;
    int64_t numCacheSlots = 0;
};

// What both launchers that rotate (launchQkNormRope, decode attention's PagedDecodeAttentionParams::rope)
// need of p's rotation table: rows to read, 1 to 4 position axes, sections covering headDim / 2 frequencies.
inline bool ropeTableValid(const QkNormRopeParams& p, int headDim)
{
    if (p.maxPosition <= 0 || p.numPosAxes < 1 || p.numPosAxes > 4) return false;
    int sectionSum = 0;
    for (int a = 0; a < p.numPosAxes; ++a) sectionSum += p.sections[a];
    return sectionSum == headDim / 2;
}

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
cudaError_t launchQkNormRope(const QkNormRopeParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
