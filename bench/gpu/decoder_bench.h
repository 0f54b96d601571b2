// What the torch-free benches that run the HunyuanOCR decoder's layers (bench_decode_step, bench_prefill)
// share: its shapes, a layer of random float16 weights with its paged cache, and the parameters of the
// layer's own kernels (add + RMSNorm, QK-norm/XD-RoPE with the K/V write, SiLU-mul) over one batch of rows.
// The caller owns the activations; the projections are each bench's own business. Header-only.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <memory>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/qk_norm_rope.cuh"
#include "gpu/kernels/rms_norm.cuh"
#include "gpu/kernels/silu_and_mul.cuh"

namespace lector::bench::decoder {

// docs/hunyuanocr-spec.md: hidden 1024, 16 query / 8 KV heads of 128, MLP 3584, vocab 120818, 24 layers.
constexpr int kHidden = 1024, kQHeads = 16, kKvHeads = 8, kHeadDim = 128, kInter = 3584, kVocab = 120818,
              kLayers = 24, kQkv = (kQHeads + 2 * kKvHeads) * kHeadDim;

struct Layer {
    std::unique_ptr<DeviceBuffer> qkv, o, gateUp, down, inputNorm, postNorm, queryNorm, keyNorm, keys, values;
};

// Random weights whose scales keep the activations finite through 24 layers (the norms reset their
// scale), and a cache of cacheElems elements each for K and V, random (keysRandom) or zero.
inline Layer randomLayer(uint32_t& seed, size_t cacheElems, bool keysRandom)
{
    Layer x;
    x.qkv = halves(size_t(kQkv) * kHidden, seed++, 0.05f);
    x.o = halves(size_t(kHidden) * kQHeads * kHeadDim, seed++, 0.02f);
    x.gateUp = halves(size_t(2) * kInter * kHidden, seed++, 0.05f);
    x.down = halves(size_t(kHidden) * kInter, seed++, 0.02f);
    x.inputNorm = halves(kHidden, seed++, 0.1f, 1.0f);
    x.postNorm = halves(kHidden, seed++, 0.1f, 1.0f);
    x.queryNorm = halves(kHeadDim, seed++, 0.1f, 1.0f);
    x.keyNorm = halves(kHeadDim, seed++, 0.1f, 1.0f);
    x.keys = halves(cacheElems, seed++, keysRandom ? 1.0f : 0.0f);
    x.values = halves(cacheElems, seed++, keysRandom ? 1.0f : 0.0f);
    return x;
}

// residual += pending, out = norm(residual) over rows of kHidden.
inline gpu::RmsNormParams addRmsNormParams(void* out, const void* pending, void* residual, const void* weight, int rows)
{
    gpu::RmsNormParams n;
    n.out = out;
    n.input = pending;
    n.residual = residual;
    n.weight = weight;
    n.outStride = n.inputStride = n.residualStride = kHidden;
    n.numTokens = rows;
    n.hidden = kHidden;
    return n;
}

// QK-norm/XD-RoPE in place on the q and k of a qkv output [rows, kQkv], the K/V write into the layer's
// cache at `slots`; positions [4, rows] int64 into a table of maxPosition rows, sections of 16 each.
inline gpu::QkNormRopeParams ropeParams(void* qkvOut, int rows, const void* positions, const float* cosSin,
                                        int maxPosition, const Layer& w, const int64_t* slots, int64_t numCacheSlots)
{
    __half* qkv = static_cast<__half*>(qkvOut);
    gpu::QkNormRopeParams r;
    r.query = qkv;
    r.key = qkv + kQHeads * kHeadDim;
    r.value = qkv + (kQHeads + kKvHeads) * kHeadDim;
    r.queryTokenStride = r.keyTokenStride = r.valueTokenStride = kQkv;
    r.positions = positions;
    r.positionsAxisStride = rows;
    r.cosSinCache = cosSin;
    r.queryNormWeight = w.queryNorm->ptr;
    r.keyNormWeight = w.keyNorm->ptr;
    r.numTokens = rows;
    r.numQHeads = kQHeads;
    r.numKvHeads = kKvHeads;
    r.headDim = kHeadDim;
    r.maxPosition = maxPosition;
    r.numPosAxes = 4;
    for (int a = 0; a < 4; ++a) r.sections[a] = kHeadDim / 8;
    r.keyCache = w.keys->ptr;
    r.valueCache = w.values->ptr;
    r.slotMapping = slots;
    r.numCacheSlots = numCacheSlots;
    return r;
}

// out[rows, kInter] = silu(gate) * up of a gate/up output [rows, 2 kInter].
inline gpu::SiluAndMulParams siluMulParams(void* out, const void* gateUp, int rows)
{
    gpu::SiluAndMulParams s;
    s.out = out;
    s.input = gateUp;
    s.outStride = kInter;
    s.inputStride = 2 * kInter;
    s.numTokens = rows;
    s.d = kInter;
    return s;
}

}  // namespace lector::bench::decoder
