// Shared helpers of the kernel tests (tests/kernels/tst_*.cpp): seeded random tensors, dtype mapping,
// the CUDA skip, the paged-KV fixture, and the pass criteria of docs/style.md §6.6: NMSE against the
// float32 reference within a per-dtype bound, and max error at most 2x that of a naive libtorch
// version in the same precision (FlashAttention's rule), both measured against the reference.
// Test-only; single-threaded.
#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpu/kernels/types.h"
#include "tests/support/lector_test.h"

namespace lector::test::kernels {

// --- environment ---

// Skips the calling case unless the tests were built with LECTOR_CUDA and a CUDA device is present.
inline void requireCuda()
{
#ifndef LECTOR_HAVE_CUDA
    LECTOR_SKIP("built without LECTOR_CUDA");
#else
    if (!at::hasCUDA()) LECTOR_SKIP("no CUDA device");
#endif
}

inline const std::vector<at::ScalarType>& floatTypes()
{
    static const std::vector<at::ScalarType> types{at::kFloat, at::kHalf, at::kBFloat16};
    return types;
}

inline gpu::DType toDType(at::ScalarType t)
{
    return t == at::kHalf ? gpu::DType::F16 : t == at::kBFloat16 ? gpu::DType::BF16 : gpu::DType::F32;
}

inline std::string typeName(at::ScalarType t) { return gpu::dtypeName(toDType(t)); }

// --- random data ---

inline at::Generator generator(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

// HunyuanOCR's rotation table [maxPosition, headDim] float32: cos | sin of pos * base^(-2j/headDim),
// base = 10000 * 1000^(headDim / (headDim - 2)) (XD-RoPE's NTK alpha), computed in float64.
inline at::Tensor ropeCosSinCache(int maxPosition, int headDim)
{
    const double base = 10000.0 * std::pow(1000.0, double(headDim) / (headDim - 2));
    at::Tensor cache = at::empty({maxPosition, headDim}, at::kDouble);
    auto c = cache.accessor<double, 2>();
    for (int pos = 0; pos < maxPosition; ++pos) {
        for (int j = 0; j < headDim / 2; ++j) {
            const double angle = pos * std::pow(base, -2.0 * j / headDim);
            c[pos][j] = std::cos(angle);
            c[pos][headDim / 2 + j] = std::sin(angle);
        }
    }
    return cache.to(at::kFloat);
}

// Standard normal values (drawn in float32 on the CPU, then cast), scaled.
inline at::Tensor randn(at::IntArrayRef sizes, uint64_t seed, at::ScalarType type = at::kFloat, double scale = 1.0)
{
    return (at::randn(sizes, generator(seed), at::kFloat) * scale).to(type);
}

// A permutation of 0..n-1.
inline std::vector<int> permutation(int n, uint64_t seed, bool shuffle = true)
{
    std::vector<int> v(n);
    std::iota(v.begin(), v.end(), 0);
    if (shuffle) std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
    return v;
}

// --- pass criteria ---

struct ErrorStats {
    double nmse = 0.0;     // sum((out - ref)^2) / sum(ref^2); NaN if out has a NaN
    double maxErr = 0.0;
    int64_t worst = -1;    // flat index of the max error
    double outAtWorst = 0.0, refAtWorst = 0.0;
};

inline ErrorStats errorStats(const at::Tensor& out, const at::Tensor& ref)
{
    const at::Tensor o = out.detach().to(at::kCPU).to(at::kDouble).contiguous().view({-1});
    const at::Tensor r = ref.detach().to(at::kCPU).to(at::kDouble).contiguous().view({-1});
    LECTOR_CHECK_EQ(o.numel(), r.numel());
    ErrorStats s;
    if (o.numel() == 0) return s;
    const at::Tensor diff = (o - r).abs();
    const double refEnergy = r.pow(2).sum().item<double>();
    s.nmse = diff.pow(2).sum().item<double>() / (refEnergy > 0 ? refEnergy : 1.0);
    if (at::isnan(o).any().item<bool>()) s.nmse = std::numeric_limits<double>::quiet_NaN();
    s.worst = diff.argmax().item<int64_t>();
    s.maxErr = diff[s.worst].item<double>();
    s.outAtWorst = o[s.worst].item<double>();
    s.refAtWorst = r[s.worst].item<double>();
    return s;
}

// Default NMSE bounds against a float32 reference: rounding of the output alone gives about 1e-7
// (fp16) and 5e-6 (bf16); accumulation order moves float32 by far less than 1e-9.
inline double nmseBound(at::ScalarType t)
{
    return t == at::kHalf ? 1e-5 : t == at::kBFloat16 ? 1e-4 : 1e-9;
}

// Checks `out` against the float32 reference `ref`: NMSE <= bound, and when a naive libtorch result
// in the same precision is given, maxErr(out) <= 2 * maxErr(naive) + floor (floor = 1e-5 * max|ref|,
// for ops the naive version gets exactly right in float32). Prints one line either way.
inline void expectClose(const std::string& what, const at::Tensor& out, const at::Tensor& ref, double bound,
                        const at::Tensor& naive = at::Tensor())
{
    const ErrorStats s = errorStats(out, ref);
    double naiveMax = -1.0;
    if (naive.defined()) naiveMax = errorStats(naive, ref).maxErr;
    std::printf("  %-48s nmse %.3g (bound %.1g)  max err %.3g  naive max err %.3g\n", what.c_str(), s.nmse, bound,
                s.maxErr, naiveMax);
    LECTOR_CHECK_MSG(s.nmse <= bound, what << ": nmse " << s.nmse << " > " << bound << "; worst element "
                                           << s.worst << ": got " << s.outAtWorst << ", want " << s.refAtWorst);
    if (naive.defined()) {
        const double floor = 1e-5 * ref.detach().to(at::kCPU).to(at::kDouble).abs().max().item<double>();
        LECTOR_CHECK_MSG(s.maxErr <= 2.0 * naiveMax + floor,
                         what << ": max error " << s.maxErr << " exceeds 2x naive libtorch's " << naiveMax
                              << "; worst element " << s.worst << ": got " << s.outAtWorst << ", want "
                              << s.refAtWorst);
    }
}

// --- paged KV fixture ---

// A paged KV cache holding numSeqs sequences. Blocks are assigned from a (shuffled) permutation; every
// slot no sequence owns, including the tail of each partial last block, holds NaN, so a kernel that
// reads past a context or outside its blocks fails the NMSE check. Unused block-table entries point
// past the pool.
struct PagedKv {
    at::Tensor keyCache, valueCache;  // [numBlocks, 16, numKvHeads, headDim], dtype, CPU
    at::Tensor blockTable;            // [numSeqs, maxBlocks] int32, CPU
    at::Tensor contextLens;           // [numSeqs] int32, CPU
    std::vector<int> contexts;
    int numKvHeads = 0, headDim = 0, numBlocks = 0;

    // Contiguous [contextLens[s], numKvHeads, headDim] keys (or values) of sequence s, same dtype.
    at::Tensor gather(const at::Tensor& cache, int s) const
    {
        const int n = contexts[s];
        if (n == 0) return at::empty({0, numKvHeads, headDim}, cache.options());
        const int blocks = static_cast<int>(gpu::ceilDiv(n, gpu::kKvBlockSize));
        const at::Tensor ids = blockTable[s].slice(0, 0, blocks).to(at::kLong);
        return cache.index_select(0, ids).reshape({-1, numKvHeads, headDim}).slice(0, 0, n);
    }
};

inline PagedKv makePagedKv(const std::vector<int>& contexts, int numKvHeads, int headDim, at::ScalarType type,
                           uint64_t seed, bool shuffle = true, int spareBlocks = 3)
{
    PagedKv kv;
    kv.contexts = contexts;
    kv.numKvHeads = numKvHeads;
    kv.headDim = headDim;
    int maxBlocks = 1, total = spareBlocks;
    for (int c : contexts) {
        const int b = static_cast<int>(gpu::ceilDiv(c, gpu::kKvBlockSize));
        maxBlocks = std::max(maxBlocks, b);
        total += b;
    }
    kv.numBlocks = total;
    const std::vector<int> ids = permutation(total, seed, shuffle);
    const int64_t slots = int64_t(total) * gpu::kKvBlockSize;
    at::Tensor keys = at::full({slots, numKvHeads, headDim}, NAN, at::kFloat);
    at::Tensor values = at::full({slots, numKvHeads, headDim}, NAN, at::kFloat);
    kv.blockTable = at::full({int64_t(contexts.size()), maxBlocks + 2}, total + 7, at::kInt);
    auto table = kv.blockTable.accessor<int32_t, 2>();
    int next = 0;
    for (size_t s = 0; s < contexts.size(); ++s) {
        const int n = contexts[s];
        const at::Tensor k = randn({n, numKvHeads, headDim}, seed * 31 + s * 2 + 1);
        const at::Tensor v = randn({n, numKvHeads, headDim}, seed * 31 + s * 2 + 2);
        for (int t = 0; t < n; ++t) {
            if (t % gpu::kKvBlockSize == 0) table[s][t / gpu::kKvBlockSize] = ids[next++];
            const int64_t slot = int64_t(table[s][t / gpu::kKvBlockSize]) * gpu::kKvBlockSize + t % gpu::kKvBlockSize;
            keys[slot].copy_(k[t]);
            values[slot].copy_(v[t]);
        }
    }
    kv.keyCache = keys.view({total, gpu::kKvBlockSize, numKvHeads, headDim}).to(type);
    kv.valueCache = values.view({total, gpu::kKvBlockSize, numKvHeads, headDim}).to(type);
    kv.contextLens = at::tensor(std::vector<int32_t>(contexts.begin(), contexts.end()), at::kInt);
    return kv;
}

// Naive attention in the tensors' own precision (FlashAttention's attention_ref without upcast):
// matmuls in dtype, softmax in float32 then cast back. q: [nq, H, D]; k, v: [nk, Hkv, D]; query i
// sits at position causalOffset + i and sees keys <= that position (causalOffset < 0: no mask).
inline at::Tensor naiveAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                                 int64_t causalOffset)
{
    const int64_t group = q.size(1) / k.size(1);
    const at::Tensor kk = k.repeat_interleave(group, 1).permute({1, 2, 0});  // [H, D, nk]
    const at::Tensor vv = v.repeat_interleave(group, 1).transpose(0, 1);     // [H, nk, D]
    at::Tensor scores = at::matmul(q.transpose(0, 1), kk) * scale;           // [H, nq, nk]
    if (causalOffset >= 0) {
        const at::Tensor qi = at::arange(q.size(0), q.options().dtype(at::kLong)).view({-1, 1}) + causalOffset;
        const at::Tensor kj = at::arange(k.size(0), q.options().dtype(at::kLong)).view({1, -1});
        scores = scores.masked_fill(kj > qi, -INFINITY);
    }
    const at::Tensor p = at::softmax(scores.to(at::kFloat), -1).to(q.scalar_type());
    return at::matmul(p, vv).transpose(0, 1);  // [nq, H, D]
}

}  // namespace lector::test::kernels
