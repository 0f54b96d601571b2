// A prototype of an 8-bit integer KV cache, for measuring what it buys before the owner decides on it
// (docs/serving.md, "The one lever left"). Not part of the engine: only bench_int8_kv includes it. If the
// cache is approved, these kernels move to gpu/kernels with their references in gpu/ref, and the other
// readers of the cache (the rotation inside decode attention, the short-partition and cluster variants,
// the head-parallel batch-1 kernels, the prefill attention) get the same widening.
//
// Format: K and V as int8 in the float16 cache's layout, [numBlocks, kKvBlockSize, numKvHeads, headDim], and one
// float32 scale per (token, KV head) in [numBlocks, numKvHeads, kKvBlockSize] (a head's 16 scales of a block are
// one 64-byte run, read by the lanes of a warp at once). A row x of headDim values is stored as
// q = clamp(rint(x * (127 / amax)), -127, 127) with scale amax / 127, amax = max |x| (all zeros when amax is 0).
// Why integers and not float8 e4m3 (vLLM's kv_cache_dtype=fp8): with a scale per row, int8 has 7 bits of
// resolution over the whole row where e4m3 has 3 bits of mantissa, and K and V come out about four times
// closer to float16 (bench/gpu/probe_fp8_kv.py measures what that does to the logits).
//
// A second V layout for the tensor-core attention (Cache::valuesByDim): a (block, KV head)'s 16 x 128 values
// dim-major, [numBlocks, numKvHeads, headDim, kKvBlockSize], as offset binary (x + 128 as a byte). A product's
// reduction runs over its operands' contiguous elements; for p * V that is over keys, so a register must hold
// consecutive keys of one dim, which the token-major layout scatters over 16 rows. K keeps the token-major
// layout: q . k reduces over dims.
//
// Reading: the scales do not touch the elements. K's scale multiplies the token's dot product with the query,
// V's the token's softmax weight before it weighs the row; an int8 element becomes a float with two integer
// instructions' worth of work (int8ToFloat4 below), not a conversion instruction (I2F runs at a quarter of
// the FMA rate, which at the copy bandwidth's int8 elements per second would bind the kernel).
#pragma once

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/qk_norm_rope.cuh"
#include "gpu/kernels/qk_norm_rope_warp.cuh"

namespace lector::bench::int8kv {

using gpu::kKvBlockSize;

// Element (t, h, d) of block b lives at ((b * 16 + t) * numKvHeads + h) * headDim + d; its scale at
// (b * numKvHeads + h) * 16 + t.
__host__ __device__ constexpr int64_t scaleIndex(int64_t slot, int numKvHeads, int head)
{
    return ((slot / kKvBlockSize) * numKvHeads + head) * kKvBlockSize + slot % kKvBlockSize;
}

// One layer's int8 cache: what every kernel here writes or reads.
struct Cache {
    int8_t* keys = nullptr;         // [numBlocks, 16, numKvHeads, headDim]
    int8_t* values = nullptr;
    float* keyScales = nullptr;     // [numBlocks, numKvHeads, 16]
    float* valueScales = nullptr;
    int numBlocks = 0;              // slots past numBlocks * 16 are never written; block ids past it are masked
    bool valuesByDim = false;       // V as [numBlocks, numKvHeads, headDim, 16], x + 128 (valueByDimIndex)
};

struct WriteParams {
    const __half* key = nullptr;    // [numTokens, numKvHeads, headDim], keyTokenStride, heads contiguous
    const __half* value = nullptr;  // [numTokens, numKvHeads, headDim], valueTokenStride, heads contiguous
    Cache cache;
    const int64_t* slotMapping = nullptr;  // [numTokens]; < 0 or past the pool: skipped
    int64_t keyTokenStride = 0;     // elements between tokens (0: numKvHeads * headDim, contiguous)
    int64_t valueTokenStride = 0;
    int numTokens = 0;
    int numKvHeads = 0;
};

constexpr int kHeadDim = 128;                  // the decoder's; the lanes below are laid out for it
constexpr int kElemsPerLane = 16;              // one 16-byte load of int8 (two of float16 when writing)
constexpr int kLanesPerToken = kHeadDim / kElemsPerLane;  // 8
constexpr int kTokensPerStep = 32 / kLanesPerToken;       // 4 tokens per warp load
constexpr int kSteps = kKvBlockSize / kTokensPerStep;     // 4 loads per block and lane

// Where V element (slot, head, d) lives under Cache::valuesByDim, and how it is stored there.
__host__ __device__ constexpr int64_t valueByDimIndex(int64_t slot, int numKvHeads, int head, int d)
{
    return (((slot / kKvBlockSize) * numKvHeads + head) * kHeadDim + d) * kKvBlockSize + slot % kKvBlockSize;
}
__host__ __device__ constexpr int8_t valueByDimByte(int8_t x) { return int8_t(uint8_t(x) ^ 0x80u); }

// Four int8 (one 32-bit word) to floats, exactly: x ^ 0x80 is x + 128 as an unsigned byte; placed as the low
// mantissa byte of 2^23 it reads as 2^23 + x + 128.
__device__ __forceinline__ void int8ToFloat4(uint32_t w, float* f)
{
    const uint32_t u = w ^ 0x80808080u;
#pragma unroll
    for (int i = 0; i < 4; ++i) f[i] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540u + i)) - 8388736.0f;
}

// A lane's 16 int8 elements (one 16-byte load) to floats.
__device__ __forceinline__ void int8ToFloat16(const uint4& w, float (&f)[kElemsPerLane])
{
    int8ToFloat4(w.x, f);
    int8ToFloat4(w.y, f + 4);
    int8ToFloat4(w.z, f + 8);
    int8ToFloat4(w.w, f + 12);
}

// The arithmetic every writer shares, so they store the same bytes: the multiplier of a row with max |x| = amax,
// the integer of one value, and the row's scale.
__device__ __forceinline__ float quantInverse(float amax) { return amax > 0.0f ? 127.0f / amax : 0.0f; }
__device__ __forceinline__ int8_t quantValue(float x, float inv)
{
    return static_cast<int8_t>(fminf(fmaxf(rintf(x * inv), -127.0f), 127.0f));
}
__device__ __forceinline__ float quantScale(float amax) { return amax / 127.0f; }

// The 16 elements of one lane's slice: from its 16 float16 values, the row's amax across the kLanesPerToken
// lanes of the head (lane groups of 8 aligned within the warp), then the rounded integers.
__device__ __forceinline__ uint4 quantize16(const float (&x)[kElemsPerLane], float& scaleOut)
{
    float amax = 0.0f;
#pragma unroll
    for (int e = 0; e < kElemsPerLane; ++e) amax = fmaxf(amax, fabsf(x[e]));
#pragma unroll
    for (int o = 1; o < kLanesPerToken; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float inv = quantInverse(amax);
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < kElemsPerLane; ++e) w[e / 4] |= (uint32_t(uint8_t(quantValue(x[e], inv)))) << (8 * (e % 4));
    scaleOut = quantScale(amax);
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// One CTA a token, kLanesPerToken threads a KV head (blockDim = numKvHeads * 8 rounded up to a warp).
__global__ void writeKernel(WriteParams p)
{
    gpu::gridDependencyWait();
    gpu::allowDependentLaunch();
    const int token = blockIdx.x;
    const int64_t slot = p.slotMapping[token];
    if (slot < 0 || slot >= int64_t(p.cache.numBlocks) * kKvBlockSize) return;  // CTA-uniform
    const int head = threadIdx.x / kLanesPerToken, sub = threadIdx.x % kLanesPerToken;
    const bool live = head < p.numKvHeads;  // the spare lanes of the last warp join the shuffles only
    const int64_t within = int64_t(live ? head : 0) * kHeadDim + sub * kElemsPerLane;
    const int64_t dst = (slot * p.numKvHeads + (live ? head : 0)) * kHeadDim + sub * kElemsPerLane;
    for (int which = 0; which < 2; ++which) {
        const int64_t stride = which == 0 ? p.keyTokenStride : p.valueTokenStride;
        const __half* in = (which == 0 ? p.key : p.value) + token * (stride > 0 ? stride : int64_t(p.numKvHeads) * kHeadDim);
        float x[kElemsPerLane];
        const gpu::Vec16<__half> a = gpu::unpack16<__half>(live ? gpu::loadNc16(in + within) : make_uint4(0, 0, 0, 0));
        const gpu::Vec16<__half> b = gpu::unpack16<__half>(live ? gpu::loadNc16(in + within + 8) : make_uint4(0, 0, 0, 0));
#pragma unroll
        for (int e = 0; e < 8; ++e) x[e] = a.v[e], x[8 + e] = b.v[e];
        float scale;
        const uint4 q = quantize16(x, scale);
        if (!live) continue;
        if (which == 1 && p.cache.valuesByDim) {  // 16 dims of one key: bytes 16 apart
            const int64_t first = valueByDimIndex(slot, p.numKvHeads, head, sub * kElemsPerLane);
            const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int e = 0; e < kElemsPerLane; ++e)
                p.cache.values[first + e * kKvBlockSize] = valueByDimByte(int8_t(w[e / 4] >> (8 * (e % 4))));
        } else {
            *reinterpret_cast<uint4*>((which == 0 ? p.cache.keys : p.cache.values) + dst) = q;
        }
        if (sub == 0) (which == 0 ? p.cache.keyScales : p.cache.valueScales)[scaleIndex(slot, p.numKvHeads, head)] = scale;
    }
}

inline cudaError_t launchWrite(const WriteParams& p, cudaStream_t stream)
{
    if (p.numTokens <= 0) return p.numTokens == 0 ? cudaSuccess : cudaErrorInvalidValue;
    const int threads = (p.numKvHeads * kLanesPerToken + 31) / 32 * 32;
    return gpu::launchKernel(writeKernel, p.numTokens, threads, 0, stream, p);
}

// QK-norm + XD-RoPE of a step's new tokens in place (gpu/kernels/qk_norm_rope.cu's kernel and arithmetic, float16,
// head dim 128) with their K and V written into the int8 cache, as the float16 kernel writes them into its
// cache: one warp a (token, head), a key head's warp also quantizing the token's V of that head. rope's own
// cache pointers are ignored; rope.slotMapping, rope.value and rope.valueTokenStride say where and what.
struct RopeWriteParams {
    gpu::QkNormRopeParams rope;
    Cache cache;
};

constexpr int kRopeThreads = 256;
constexpr int kRopeWarps = kRopeThreads / 32;

__global__ void __launch_bounds__(kRopeThreads) ropeWriteKernel(RopeWriteParams w)
{
    constexpr int D = kHeadDim, kHalf = D / 2, kPairs = gpu::detail::kRopePairsPerLane<D>;
    const gpu::QkNormRopeParams& p = w.rope;
    const int64_t item = int64_t(blockIdx.x) * kRopeWarps + (threadIdx.x >> 5);
    const int headsPerToken = p.numQHeads + p.numKvHeads;
    if (item >= int64_t(p.numTokens) * headsPerToken) return;  // warp-uniform
    const int64_t token = item / headsPerToken;
    const int head = static_cast<int>(item % headsPerToken);
    const bool isQuery = head < p.numQHeads;
    const int kvHead = head - p.numQHeads;
    const int lane = threadIdx.x & 31;
    // Step inputs and constants before the wait, as qk_norm_rope.cu.
    const __half* weight = static_cast<const __half*>(isQuery ? p.queryNormWeight : p.keyNormWeight);
    float c[kPairs], sn[kPairs], w1[kPairs], w2[kPairs];
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        const int j = lane + 32 * i;
        c[i] = sn[i] = 0.0f;
        w1[i] = w2[i] = 1.0f;
        if (j >= kHalf) continue;
        const float* cs = p.cosSinCache + gpu::detail::ropePosition(p, gpu::detail::ropeAxisOf(p, j), token) * D;
        c[i] = cs[j];
        sn[i] = cs[kHalf + j];
        if (weight) {
            w1[i] = __half2float(weight[j]);
            w2[i] = __half2float(weight[kHalf + j]);
        }
    }
    int64_t slot = -1;
    if (!isQuery) {
        slot = p.slotMapping[token];
        if (slot >= int64_t(w.cache.numBlocks) * kKvBlockSize) slot = -1;
    }
    gpu::gridDependencyWait();
    gpu::allowDependentLaunch();
    __half* x = isQuery ? static_cast<__half*>(p.query) + token * p.queryTokenStride + int64_t(head) * D
                        : static_cast<__half*>(p.key) + token * p.keyTokenStride + int64_t(kvHead) * D;
    __half lo[kPairs], hi[kPairs];
    gpu::detail::qkNormRopeWarp<__half, D>(x, c, sn, w1, w2, weight != nullptr, p.eps, lo, hi);
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        const int j = lane + 32 * i;
        if (j >= kHalf) continue;
        x[j] = lo[i];
        x[kHalf + j] = hi[i];
        amax = fmaxf(amax, fmaxf(fabsf(__half2float(lo[i])), fabsf(__half2float(hi[i]))));
    }
    if (isQuery) return;  // warp-uniform
    amax = gpu::warpMax(amax);
    const __half* v = static_cast<const __half*>(p.value) + token * p.valueTokenStride + int64_t(kvHead) * D;
    float vx[D / 32], vmax = 0.0f;
#pragma unroll
    for (int k = 0; k < D / 32; ++k) vmax = fmaxf(vmax, fabsf(vx[k] = __half2float(v[lane + 32 * k])));
    vmax = gpu::warpMax(vmax);
    if (slot < 0) return;  // warp-uniform: padding rows
    const int64_t row = (slot * p.numKvHeads + kvHead) * D;
    const float inv = quantInverse(amax), vinv = quantInverse(vmax);
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        const int j = lane + 32 * i;
        if (j >= kHalf) continue;
        w.cache.keys[row + j] = quantValue(__half2float(lo[i]), inv);
        w.cache.keys[row + kHalf + j] = quantValue(__half2float(hi[i]), inv);
    }
#pragma unroll
    for (int k = 0; k < D / 32; ++k) {
        const int8_t x = quantValue(vx[k], vinv);
        if (w.cache.valuesByDim) w.cache.values[valueByDimIndex(slot, p.numKvHeads, kvHead, lane + 32 * k)] = valueByDimByte(x);
        else w.cache.values[row + lane + 32 * k] = x;
    }
    if (lane == 0) {
        w.cache.keyScales[scaleIndex(slot, p.numKvHeads, kvHead)] = quantScale(amax);
        w.cache.valueScales[scaleIndex(slot, p.numKvHeads, kvHead)] = quantScale(vmax);
    }
}

inline cudaError_t launchRopeWrite(const RopeWriteParams& w, cudaStream_t stream)
{
    const gpu::QkNormRopeParams& p = w.rope;
    if (p.dtype != gpu::DType::F16 || p.headDim != kHeadDim || !gpu::ropeTableValid(p, p.headDim) || !p.slotMapping ||
        !p.value || !w.cache.keys || !w.cache.values || !w.cache.keyScales || !w.cache.valueScales)
        return cudaErrorInvalidValue;
    const int64_t items = int64_t(p.numTokens) * (p.numQHeads + p.numKvHeads);
    if (items == 0) return cudaSuccess;
    return gpu::launchKernel(ropeWriteKernel, static_cast<unsigned>(gpu::ceilDiv(items, kRopeWarps)), kRopeThreads, 0,
                             stream, w);
}

struct AttentionParams {
    __half* out = nullptr;            // [numSeqs, numQHeads, headDim], outSeqStride, heads contiguous
    const __half* query = nullptr;    // [numSeqs, numQHeads, headDim], querySeqStride, heads contiguous
    Cache cache;                      // read; under rope also written (the newest tokens' slots)
    const int32_t* blockTable = nullptr;   // [numSeqs, blockTableStride]
    const int32_t* contextLens = nullptr;  // [numSeqs]
    float* workspace = nullptr;       // [numSeqs, numQHeads, rowPartitions] x (headDim + 2) floats when rowPartitions > 1
    int32_t* counters = nullptr;      // [numSeqs * numKvHeads], zero before and after
    int64_t blockTableStride = 0;
    int64_t querySeqStride = 0;       // elements (0: numQHeads * headDim)
    int64_t outSeqStride = 0;
    int numSeqs = 0;
    int numQHeads = 0;
    int numKvHeads = 0;
    int rowPartitions = 1;            // each sequence's blocks in min(rowPartitions, its blocks) equal shares
    float scale = 1.0f;               // softmax scale
    // The logits as integer dot products (no rope): the query rounded to int16 with a scale per row, two elements of
    // K a __dp2a instruction, where the float path spends two instructions widening each element and one FMA per
    // element and query head. Why: the float kernel reads at 58-82 % of the copy bandwidth (H100, call 219) and
    // keeping more bytes in flight did not help (call 220): it issues about twice float16's instructions a byte.
    bool dp2aLogits = false;
    // Both products on the tensor cores (tensorCoreAttentionKernel; cache.valuesByDim, no rope): the logits as int8
    // mma of K with the query's int16 as two bytes, p * V as float16 mma. Why: integer logits still leave V's
    // two widening instructions and G FMAs an element on the SIMT pipes.
    bool tensorCores = false;
    // Under tensorCores, each warp's blocks in flight at once (1 or 2): it loads that many blocks, then consumes them.
    // Why 2: an int8 block is half a float16 block's bytes, so with one a warp keeps half as many in flight as the
    // float16 kernel, which reaches 80-99 % of the copy bandwidth with one block.
    int blocksInFlight = 1;
    // rope.key set: the rotation inside attention, as gpu/kernels/paged_decode_attention.cuh's
    // PagedDecodeAttentionParams::rope: query is raw (and left so), rope.key / rope.value the new tokens' raw K
    // and V; the CTA whose partition ends at the newest token rotates its key, rounds K and V into this cache at
    // rope.slotMapping[seq] (float16, head dim 128) and attends to them from shared memory. Its query, token and
    // head counts and cache pointers are unused.
    gpu::QkNormRopeParams rope;
};

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

inline int64_t workspaceFloats(int numSeqs, int numQHeads, int rowPartitions)
{
    return rowPartitions <= 1 ? 0 : int64_t(numSeqs) * numQHeads * rowPartitions * (kHeadDim + 2);
}

// A CTA's share of its sequence, for both attention kernels: (sequence, KV head, partition) from the grid, the
// sequence's blocks in min(rowPartitions, its blocks) equal shares (`empty` past them: the merge counts only the
// first `parts`), keys to `end`.
struct Share {
    int seq, kvHead, part, numKeys, parts, firstPage, endPage, end;
    const int32_t* table;
    __device__ bool empty() const { return part >= parts; }
};

__device__ __forceinline__ Share shareOf(const AttentionParams& a)
{
    Share s;
    s.seq = blockIdx.x, s.kvHead = blockIdx.y, s.part = blockIdx.z;
    s.numKeys = a.contextLens[s.seq];
    const int n = (s.numKeys + kKvBlockSize - 1) / kKvBlockSize;
    s.parts = min(a.rowPartitions, max(n, 1));
    s.firstPage = s.part * n / s.parts, s.endPage = (s.part + 1) * n / s.parts;
    s.end = min(s.numKeys, s.endPage * kKvBlockSize);
    s.table = a.blockTable + int64_t(s.seq) * a.blockTableStride;
    return s;
}

// Head g's largest logit over the CTA's warps (redMax: each warp's), -inf where no warp saw a key.
template <int G>
__device__ __forceinline__ float ctaMaxOf(const float (&redMax)[kWarps][G], int g)
{
    float x = -INFINITY;
    for (int w = 0; w < kWarps; ++w) x = fmaxf(x, redMax[w][g]);
    return x;
}

// Head g's sum of weights over the CTA's warps (redSum: each warp's, at the CTA's max).
template <int G>
__device__ __forceinline__ float ctaSumOf(const float (&redSum)[kWarps][G], int g)
{
    float x = 0.0f;
    for (int w = 0; w < kWarps; ++w) x += redSum[w][g];
    return x;
}

// The CTA's end, behind a barrier after its warps stored their maxes (redMax), their partial rows and their sums of
// weights (redSum), both already at the CTA's max: the rows added up and written out when the sequence has one
// partition; else stored in the workspace with the CTA's max and sum, and the last CTA of the (sequence, KV head)
// to take its ticket merges the partitions.
template <int G>
__device__ __forceinline__ void finishCta(const AttentionParams& a, const float (&partial)[kWarps][G][kHeadDim],
                                          const float (&redMax)[kWarps][G], const float (&redSum)[kWarps][G], int seq,
                                          int kvHead, int part, int parts)
{
    const int64_t oStride = a.outSeqStride > 0 ? a.outSeqStride : int64_t(a.numQHeads) * kHeadDim;
    __half* out = a.out + seq * oStride + int64_t(kvHead) * G * kHeadDim;
    __shared__ bool lastCta;
    if (parts == 1) {
        for (int i = threadIdx.x; i < G * kHeadDim; i += kThreads) {
            const int g = i / kHeadDim, d = i % kHeadDim;
            float v = 0.0f;
            for (int w = 0; w < kWarps; ++w) v += partial[w][g][d];
            const float sum = ctaSumOf(redSum, g);
            out[i] = __float2half_rn(sum > 0.0f ? v / sum : 0.0f);
        }
        return;
    }
    // Split: this partition's output (at its own max), max and sum into the workspace, then the ticket.
    const int64_t rows = int64_t(a.numSeqs) * a.numQHeads * a.rowPartitions;
    float* wsOut = a.workspace;                 // [seq, qHead, part, D]
    float* wsMax = a.workspace + rows * kHeadDim;
    float* wsSum = wsMax + rows;
    const int64_t first = (int64_t(seq) * a.numQHeads + kvHead * G) * a.rowPartitions;  // + g * rowPartitions + part
    for (int i = threadIdx.x; i < G * kHeadDim; i += kThreads) {
        const int g = i / kHeadDim, d = i % kHeadDim;
        float v = 0.0f;
        for (int w = 0; w < kWarps; ++w) v += partial[w][g][d];
        wsOut[(first + int64_t(g) * a.rowPartitions + part) * kHeadDim + d] = v;
    }
    if (threadIdx.x < G) {
        wsMax[first + int64_t(threadIdx.x) * a.rowPartitions + part] = ctaMaxOf(redMax, threadIdx.x);
        wsSum[first + int64_t(threadIdx.x) * a.rowPartitions + part] = ctaSumOf(redSum, threadIdx.x);
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t* ticket = a.counters + int64_t(seq) * a.numKvHeads + kvHead;
        lastCta = atomicAdd(ticket, 1) == parts - 1;
        if (lastCta) *ticket = 0;  // every CTA of this (sequence, head) has taken its ticket
    }
    __syncthreads();
    if (!lastCta) return;
    __threadfence();
    for (int i = threadIdx.x; i < G * kHeadDim; i += kThreads) {
        const int g = i / kHeadDim, d = i % kHeadDim;
        const int64_t g0 = first + int64_t(g) * a.rowPartitions;
        float mx = -INFINITY;
        for (int p = 0; p < parts; ++p) mx = fmaxf(mx, __ldcg(wsMax + g0 + p));
        const float ref = mx == -INFINITY ? 0.0f : mx;
        float total = 0.0f, v = 0.0f;
        for (int p = 0; p < parts; ++p) {
            const float w = __expf(__ldcg(wsMax + g0 + p) - ref);
            total += __ldcg(wsSum + g0 + p) * w;
            v += __ldcg(wsOut + (g0 + p) * kHeadDim + d) * w;
        }
        out[i] = __float2half_rn(total > 0.0f ? v / total : 0.0f);
    }
}

// One pass with online softmax, as gpu/kernels/paged_attention_simt.cuh's attendOnline: a CTA is (sequence,
// KV head, partition), its 4 warps take the partition's blocks round robin, a lane holds 16 dims of one of the
// 4 tokens of a load. The warp's first block is loaded before the PDL wait (the previous kernel may write only
// the sequence's newest token, which is loaded again after it). Partitions merge through a ticket: the last
// CTA of a (sequence, KV head) combines the others' partial results from the workspace.
template <int G, bool kRope, bool kDp2a = false>
__global__ void __launch_bounds__(kThreads, 4) attentionKernel(AttentionParams a)
{
    static_assert(!(kRope && kDp2a), "the integer logits take the plain query");
    const Share share = shareOf(a);
    if (share.empty()) return;  // CTA-uniform
    const int seq = share.seq, kvHead = share.kvHead, part = share.part, parts = share.parts;
    const int numKeys = share.numKeys, endPage = share.endPage, end = share.end;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int sub = lane % kLanesPerToken, tokInStep = lane / kLanesPerToken;
    const int64_t tokenStride = int64_t(a.numKvHeads) * kHeadDim;
    const int8_t* kHead = a.cache.keys + int64_t(kvHead) * kHeadDim + sub * kElemsPerLane;
    const int8_t* vHead = a.cache.values + int64_t(kvHead) * kHeadDim + sub * kElemsPerLane;

    uint4 kRaw[kSteps], vRaw[kSteps];
    float kSc[kSteps], vSc[kSteps];
    auto load = [&](int32_t block, bool onlyNewest) {
        const int64_t base = int64_t(block) * kKvBlockSize * tokenStride;
        const int64_t sBase = (int64_t(block) * a.numKvHeads + kvHead) * kKvBlockSize;
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
            const int t = s * kTokensPerStep + tokInStep;
            if (onlyNewest && t != (numKeys - 1) % kKvBlockSize) continue;
            kRaw[s] = gpu::loadNc16(kHead + base + t * tokenStride);
            vRaw[s] = gpu::loadNc16(vHead + base + t * tokenStride);
            kSc[s] = __ldg(a.cache.keyScales + sBase + t);
            vSc[s] = __ldg(a.cache.valueScales + sBase + t);
        }
    };
    const int firstPg = share.firstPage + warp;
    const int32_t firstBlock = firstPg < endPage ? share.table[firstPg] : -1;
    const bool firstValid = firstBlock >= 0 && firstBlock < a.cache.numBlocks;
    if (firstValid) load(firstBlock, false);
    const int64_t qStride = a.querySeqStride > 0 ? a.querySeqStride : int64_t(a.numQHeads) * kHeadDim;
    // kRope: [cos | sin | query-norm weight | key-norm weight] per dim at this row's positions, staged before the
    // wait (step inputs and weights); the rotated queries (scaled) and the new token's int8 K and V after it.
    [[maybe_unused]] __shared__ float ropeTab[kRope ? 4 * kHeadDim : 1];
    [[maybe_unused]] __shared__ float qRot[kRope ? G * kHeadDim : 1];
    [[maybe_unused]] __shared__ uint4 newKv[kRope ? 2 * kLanesPerToken : 1];  // K's 128 bytes, then V's
    [[maybe_unused]] __shared__ float newScale[2];
    [[maybe_unused]] int64_t newSlot = -1;
    if constexpr (kRope) {
        const gpu::QkNormRopeParams& rp = a.rope;
        for (int d = threadIdx.x; d < kHeadDim; d += kThreads) {
            const int j = d % (kHeadDim / 2);
            const float* cs = rp.cosSinCache + gpu::detail::ropePosition(rp, gpu::detail::ropeAxisOf(rp, j), seq) * kHeadDim;
            ropeTab[d] = cs[j];
            ropeTab[kHeadDim + d] = cs[kHeadDim / 2 + j];
            ropeTab[2 * kHeadDim + d] = rp.queryNormWeight ? __half2float(static_cast<const __half*>(rp.queryNormWeight)[d]) : 1.0f;
            ropeTab[3 * kHeadDim + d] = rp.keyNormWeight ? __half2float(static_cast<const __half*>(rp.keyNormWeight)[d]) : 1.0f;
        }
        newSlot = rp.slotMapping[seq];
    }
    gpu::gridDependencyWait();
    gpu::allowDependentLaunch();
    // The newest token's slot, if it is in this warp's first block, is the one the previous kernel wrote (under
    // kRope this launch computes it instead).
    if (!kRope && firstValid && firstPg == (numKeys - 1) / kKvBlockSize) load(firstBlock, true);

    float q[G][kElemsPerLane];
    [[maybe_unused]] const bool holdsNewest = kRope && numKeys > 0 && end == numKeys;  // CTA-uniform
    if constexpr (kRope) {
        // A warp per query head and, where this partition ends at the newest token, one for its key and value:
        // qk_norm_rope.cu's arithmetic (qkNormRopeWarp), the key and value then rounded as ropeWriteKernel does.
        __syncthreads();  // ropeTab
        const gpu::QkNormRopeParams& rp = a.rope;
        constexpr int kPairs = gpu::detail::kRopePairsPerLane<kHeadDim>, kHalf = kHeadDim / 2;
        for (int h = warp; h < G + (holdsNewest ? 1 : 0); h += kWarps) {  // warp-uniform
            const bool isKey = h == G;
            const __half* x = isKey ? static_cast<const __half*>(rp.key) + seq * rp.keyTokenStride + int64_t(kvHead) * kHeadDim
                                    : a.query + seq * qStride + int64_t(kvHead * G + h) * kHeadDim;
            const float* wt = ropeTab + (isKey ? 3 : 2) * kHeadDim;
            float c[kPairs], sn[kPairs], w1[kPairs], w2[kPairs];
#pragma unroll
            for (int i = 0; i < kPairs; ++i) {
                const int j = min(lane + 32 * i, kHalf - 1);
                c[i] = ropeTab[j];
                sn[i] = ropeTab[kHeadDim + j];
                w1[i] = wt[j];
                w2[i] = wt[kHalf + j];
            }
            __half lo[kPairs], hi[kPairs];
            gpu::detail::qkNormRopeWarp<__half, kHeadDim>(
                x, c, sn, w1, w2, (isKey ? rp.keyNormWeight : rp.queryNormWeight) != nullptr, rp.eps, lo, hi);
            if (!isKey) {
#pragma unroll
                for (int i = 0; i < kPairs; ++i) {
                    const int j = lane + 32 * i;
                    if (j >= kHalf) continue;
                    qRot[h * kHeadDim + j] = __half2float(lo[i]) * a.scale;
                    qRot[h * kHeadDim + kHalf + j] = __half2float(hi[i]) * a.scale;
                }
                continue;
            }
            float amax = 0.0f;
#pragma unroll
            for (int i = 0; i < kPairs; ++i)
                if (lane + 32 * i < kHalf) amax = fmaxf(amax, fmaxf(fabsf(__half2float(lo[i])), fabsf(__half2float(hi[i]))));
            amax = gpu::warpMax(amax);
            const __half* v = static_cast<const __half*>(rp.value) + seq * rp.valueTokenStride + int64_t(kvHead) * kHeadDim;
            float vx[kHeadDim / 32], vmax = 0.0f;
#pragma unroll
            for (int k = 0; k < kHeadDim / 32; ++k) vmax = fmaxf(vmax, fabsf(vx[k] = __half2float(v[lane + 32 * k])));
            vmax = gpu::warpMax(vmax);
            int8_t* k8 = reinterpret_cast<int8_t*>(newKv);
            int8_t* v8 = k8 + kHeadDim;
            const float inv = quantInverse(amax), vinv = quantInverse(vmax);
#pragma unroll
            for (int i = 0; i < kPairs; ++i) {
                const int j = lane + 32 * i;
                if (j >= kHalf) continue;
                k8[j] = quantValue(__half2float(lo[i]), inv);
                k8[kHalf + j] = quantValue(__half2float(hi[i]), inv);
            }
#pragma unroll
            for (int k = 0; k < kHeadDim / 32; ++k) v8[lane + 32 * k] = quantValue(vx[k], vinv);
            if (lane == 0) newScale[0] = quantScale(amax), newScale[1] = quantScale(vmax);
        }
        __syncthreads();
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
            for (int e = 0; e < kElemsPerLane; ++e) q[g][e] = qRot[g * kHeadDim + sub * kElemsPerLane + e];
        if (holdsNewest && warp == 0 && lane < kLanesPerToken && newSlot >= 0 && newSlot < int64_t(a.cache.numBlocks) * kKvBlockSize) {
            const int64_t cell = (newSlot * a.numKvHeads + kvHead) * kHeadDim + sub * kElemsPerLane;
            *reinterpret_cast<uint4*>(a.cache.keys + cell) = newKv[sub];
            *reinterpret_cast<uint4*>(a.cache.values + cell) = newKv[kLanesPerToken + sub];
            if (lane == 0) {
                a.cache.keyScales[scaleIndex(newSlot, a.numKvHeads, kvHead)] = newScale[0];
                a.cache.valueScales[scaleIndex(newSlot, a.numKvHeads, kvHead)] = newScale[1];
            }
        }
    } else {
        const __half* qRow = a.query + seq * qStride + int64_t(kvHead) * G * kHeadDim + sub * kElemsPerLane;
#pragma unroll
        for (int g = 0; g < G; ++g) {
            const gpu::Vec16<__half> lo = gpu::unpack16<__half>(gpu::loadNc16(qRow + g * kHeadDim));
            const gpu::Vec16<__half> hi = gpu::unpack16<__half>(gpu::loadNc16(qRow + g * kHeadDim + 8));
#pragma unroll
            for (int e = 0; e < 8; ++e) q[g][e] = lo.v[e] * a.scale, q[g][8 + e] = hi.v[e] * a.scale;
        }
    }
    // kDp2a: each query row as int16 pairs, q ~ qScale * qi with qi = rint(q * 32767 / amax) over the row's 128 dims
    // (its 8 lanes); |qi . k| <= 128 * 32767 * 127 < 2^31, so the integer sums are exact.
    [[maybe_unused]] int32_t qi[G][kElemsPerLane / 2];
    [[maybe_unused]] float qScale[G];
    if constexpr (kDp2a) {
#pragma unroll
        for (int g = 0; g < G; ++g) {
            float amax = 0.0f;
#pragma unroll
            for (int e = 0; e < kElemsPerLane; ++e) amax = fmaxf(amax, fabsf(q[g][e]));
#pragma unroll
            for (int o = 1; o < kLanesPerToken; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
            const float inv = amax > 0.0f ? 32767.0f / amax : 0.0f;
            qScale[g] = amax / 32767.0f;
#pragma unroll
            for (int j = 0; j < kElemsPerLane / 2; ++j) {
                const int lo = __float2int_rn(q[g][2 * j] * inv), hi = __float2int_rn(q[g][2 * j + 1] * inv);
                qi[g][j] = int32_t((uint32_t(lo) & 0xffffu) | (uint32_t(hi) << 16));
            }
        }
    }
    // kRope: the newest token's K and V (and scales) in place of what a block's loads read from its slot, which
    // this launch writes but never reads back.
    [[maybe_unused]] const int newestPage = (numKeys - 1) / kKvBlockSize;
    auto substituteNewest = [&](int page) {
        if (!holdsNewest || page != newestPage) return;  // warp-uniform
        const int t = (numKeys - 1) % kKvBlockSize;
        if (tokInStep != t % kTokensPerStep) return;
#pragma unroll
        for (int s = 0; s < kSteps; ++s)
            if (s == t / kTokensPerStep) {
                kRaw[s] = newKv[sub];
                vRaw[s] = newKv[kLanesPerToken + sub];
                kSc[s] = newScale[0];
                vSc[s] = newScale[1];
            }
    };
    if constexpr (kRope)
        if (firstValid) substituteNewest(firstPg);

    float m[G], l[G], acc[G][kElemsPerLane];
#pragma unroll
    for (int g = 0; g < G; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < kElemsPerLane; ++e) acc[g][e] = 0.0f;
    }
    auto consume = [&](int page) {
        float logit[kSteps][G], blockMax[G];
#pragma unroll
        for (int g = 0; g < G; ++g) blockMax[g] = -INFINITY;
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
            const bool in = page * kKvBlockSize + s * kTokensPerStep + tokInStep < end;
            if constexpr (kDp2a) {
                const int32_t w[4] = {int32_t(kRaw[s].x), int32_t(kRaw[s].y), int32_t(kRaw[s].z), int32_t(kRaw[s].w)};
#pragma unroll
                for (int g = 0; g < G; ++g) {
                    int dot = 0;
#pragma unroll
                    for (int i = 0; i < 4; ++i) {  // elements 4i, 4i+1 (bytes 0, 1) and 4i+2, 4i+3 (bytes 2, 3)
                        dot = __dp2a_lo(qi[g][2 * i], w[i], dot);
                        dot = __dp2a_hi(qi[g][2 * i + 1], w[i], dot);
                    }
#pragma unroll
                    for (int o = 1; o < kLanesPerToken; o <<= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
                    logit[s][g] = in ? float(dot) * (qScale[g] * kSc[s]) : -INFINITY;
                    blockMax[g] = fmaxf(blockMax[g], logit[s][g]);
                }
                continue;
            }
            float k[kElemsPerLane];
            int8ToFloat16(kRaw[s], k);
#pragma unroll
            for (int g = 0; g < G; ++g) {
                float dot = 0.0f;
#pragma unroll
                for (int e = 0; e < kElemsPerLane; ++e) dot = fmaf(q[g][e], k[e], dot);
#pragma unroll
                for (int o = 1; o < kLanesPerToken; o <<= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
                logit[s][g] = in ? dot * kSc[s] : -INFINITY;
                blockMax[g] = fmaxf(blockMax[g], logit[s][g]);
            }
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
#pragma unroll
            for (int o = kLanesPerToken; o < 32; o <<= 1)
                blockMax[g] = fmaxf(blockMax[g], __shfl_xor_sync(0xffffffffu, blockMax[g], o));
            const float mNew = fmaxf(m[g], blockMax[g]);
            const float ref = mNew == -INFINITY ? 0.0f : mNew;
            const float alpha = __expf(m[g] - ref);
            l[g] *= alpha;
#pragma unroll
            for (int e = 0; e < kElemsPerLane; ++e) acc[g][e] *= alpha;
            m[g] = mNew;
#pragma unroll
            for (int s = 0; s < kSteps; ++s) logit[s][g] = __expf(logit[s][g] - ref);
        }
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
            if (page * kKvBlockSize + s * kTokensPerStep + tokInStep >= end) continue;  // V may be NaN there
            float v[kElemsPerLane];
            int8ToFloat16(vRaw[s], v);
#pragma unroll
            for (int g = 0; g < G; ++g) {
                l[g] += logit[s][g];
                const float w = logit[s][g] * vSc[s];
#pragma unroll
                for (int e = 0; e < kElemsPerLane; ++e) acc[g][e] = fmaf(w, v[e], acc[g][e]);
            }
        }
    };
    if (firstValid) consume(firstPg);
    for (int pg = firstPg + kWarps; pg < endPage; pg += kWarps) {
        const int32_t block = share.table[pg];
        if (block < 0 || block >= a.cache.numBlocks) continue;  // warp-uniform: masked keys weigh nothing
        load(block, false);
        if constexpr (kRope) substituteNewest(pg);
        consume(pg);
    }
#pragma unroll
    for (int o = kLanesPerToken; o < 32; o <<= 1)
#pragma unroll
        for (int g = 0; g < G; ++g) {
            l[g] += __shfl_xor_sync(0xffffffffu, l[g], o);
#pragma unroll
            for (int e = 0; e < kElemsPerLane; ++e) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
        }

    __shared__ float partial[kWarps][G][kHeadDim];
    __shared__ float redMax[kWarps][G], redSum[kWarps][G];
    if (lane == 0)
#pragma unroll
        for (int g = 0; g < G; ++g) redMax[warp][g] = m[g];
    __syncthreads();
#pragma unroll
    for (int g = 0; g < G; ++g) {
        const float mx = ctaMaxOf(redMax, g), ref = mx == -INFINITY ? 0.0f : mx;
        const float f = __expf(m[g] - ref);  // 0 for a warp that saw no key
        if (lane < kLanesPerToken)
#pragma unroll
            for (int e = 0; e < kElemsPerLane; ++e) partial[warp][g][sub * kElemsPerLane + e] = acc[g][e] * f;
        if (lane == 0) redSum[warp][g] = l[g] * f;
    }
    __syncthreads();
    finishCta<G>(a, partial, redMax, redSum, seq, kvHead, part, parts);
}

// c += a * b on the int8 tensor cores (mma.sync m16n8k32, int32 accumulators; exact): a the 16 x 32 row-major
// operand, signed or (kUnsignedA) unsigned bytes, lane g = lane / 4, t = lane % 4 holding a0 = row g, k 4t .. 4t + 3,
// a1 = row g + 8, a2 and a3 the same at k + 16; b the 32 x 8 column-major one, signed, b0 = column g, k 4t .. 4t + 3,
// b1 at k + 16; c rows g and g + 8, columns 2t and 2t + 1.
template <bool kUnsignedA>
__device__ __forceinline__ void mmaM16N8K32(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                            uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (kUnsignedA)
        asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
            : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    (void)c, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
    __trap();
#endif
}

// Both products on the tensor cores, over a cache with valuesByDim (AttentionParams::tensorCores). A CTA is (sequence,
// KV head, partition) and its 4 warps take the partition's blocks round robin with online softmax, as in
// attentionKernel; a warp's block of 16 keys, lane (g, t) = (lane / 4, lane % 4):
//  - Logits: mma m16n8k32 with the KV head's G query heads as the 16 rows (zero past G) and the keys as two tiles of
//    8 columns. Lane (g, t) loads keys 4 (g / 2) + g % 2 and that + 2, dims 32t .. 32t + 31; with the columns' keys
//    so permuted, its results are head g's logits of keys 4t .. 4t + 3. The query is rounded to int16 with a scale
//    per head and split into a signed high and an unsigned low byte: 256 hi + lo of the two products is the exact
//    integer dot product (as dp2aLogits's), summed in one accumulator: the high products, times 256, then the low.
//  - p * V: mma m16n8k16 in float16 with dims as the 16 rows (8 tiles), keys as k and heads as the 8 columns. Lane
//    (g, t) loads word t (keys 4t .. 4t + 3) of dim rows g + 8r: a stored byte x + 128 under the exponent byte 0x64
//    reads as the float16 1152 + x, so a word is two fragment registers after two byte permutes. Its weights are the
//    lane's own logits' (head g, keys 4t .. 4t + 3) as float16 p * vScale / sigma, sigma the largest V scale the
//    warp has seen (the weights stay in [0, 1]; sigma's growth rescales like the max's). The lane also sums its
//    weights as rounded, so 1152 times that sum comes off exactly at the end.
// kRound blocks (AttentionParams::blocksInFlight) are loaded, then consumed: a warp takes pages p, p + 4, ... in
// rounds of kRound; a second block's registers cost the fourth CTA an SM.
template <int G, int kRound>
__global__ void __launch_bounds__(kThreads, kRound == 1 ? 4 : 3) tensorCoreAttentionKernel(AttentionParams a)
{
    static_assert(G <= 8, "a KV head's query heads are rows of one product");
    static_assert(kRound == 1 || kRound == 2, "one or two blocks in flight");
    const Share share = shareOf(a);
    if (share.empty()) return;  // CTA-uniform
    const int seq = share.seq, kvHead = share.kvHead, part = share.part, parts = share.parts;
    const int numKeys = share.numKeys, endPage = share.endPage, end = share.end;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g8 = lane >> 2, t4 = lane & 3;
    const int64_t tokenStride = int64_t(a.numKvHeads) * kHeadDim;
    const int64_t blockBytes = tokenStride * kKvBlockSize;  // of K and of V
    const int8_t* kLane = a.cache.keys + int64_t(4 * (g8 >> 1) + (g8 & 1)) * tokenStride + int64_t(kvHead) * kHeadDim + 32 * t4;
    const int8_t* vLane = a.cache.values + int64_t(kvHead) * kHeadDim * kKvBlockSize + g8 * kKvBlockSize + 4 * t4;

    // Block i of a round: the lane's two keys (dims 32t .. 32t + 15 and 32t + 16 .. 32t + 31 of each), dim rows
    // g + 8r of V (keys 4t .. 4t + 3), the scales of keys 4t .. 4t + 3.
    uint4 kRaw[kRound][4];
    uint32_t vRaw[kRound][16];
    float4 kSc[kRound], vSc[kRound];
    auto load = [&](int i, int32_t block) {
        const int8_t* k = kLane + int64_t(block) * blockBytes;
        kRaw[i][0] = gpu::loadNc16(k);
        kRaw[i][1] = gpu::loadNc16(k + 16);
        kRaw[i][2] = gpu::loadNc16(k + 2 * tokenStride);
        kRaw[i][3] = gpu::loadNc16(k + 2 * tokenStride + 16);
        const int8_t* v = vLane + int64_t(block) * blockBytes;
#pragma unroll
        for (int r = 0; r < 16; ++r) vRaw[i][r] = __ldg(reinterpret_cast<const unsigned int*>(v + r * 8 * kKvBlockSize));
        const int64_t sc = (int64_t(block) * a.numKvHeads + kvHead) * kKvBlockSize + 4 * t4;
        kSc[i] = __ldg(reinterpret_cast<const float4*>(a.cache.keyScales + sc));
        vSc[i] = __ldg(reinterpret_cast<const float4*>(a.cache.valueScales + sc));
    };
    // Round blocks: page first + i * kWarps's, -1 past the share or where the table holds no block of the pool
    // (warp-uniform: masked keys weigh nothing).
    int32_t blocks[kRound];
    auto loadRound = [&](int first) {
#pragma unroll
        for (int i = 0; i < kRound; ++i) {
            const int pg = first + i * kWarps;
            blocks[i] = pg < endPage ? share.table[pg] : -1;
            if (blocks[i] >= a.cache.numBlocks) blocks[i] = -1;
            if (blocks[i] >= 0) load(i, blocks[i]);
        }
    };
    const int firstPg = share.firstPage + warp;
    loadRound(firstPg);
    gpu::gridDependencyWait();
    gpu::allowDependentLaunch();
    // The newest token's slot is the previous kernel's; its V bytes are in every dim row, so the whole block again.
#pragma unroll
    for (int i = 0; i < kRound; ++i)
        if (blocks[i] >= 0 && firstPg + i * kWarps == (numKeys - 1) / kKvBlockSize) load(i, blocks[i]);

    // Query head g (zero past G), dims 32t .. 32t + 31, as int16 qScale * (256 hi + lo): word i, dims 32t + 4i .. + 3.
    uint32_t qHi[8], qLo[8];
    float qScale;
    {
        const int64_t qStride = a.querySeqStride > 0 ? a.querySeqStride : int64_t(a.numQHeads) * kHeadDim;
        const __half* qRow = a.query + seq * qStride + int64_t(kvHead * G + min(g8, G - 1)) * kHeadDim + 32 * t4;
        float q[32], amax = 0.0f;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const gpu::Vec16<__half> h = gpu::unpack16<__half>(gpu::loadNc16(qRow + 8 * c));
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                q[8 * c + e] = g8 < G ? h.v[e] * a.scale : 0.0f;
                amax = fmaxf(amax, fabsf(q[8 * c + e]));
            }
        }
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
        const float inv = amax > 0.0f ? 32767.0f / amax : 0.0f;
        qScale = amax / 32767.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            uint32_t hi = 0, lo = 0;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int x = __float2int_rn(q[4 * i + j] * inv);
                hi |= (uint32_t(x >> 8) & 0xffu) << (8 * j);
                lo |= (uint32_t(x) & 0xffu) << (8 * j);
            }
            qHi[i] = hi;
            qLo[i] = lo;
        }
    }

    // Head g's running max, sum and sum of rounded weights (over this lane's keys); the largest V scale seen. Tile j
    // of the accumulators: dims 16j + g and 16j + g + 8 of heads 2t and 2t + 1, of the weighted 1152 + x.
    float m = -INFINITY, l = 0.0f, wsum = 0.0f, sigma = 0.0f;
    float acc[kHeadDim / 16][4];
#pragma unroll
    for (int j = 0; j < kHeadDim / 16; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[j][c] = 0.0f;
    constexpr uint32_t kExponent = 0x64646464u;
    auto consume = [&](int i, int page) {
        int dot[2][4] = {};
        const uint4* kr = kRaw[i];
        const uint32_t kw[2][8] = {{kr[0].x, kr[0].y, kr[0].z, kr[0].w, kr[1].x, kr[1].y, kr[1].z, kr[1].w},
                                   {kr[2].x, kr[2].y, kr[2].z, kr[2].w, kr[3].x, kr[3].y, kr[3].z, kr[3].w}};
#pragma unroll
        for (int tile = 0; tile < 2; ++tile) {
#pragma unroll
            for (int c = 0; c < 4; ++c)  // dims 32t + 8c .. + 7 of every lane's slice
                mmaM16N8K32<false>(dot[tile], qHi[2 * c], 0u, qHi[2 * c + 1], 0u, kw[tile][2 * c], kw[tile][2 * c + 1]);
#pragma unroll
            for (int i = 0; i < 4; ++i) dot[tile][i] *= 256;
#pragma unroll
            for (int c = 0; c < 4; ++c)
                mmaM16N8K32<true>(dot[tile], qLo[2 * c], 0u, qLo[2 * c + 1], 0u, kw[tile][2 * c], kw[tile][2 * c + 1]);
        }
        const int key0 = page * kKvBlockSize + 4 * t4;
        const float ks[4] = {kSc[i].x, kSc[i].y, kSc[i].z, kSc[i].w}, vsIn[4] = {vSc[i].x, vSc[i].y, vSc[i].z, vSc[i].w};
        float logit[4], vs[4], blockMax = -INFINITY, blockVs = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const bool in = key0 + e < end;
            logit[e] = in ? float(dot[e >> 1][e & 1]) * (qScale * ks[e]) : -INFINITY;
            vs[e] = in ? vsIn[e] : 0.0f;  // past the context any scale may be there (its bytes are harmless integers)
            blockMax = fmaxf(blockMax, logit[e]);
            blockVs = fmaxf(blockVs, vs[e]);
        }
#pragma unroll
        for (int o = 1; o < 4; o <<= 1) {
            blockMax = fmaxf(blockMax, __shfl_xor_sync(0xffffffffu, blockMax, o));
            blockVs = fmaxf(blockVs, __shfl_xor_sync(0xffffffffu, blockVs, o));
        }
        const float mNew = fmaxf(m, blockMax), ref = mNew == -INFINITY ? 0.0f : mNew;
        const float alpha = __expf(m - ref);
        m = mNew;
        const float sNew = fmaxf(sigma, blockVs), inv = sNew > 0.0f ? 1.0f / sNew : 0.0f;
        const float rho = sNew > 0.0f ? sigma * inv : 1.0f;
        sigma = sNew;
        float w[4];
        l *= alpha;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float p = __expf(logit[e] - ref);
            l += p;
            w[e] = p * vs[e] * inv;
        }
        const uint32_t b0 = gpu::packPair<__half>(w[0], w[1]), b1 = gpu::packPair<__half>(w[2], w[3]);
        {
            const float2 r0 = __half22float2(*reinterpret_cast<const __half2*>(&b0));
            const float2 r1 = __half22float2(*reinterpret_cast<const __half2*>(&b1));
            wsum = wsum * (alpha * rho) + ((r0.x + r0.y) + (r1.x + r1.y));
        }
        // Heads 2t and 2t + 1 of the accumulators take their rescaling from lanes 8t and 8t + 4.
        const float f0 = __shfl_sync(0xffffffffu, alpha, 8 * t4) * rho, f1 = __shfl_sync(0xffffffffu, alpha, 8 * t4 + 4) * rho;
#pragma unroll
        for (int j = 0; j < kHeadDim / 16; ++j) {
            acc[j][0] *= f0, acc[j][1] *= f1, acc[j][2] *= f0, acc[j][3] *= f1;
            const uint32_t r0 = vRaw[i][2 * j], r1 = vRaw[i][2 * j + 1];  // dims 16j + g, 16j + g + 8
            gpu::mmaM16N8K16<__half>(acc[j], __byte_perm(r0, kExponent, 0x4140), __byte_perm(r1, kExponent, 0x4140),
                                     __byte_perm(r0, kExponent, 0x4342), __byte_perm(r1, kExponent, 0x4342), b0, b1);
        }
    };
    auto consumeRound = [&](int first) {
#pragma unroll
        for (int i = 0; i < kRound; ++i)
            if (blocks[i] >= 0) consume(i, first + i * kWarps);
    };
    consumeRound(firstPg);
    for (int first = firstPg + kRound * kWarps; first < endPage; first += kRound * kWarps) {
        loadRound(first);
        consumeRound(first);
    }
#pragma unroll
    for (int o = 1; o < 4; o <<= 1) {
        l += __shfl_xor_sync(0xffffffffu, l, o);
        wsum += __shfl_xor_sync(0xffffffffu, wsum, o);
    }
    const float offsets[2] = {1152.0f * __shfl_sync(0xffffffffu, wsum, 8 * t4), 1152.0f * __shfl_sync(0xffffffffu, wsum, 8 * t4 + 4)};

    __shared__ float partial[kWarps][G][kHeadDim];
    __shared__ float redMax[kWarps][G], redSum[kWarps][G];
    if (t4 == 0 && g8 < G) redMax[warp][g8] = m;
    __syncthreads();
    auto refOf = [&](int g) {  // the reference of exp(): the CTA's max, 0 where no warp saw a key
        const float x = ctaMaxOf(redMax, g);
        return x == -INFINITY ? 0.0f : x;
    };
    // This warp's rows at the CTA's max, with the offset's 1152 x (sum of weights) off and sigma back on.
#pragma unroll
    for (int c = 0; c < 2; ++c) {
        const int h = 2 * t4 + c;
        if (h >= G) continue;
        const float f = __expf(redMax[warp][h] - refOf(h)) * sigma;  // 0 for a warp that saw no key
#pragma unroll
        for (int j = 0; j < kHeadDim / 16; ++j) {
            partial[warp][h][16 * j + g8] = (acc[j][c] - offsets[c]) * f;
            partial[warp][h][16 * j + g8 + 8] = (acc[j][2 + c] - offsets[c]) * f;
        }
    }
    if (t4 == 0 && g8 < G) redSum[warp][g8] = l * __expf(m - refOf(g8));
    __syncthreads();
    finishCta<G>(a, partial, redMax, redSum, seq, kvHead, part, parts);
}

inline cudaError_t launchAttention(const AttentionParams& a, cudaStream_t stream)
{
    if (a.numSeqs <= 0 || a.numKvHeads <= 0 || a.numQHeads % a.numKvHeads || a.rowPartitions < 1) return cudaErrorInvalidValue;
    if (a.rowPartitions > 1 && (!a.workspace || !a.counters)) return cudaErrorInvalidValue;
    const dim3 grid(a.numSeqs, a.numKvHeads, a.rowPartitions);
    const bool rope = a.rope.key != nullptr;
    if (rope && (a.rope.dtype != gpu::DType::F16 || !gpu::ropeTableValid(a.rope, kHeadDim) || !a.rope.slotMapping ||
                 !a.rope.value || a.dp2aLogits))
        return cudaErrorInvalidValue;
    // The tensor-core kernel reads V by dim and only it does; it takes the plain query.
    if (a.tensorCores != a.cache.valuesByDim || (a.tensorCores && (rope || a.dp2aLogits))) return cudaErrorInvalidValue;
    if (a.blocksInFlight != 1 && (a.blocksInFlight != 2 || !a.tensorCores)) return cudaErrorInvalidValue;
    return gpu::dispatchGroupSize(a.numQHeads / a.numKvHeads, [&]<int G>() {
        if (a.tensorCores)
            return a.blocksInFlight == 2 ? gpu::launchKernel(tensorCoreAttentionKernel<G, 2>, grid, kThreads, 0, stream, a)
                                         : gpu::launchKernel(tensorCoreAttentionKernel<G, 1>, grid, kThreads, 0, stream, a);
        if (a.dp2aLogits) return gpu::launchKernel(attentionKernel<G, false, true>, grid, kThreads, 0, stream, a);
        return rope ? gpu::launchKernel(attentionKernel<G, true>, grid, kThreads, 0, stream, a)
                    : gpu::launchKernel(attentionKernel<G, false>, grid, kThreads, 0, stream, a);
    });
}

}  // namespace lector::bench::int8kv
