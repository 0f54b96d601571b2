// Paged KV write: the reference places every token at its slot and nothing else (against slots
// computed by hand), and the CUDA kernel writes bit-identical caches, for strided K/V views of a fused
// QKV row, padding slots (-1), slots outside the pool, odd token counts, the ViT's head dim 72 and 36.
#include <ATen/ATen.h>

#include "gpu/ref/kv_cache_write_ref.h"
#include "tests/kernels/kernel_test_util.h"
#ifdef LECTOR_HAVE_CUDA
#include "gpu/ops.h"
#endif

namespace kt = lector::test::kernels;
using lector::gpu::kKvBlockSize;

namespace {

struct Inputs {
    at::Tensor qkv;          // [numTokens, (numKvHeads * 3) * headDim]: K and V are strided views of it
    at::Tensor key, value;   // [numTokens, numKvHeads, headDim] views
    at::Tensor slots;        // [numTokens] int64
    at::Tensor keyCache, valueCache;  // [numBlocks, 16, numKvHeads, headDim], NaN-poisoned
};

// Distinct shuffled slots, every 5th token padding (-1) and token 3 outside the pool.
Inputs makeInputs(int numTokens, int numKvHeads, int headDim, int numBlocks, at::ScalarType type, uint64_t seed)
{
    Inputs in;
    const int64_t width = int64_t(numKvHeads) * headDim;
    in.qkv = kt::randn({numTokens, 3 * width}, seed, type);
    in.key = in.qkv.slice(1, width, 2 * width).view({numTokens, numKvHeads, headDim});
    in.value = in.qkv.slice(1, 2 * width, 3 * width).view({numTokens, numKvHeads, headDim});
    const std::vector<int> perm = kt::permutation(numBlocks * kKvBlockSize, seed + 1);
    std::vector<int64_t> slots(numTokens);
    for (int t = 0; t < numTokens; ++t) slots[t] = t % 5 == 4 ? -1 : perm[t];
    if (numTokens > 3) slots[3] = int64_t(numBlocks) * kKvBlockSize + 2;
    in.slots = at::tensor(slots, at::kLong);
    in.keyCache = at::full({numBlocks, kKvBlockSize, numKvHeads, headDim}, NAN, type);
    in.valueCache = at::full({numBlocks, kKvBlockSize, numKvHeads, headDim}, NAN, type);
    return in;
}

lector::gpu::KvCacheWriteParams paramsOf(const Inputs& in)
{
    lector::gpu::KvCacheWriteParams p;
    p.dtype = kt::toDType(in.key.scalar_type());
    p.key = in.key.data_ptr();
    p.value = in.value.data_ptr();
    p.keyCache = in.keyCache.data_ptr();
    p.valueCache = in.valueCache.data_ptr();
    p.slotMapping = in.slots.data_ptr<int64_t>();
    p.keyTokenStride = in.key.stride(0);
    p.keyHeadStride = in.key.stride(1);
    p.valueTokenStride = in.value.stride(0);
    p.valueHeadStride = in.value.stride(1);
    p.numTokens = static_cast<int>(in.key.size(0));
    p.numKvHeads = static_cast<int>(in.key.size(1));
    p.headDim = static_cast<int>(in.key.size(2));
    p.numBlocks = static_cast<int>(in.keyCache.size(0));
    return p;
}

// Tokens-by-slot equality: each written slot holds its token's row, every other slot is still NaN.
void checkPlacement(const Inputs& in, const at::Tensor& keyCache, const at::Tensor& valueCache)
{
    const int64_t numSlots = keyCache.size(0) * kKvBlockSize;
    const at::Tensor kFlat = keyCache.reshape({numSlots, -1}), vFlat = valueCache.reshape({numSlots, -1});
    std::vector<char> written(numSlots, 0);
    auto slots = in.slots.accessor<int64_t, 1>();
    for (int64_t t = 0; t < in.slots.size(0); ++t) {
        if (slots[t] < 0 || slots[t] >= numSlots) continue;
        written[slots[t]] = 1;
        LECTOR_CHECK_MSG(at::equal(kFlat[slots[t]], in.key[t].reshape({-1})), "key of token " << t);
        LECTOR_CHECK_MSG(at::equal(vFlat[slots[t]], in.value[t].reshape({-1})), "value of token " << t);
    }
    for (int64_t s = 0; s < numSlots; ++s)
        if (!written[s])
            LECTOR_CHECK_MSG(at::isnan(kFlat[s]).all().item<bool>() && at::isnan(vFlat[s]).all().item<bool>(),
                             "slot " << s << " was written but no token maps to it");
}

}  // namespace

LECTOR_TEST(referencePlacesTokensAtTheirSlotsOnly)
{
    for (at::ScalarType type : kt::floatTypes()) {
        for (int numTokens : {1, 7, 37}) {
            const Inputs in = makeInputs(numTokens, 8, 128, 4, type, 51 + numTokens);
            lector::gpu::ref::kvCacheWriteRef(paramsOf(in));
            checkPlacement(in, in.keyCache, in.valueCache);
        }
    }
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaWritesTheSameCacheAsTheReference)
{
    kt::requireCuda();
    for (at::ScalarType type : kt::floatTypes()) {
        for (int headDim : {128, 72, 36}) {  // 36: rows not 16-byte multiples (element path)
            for (int numTokens : {1, 7, 769}) {
                const int numBlocks = static_cast<int>(lector::gpu::ceilDiv(numTokens, kKvBlockSize)) + 2;
                const Inputs in = makeInputs(numTokens, 8, headDim, numBlocks, type, 61 + numTokens);
                const at::Tensor keyCache = in.keyCache.cuda(), valueCache = in.valueCache.cuda();
                const at::Tensor qkv = in.qkv.cuda();
                const int64_t width = int64_t(8) * headDim;
                lector::gpu::writeKvCache(keyCache, valueCache,
                                          qkv.slice(1, width, 2 * width).view({numTokens, 8, headDim}),
                                          qkv.slice(1, 2 * width, 3 * width).view({numTokens, 8, headDim}),
                                          in.slots.cuda());
                checkPlacement(in, keyCache.cpu(), valueCache.cpu());
                std::printf("  %s head dim %d, %d tokens: placed exactly\n", kt::typeName(type).c_str(), headDim,
                            numTokens);
            }
        }
    }
}

#endif  // LECTOR_HAVE_CUDA
