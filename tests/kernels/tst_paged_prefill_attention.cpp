// Paged prefill attention: the CPU reference against causal attention computed densely by libtorch
// in float64 (always), and both CUDA paths (tensor cores, SIMT) against the reference (CUDA machines).
// The batches mix prefill chunks over cached tokens, decode tokens, fresh prompts of an exact block
// multiple, of one token, of odd length and of several tiles, more than 32 sequences, shuffled block
// ids and GQA; the tensor-core kernel runs as it chooses and with each split of its warp groups forced.
#include <ATen/ATen.h>

#include <cmath>

#include "gpu/ref/paged_prefill_attention_ref.h"
#include "tests/kernels/kernel_test_util.h"
#ifdef LECTOR_HAVE_CUDA
#include "gpu/ops.h"
#endif

namespace kt = lector::test::kernels;
using lector::gpu::PagedPrefillAttentionParams;

namespace {

constexpr int kHeadDim = 128;

struct Batch {
    const char* name;
    std::vector<int> cached;    // tokens already in the cache per sequence
    std::vector<int> newTokens; // tokens of this step per sequence
    int numQHeads, numKvHeads;
};

const std::vector<Batch>& batches()
{
    static const std::vector<Batch> all{
        {"chunk + decode + fresh prompts", {40, 768, 0, 0, 0}, {33, 1, 16, 1, 100}, 16, 8},
        {"odd sizes 7 and 769", {0, 5}, {7, 769}, 4, 2},
        {"decodes only", {1, 16, 31}, {1, 1, 1}, 16, 8},
        {"no GQA, long cached prefix", {1200, 0}, {45, 64}, 4, 4},
        {"GQA 4", {20, 3}, {37, 70}, 8, 2},
        {"GQA 8", {0}, {129}, 8, 1},
        // The tensor-core kernel's tiles of rows count back from each sequence's last row: a prompt of
        // several tiles whose rows straddle key tiles, and a chunk beside it over an odd cached prefix.
        {"long prompt and a chunk", {0, 333}, {601, 250}, 16, 8},
        // More than 32 sequences: the kernel finds its tile by bisection instead of one warp's lanes.
        {"40 sequences", std::vector<int>(40, 70), std::vector<int>{1, 1, 1, 30, 1, 1, 65, 1, 1, 1, 1, 1, 1, 2, 1,
                                                                     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                                     1, 1, 1, 1, 1, 1, 1, 1, 17, 1}, 16, 8},
    };
    return all;
}

struct Inputs {
    kt::PagedKv kv;          // contexts = cached + new
    at::Tensor query;        // [numTokens, numQHeads, headDim]
    at::Tensor cuSeqlensQ;   // [numSeqs + 1] int32
    int maxQueryLen = 0, maxContextLen = 0;
};

Inputs makeInputs(const Batch& b, at::ScalarType type, uint64_t seed)
{
    Inputs in;
    std::vector<int> contexts, cu{0};
    for (size_t s = 0; s < b.cached.size(); ++s) {
        contexts.push_back(b.cached[s] + b.newTokens[s]);
        cu.push_back(cu.back() + b.newTokens[s]);
        in.maxQueryLen = std::max(in.maxQueryLen, b.newTokens[s]);
        in.maxContextLen = std::max(in.maxContextLen, contexts.back());
    }
    in.kv = kt::makePagedKv(contexts, b.numKvHeads, kHeadDim, type, seed);
    in.query = kt::randn({cu.back(), b.numQHeads, kHeadDim}, seed + 1, type);
    in.cuSeqlensQ = at::tensor(std::vector<int32_t>(cu.begin(), cu.end()), at::kInt);
    return in;
}

at::Tensor runReference(const Inputs& in, const at::Tensor& query, const at::Tensor& keyCache,
                        const at::Tensor& valueCache, double scale)
{
    const at::Tensor out = at::full(query.sizes(), NAN, query.options());
    PagedPrefillAttentionParams p;
    p.dtype = kt::toDType(query.scalar_type());
    p.out = out.data_ptr();
    p.query = query.data_ptr();
    p.keyCache = keyCache.data_ptr();
    p.valueCache = valueCache.data_ptr();
    p.blockTable = in.kv.blockTable.data_ptr<int32_t>();
    p.cuSeqlensQ = in.cuSeqlensQ.data_ptr<int32_t>();
    p.contextLens = in.kv.contextLens.data_ptr<int32_t>();
    p.queryTokenStride = query.stride(0);
    p.outTokenStride = out.stride(0);
    p.blockTableStride = in.kv.blockTable.stride(0);
    p.numTokens = static_cast<int>(query.size(0));
    p.numSeqs = static_cast<int>(in.kv.contexts.size());
    p.numQHeads = static_cast<int>(query.size(1));
    p.numKvHeads = in.kv.numKvHeads;
    p.headDim = kHeadDim;
    p.numBlocks = in.kv.numBlocks;
    p.maxQueryLen = in.maxQueryLen;
    p.maxContextLen = in.maxContextLen;
    p.scale = static_cast<float>(scale);
    lector::gpu::ref::pagedPrefillAttentionRef(p);
    return out;
}

// Causal dense attention per sequence in `type` on `device`.
at::Tensor denseAttention(const Inputs& in, double scale, at::ScalarType type, const at::Device& device)
{
    std::vector<at::Tensor> parts;
    auto cu = in.cuSeqlensQ.accessor<int32_t, 1>();
    for (size_t s = 0; s < in.kv.contexts.size(); ++s) {
        const int first = cu[s], len = cu[s + 1] - cu[s];
        if (len == 0) continue;
        const at::Tensor q = in.query.slice(0, first, first + len).to(device).to(type);
        const at::Tensor k = in.kv.gather(in.kv.keyCache, static_cast<int>(s)).to(device).to(type);
        const at::Tensor v = in.kv.gather(in.kv.valueCache, static_cast<int>(s)).to(device).to(type);
        parts.push_back(kt::naiveAttention(q, k, v, scale, in.kv.contexts[s] - len));
    }
    return at::cat(parts, 0);
}

}  // namespace

LECTOR_TEST(referenceMatchesCausalFloat64Attention)
{
    for (const Batch& b : batches()) {
        const Inputs in = makeInputs(b, at::kFloat, 31);
        const double scale = 1.0 / std::sqrt(double(kHeadDim));
        kt::expectClose(std::string("ref vs float64: ") + b.name,
                        runReference(in, in.query, in.kv.keyCache, in.kv.valueCache, scale),
                        denseAttention(in, scale, at::kDouble, at::kCPU), 1e-10);
    }
}

LECTOR_TEST(referenceFirstTokenOfFreshPromptCopiesItsValue)
{
    // A fresh prompt's first token sees only itself: its output is its own value row, exactly.
    const Inputs in = makeInputs({"fresh", {0}, {5}, 4, 2}, at::kFloat, 33);
    const at::Tensor out = runReference(in, in.query, in.kv.keyCache, in.kv.valueCache, 0.1);
    const at::Tensor v0 = in.kv.gather(in.kv.valueCache, 0)[0];  // [numKvHeads, headDim]
    LECTOR_CHECK(at::allclose(out[0], v0.repeat_interleave(2, 0), 0.0, 1e-6));
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReferenceOnMixedBatches)
{
    kt::requireCuda();
    using lector::gpu::PrefillImpl;
    for (at::ScalarType type : kt::floatTypes()) {
        for (const Batch& b : batches()) {
            const Inputs in = makeInputs(b, type, 41);
            const double scale = 1.0 / std::sqrt(double(kHeadDim));
            const at::Tensor ref = runReference(in, in.query.to(at::kFloat), in.kv.keyCache.to(at::kFloat),
                                                in.kv.valueCache.to(at::kFloat), scale);
            const at::Tensor naive = denseAttention(in, scale, type, at::kCUDA);
            std::vector<PrefillImpl> impls{PrefillImpl::Simt};
            if (type != at::kFloat)  // the tensor-core kernel as it chooses and each way forced
                impls.insert(impls.end(), {PrefillImpl::TensorCore, PrefillImpl::TensorCoreSplitKeys,
                                           PrefillImpl::TensorCoreSplitRows});
            for (PrefillImpl impl : impls) {
                const at::Tensor out = at::full(in.query.sizes(), NAN, in.query.options().device(at::kCUDA));
                lector::gpu::pagedPrefillAttention(out, in.query.cuda(), in.kv.keyCache.cuda(),
                                                   in.kv.valueCache.cuda(), in.kv.blockTable.cuda(),
                                                   in.cuSeqlensQ.cuda(), in.kv.contextLens.cuda(), in.maxQueryLen,
                                                   in.maxContextLen, scale, impl);
                const std::string implName = impl == PrefillImpl::Simt                  ? "simt"
                                             : impl == PrefillImpl::TensorCoreSplitKeys ? "tensor cores, keys split"
                                             : impl == PrefillImpl::TensorCoreSplitRows ? "tensor cores, rows split"
                                                                                        : "tensor cores";
                kt::expectClose(kt::typeName(type) + " " + implName + ": " + b.name, out, ref, kt::nmseBound(type),
                                naive);
            }
        }
    }
}

LECTOR_TEST(cudaTensorCorePathRejectsFloat32)
{
    kt::requireCuda();
    const Inputs in = makeInputs({"f32", {0}, {3}, 16, 8}, at::kFloat, 43);
    bool threw = false;
    try {
        lector::gpu::pagedPrefillAttention(at::empty_like(in.query).cuda(), in.query.cuda(), in.kv.keyCache.cuda(),
                                           in.kv.valueCache.cuda(), in.kv.blockTable.cuda(), in.cuSeqlensQ.cuda(),
                                           in.kv.contextLens.cuda(), 3, 3, 0.1,
                                           lector::gpu::PrefillImpl::TensorCore);
    } catch (const c10::Error&) {
        threw = true;
    }
    LECTOR_CHECK(threw);
}

#endif  // LECTOR_HAVE_CUDA
