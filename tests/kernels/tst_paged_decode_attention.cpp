// Paged decode attention: the CPU reference against attention computed densely by libtorch in
// float64 (always), and the CUDA kernel against the reference (CUDA machines), over the paging
// matrix of docs/style.md §6.6: context 1, an exact block multiple, partial last blocks, odd sizes,
// shuffled block ids, GQA, split-K on and off.
#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "gpu/ref/paged_decode_attention_ref.h"
#include "tests/kernels/kernel_test_util.h"
#ifdef LECTOR_HAVE_CUDA
#include <cuda_runtime.h>

#include "gpu/ops.h"
#endif

namespace kt = lector::test::kernels;
using lector::gpu::PagedDecodeAttentionParams;

namespace {

constexpr int kHeadDim = 128;

// The reference on CPU tensors of any dtype; returns out in that dtype.
at::Tensor runReference(const kt::PagedKv& kv, const at::Tensor& query, double scale)
{
    const at::Tensor out = at::full(query.sizes(), NAN, query.options());
    PagedDecodeAttentionParams p;
    p.dtype = kt::toDType(query.scalar_type());
    p.out = out.data_ptr();
    p.query = query.data_ptr();
    p.keyCache = kv.keyCache.data_ptr();
    p.valueCache = kv.valueCache.data_ptr();
    p.blockTable = kv.blockTable.data_ptr<int32_t>();
    p.contextLens = kv.contextLens.data_ptr<int32_t>();
    p.querySeqStride = query.stride(0);
    p.outSeqStride = out.stride(0);
    p.blockTableStride = kv.blockTable.stride(0);
    p.numSeqs = static_cast<int>(query.size(0));
    p.numQHeads = static_cast<int>(query.size(1));
    p.numKvHeads = kv.numKvHeads;
    p.headDim = kv.headDim;
    p.numBlocks = kv.numBlocks;
    p.maxContextLen = *std::max_element(kv.contexts.begin(), kv.contexts.end());
    p.scale = static_cast<float>(scale);
    lector::gpu::ref::pagedDecodeAttentionRef(p);
    return out;
}

// Dense attention of each sequence, computed by libtorch in `type` (float64 for checking the reference).
at::Tensor denseAttention(const kt::PagedKv& kv, const at::Tensor& query, double scale, at::ScalarType type,
                          const at::Device& device)
{
    std::vector<at::Tensor> rows;
    for (size_t s = 0; s < kv.contexts.size(); ++s) {
        const at::Tensor q = query[s].unsqueeze(0).to(device).to(type);
        if (kv.contexts[s] == 0) {
            rows.push_back(at::zeros_like(q));
            continue;
        }
        const at::Tensor k = kv.gather(kv.keyCache, static_cast<int>(s)).to(device).to(type);
        const at::Tensor v = kv.gather(kv.valueCache, static_cast<int>(s)).to(device).to(type);
        rows.push_back(kt::naiveAttention(q, k, v, scale, -1));
    }
    return at::cat(rows, 0);
}

#ifdef LECTOR_HAVE_CUDA
// A case's inputs in `type`, with the float32 reference over the very same (rounded) inputs and the
// dense libtorch attention in `type` on the GPU (the error scale expectClose compares against).
struct CudaCase {
    kt::PagedKv kv;
    at::Tensor query, ref, naive;
};

CudaCase cudaCase(const std::vector<int>& contexts, int numQHeads, int numKvHeads, at::ScalarType type,
                  uint64_t seed, double scale)
{
    CudaCase out{kt::makePagedKv(contexts, numKvHeads, kHeadDim, type, seed), {}, {}, {}};
    out.query = kt::randn({int64_t(contexts.size()), numQHeads, kHeadDim}, seed + 1, type);
    kt::PagedKv kv32 = out.kv;
    kv32.keyCache = out.kv.keyCache.to(at::kFloat);
    kv32.valueCache = out.kv.valueCache.to(at::kFloat);
    out.ref = runReference(kv32, out.query.to(at::kFloat), scale);
    out.naive = denseAttention(out.kv, out.query, scale, type, at::kCUDA);
    return out;
}
#endif

struct Case {
    const char* name;
    std::vector<int> contexts;
    int numQHeads, numKvHeads;
};

const std::vector<Case>& cases()
{
    static const std::vector<Case> all{
        {"context 1", {1}, 16, 8},
        {"exact block multiples", {16, 32, 256}, 16, 8},
        {"partial last blocks", {17, 33, 100}, 16, 8},
        {"odd sizes 7 and 769", {7, 769, 1, 5}, 16, 8},
        {"no GQA", {50, 129}, 4, 4},
        {"GQA 4", {300, 64}, 8, 2},
        {"GQA 8", {700, 3}, 8, 1},
        {"long contexts (split-K)", {2048, 1500, 4096}, 16, 8},
        // A page's prompt and beyond: at 256-key partitions these split into 5 and 6 equal shares of 13-14
        // blocks, beside a one-token sequence.
        {"page contexts, uneven shares", {1076, 1333, 1}, 16, 8},
    };
    return all;
}

}  // namespace

LECTOR_TEST(referenceMatchesDenseFloat64Attention)
{
    for (const Case& c : cases()) {
        const kt::PagedKv kv = kt::makePagedKv(c.contexts, c.numKvHeads, kHeadDim, at::kFloat, 11);
        const at::Tensor query = kt::randn({int64_t(c.contexts.size()), c.numQHeads, kHeadDim}, 12);
        const double scale = 1.0 / std::sqrt(double(kHeadDim));
        kt::expectClose(std::string("ref vs float64: ") + c.name, runReference(kv, query, scale),
                        denseAttention(kv, query, scale, at::kDouble, at::kCPU), 1e-10);
    }
}

LECTOR_TEST(referenceRoundsHalfOutputsOnce)
{
    // Same inputs in float16: the reference reads them exactly and rounds only its output.
    const kt::PagedKv kv = kt::makePagedKv({33, 769}, 8, kHeadDim, at::kHalf, 13);
    const at::Tensor query = kt::randn({2, 16, kHeadDim}, 14, at::kHalf);
    const at::Tensor out = runReference(kv, query, 0.088);
    const at::Tensor dense = denseAttention(kv, query, 0.088, at::kDouble, at::kCPU);
    // Rounded once: within one float16 half-ulp (plus the float32 step) of the exact value.
    const at::Tensor err = (out.to(at::kDouble) - dense).abs();
    LECTOR_CHECK((err <= dense.abs() * std::ldexp(1.0, -11) * 1.01 + 1e-7).all().item<bool>());
    kt::expectClose("ref float16 vs float64", out, dense, 1e-6);
}

LECTOR_TEST(referenceGivesZerosForEmptyContext)
{
    const kt::PagedKv kv = kt::makePagedKv({0, 5}, 8, kHeadDim, at::kFloat, 15);
    const at::Tensor query = kt::randn({2, 16, kHeadDim}, 16);
    const at::Tensor out = runReference(kv, query, 0.1);
    LECTOR_CHECK(at::equal(out[0], at::zeros_like(out[0])));
    LECTOR_CHECK(!at::isnan(out[1]).any().item<bool>());
}

LECTOR_TEST(referenceSkipsBlockIdsOutsideThePool)
{
    // A block id outside [0, numBlocks) masks its 16 keys (negative, or past the pool): the reference
    // equals dense attention over the other keys. (Every slot outside a sequence's blocks is NaN, so
    // reading a masked block would show.)
    kt::PagedKv kv = kt::makePagedKv({77, 100}, 8, kHeadDim, at::kFloat, 17);
    const kt::PagedKv whole = kv;
    kv.blockTable = kv.blockTable.clone();
    kv.blockTable[0][2] = -1;
    kv.blockTable[1][0] = kv.numBlocks + 1;
    kv.blockTable[1][6] = kv.numBlocks;  // the partial last block
    const at::Tensor query = kt::randn({2, 16, kHeadDim}, 18);
    const double scale = 1.0 / std::sqrt(double(kHeadDim));
    const std::vector<std::vector<int>> masked{{2}, {0, 6}};
    std::vector<at::Tensor> rows;
    for (int s = 0; s < 2; ++s) {
        std::vector<int64_t> keep;  // token indices of the unmasked blocks
        for (int t = 0; t < kv.contexts[s]; ++t)
            if (std::find(masked[s].begin(), masked[s].end(), t / 16) == masked[s].end()) keep.push_back(t);
        const at::Tensor idx = at::tensor(keep, at::kLong);
        const at::Tensor k = whole.gather(whole.keyCache, s).index_select(0, idx).to(at::kDouble);
        const at::Tensor v = whole.gather(whole.valueCache, s).index_select(0, idx).to(at::kDouble);
        rows.push_back(kt::naiveAttention(query[s].unsqueeze(0).to(at::kDouble), k, v, scale, -1));
    }
    kt::expectClose("ref with masked blocks vs float64 over the rest", runReference(kv, query, scale), at::cat(rows, 0),
                    1e-10);
}

LECTOR_TEST(rowPartitionsStayWithinOneWave)
{
    // 132 SMs x 4 CTAs of the one-pass kernel = 528 slots, over (sequences x 8 KV heads): the whole
    // partitions that fit in that one wave, at least 1, at most kDecodeMaxRowPartitions.
    using lector::gpu::pagedDecodeRowPartitions;
    LECTOR_CHECK(pagedDecodeRowPartitions(4, 8, 132) == 16);   // 16.5
    LECTOR_CHECK(pagedDecodeRowPartitions(8, 8, 132) == 8);    // 8.25
    LECTOR_CHECK(pagedDecodeRowPartitions(16, 8, 132) == 4);   // 4.1
    LECTOR_CHECK(pagedDecodeRowPartitions(24, 8, 132) == 2);   // 2.75: 3 would take 576 CTAs, past one wave of 528
    LECTOR_CHECK(pagedDecodeRowPartitions(32, 8, 132) == 2);   // 2.06
    LECTOR_CHECK(pagedDecodeRowPartitions(40, 8, 132) == 1);   // 1.65
    LECTOR_CHECK(pagedDecodeRowPartitions(48, 8, 132) == 1);   // 1.375
    LECTOR_CHECK(pagedDecodeRowPartitions(256, 8, 132) == 1);  // 0.26
    LECTOR_CHECK(pagedDecodeRowPartitions(1, 8, 132) == 64);   // 66, capped
    LECTOR_CHECK(pagedDecodeRowPartitions(0, 8, 132) == 1);
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReferenceOverPagingMatrix)
{
    kt::requireCuda();
    for (at::ScalarType type : kt::floatTypes()) {
        for (const Case& c : cases()) {
            const double scale = 1.0 / std::sqrt(double(kHeadDim));
            const CudaCase cc = cudaCase(c.contexts, c.numQHeads, c.numKvHeads, type, 21, scale);
            const kt::PagedKv& kv = cc.kv;
            const at::Tensor &query = cc.query, &ref = cc.ref, &naive = cc.naive;

            const int maxContext = *std::max_element(c.contexts.begin(), c.contexts.end());
            // 48 and 64: the short partitions whose CTAs load K and V before the wait (the graphed decode
            // steps of few sequences); 128 to 2048 and 0 (no split): the one-pass variant, up to 64 blocks
            // per warp. The grid is sized for the whole block table (two blocks more than the longest
            // context), as a graph sizes it for its whole context range (empty partitions must not count
            // towards the merge).
            std::vector<int64_t> partitions{-1, 48, 64, 128, 256, 1024, 2048, 0};
            for (int64_t partition : partitions) {
                const at::Tensor out = at::full(query.sizes(), NAN, query.options().device(at::kCUDA));
                const int64_t gridContext = partition > 0 ? kv.blockTable.size(1) * 16 : maxContext;
                lector::gpu::pagedDecodeAttention(out, query.cuda(), kv.keyCache.cuda(), kv.valueCache.cuda(),
                                                  kv.blockTable.cuda(), kv.contextLens.cuda(), gridContext, scale,
                                                  partition);
                kt::expectClose(kt::typeName(type) + " " + c.name + " partition " + std::to_string(partition), out,
                                ref, kt::nmseBound(type), naive);
            }
            // Row partitions: equal shares of each sequence's own context (one; three; more than some
            // sequences have blocks), over a graph-wide block table.
            for (int64_t rowParts : {1, 3, 64}) {
                const at::Tensor out = at::full(query.sizes(), NAN, query.options().device(at::kCUDA));
                lector::gpu::pagedDecodeAttention(out, query.cuda(), kv.keyCache.cuda(), kv.valueCache.cuda(),
                                                  kv.blockTable.cuda(), kv.contextLens.cuda(),
                                                  kv.blockTable.size(1) * 16, scale, -1, 0, rowParts);
                kt::expectClose(kt::typeName(type) + " " + c.name + " row partitions " + std::to_string(rowParts), out,
                                ref, kt::nmseBound(type), naive);
            }
        }
    }
}

LECTOR_TEST(cudaAutoSplitOfManySequencesMatchesReference)
{
    kt::requireCuda();
    // 16 sequences x 8 KV heads: the automatic split takes row partitions (eager decode steps of many
    // sequences, and table 3), over contexts from one token to past a page's prompt.
    const std::vector<int> contexts{1, 17, 100, 1076, 1333, 16, 64, 65, 250, 511, 777, 2048, 3, 900, 1200, 33};
    LECTOR_CHECK(lector::gpu::pagedDecodeAutoRowPartitions(int64_t(contexts.size()), 8, at::Device(at::kCUDA)) > 0);
    for (at::ScalarType type : kt::floatTypes()) {
        const double scale = 1.0 / std::sqrt(double(kHeadDim));
        const CudaCase cc = cudaCase(contexts, 16, 8, type, 31, scale);
        const at::Tensor out = at::full(cc.query.sizes(), NAN, cc.query.options().device(at::kCUDA));
        lector::gpu::pagedDecodeAttention(out, cc.query.cuda(), cc.kv.keyCache.cuda(), cc.kv.valueCache.cuda(),
                                          cc.kv.blockTable.cuda(), cc.kv.contextLens.cuda(), 2048, scale);
        kt::expectClose(kt::typeName(type) + " 16 sequences, automatic split", out, cc.ref, kt::nmseBound(type),
                        cc.naive);
    }
}

LECTOR_TEST(cudaClusterMergeMatchesReference)
{
    kt::requireCuda();
    // The cluster merge: a fixed number of partitions per sequence share its own context (2 to 16, so
    // partitions of one block and less, of the two prefetched blocks per warp, and of more than that),
    // over a block table as wide as a graph's, merged through distributed shared memory.
    int major = 0;
    LECTOR_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
    for (at::ScalarType type : kt::floatTypes()) {
        for (const Case& c : cases()) {
            const double scale = 1.0 / std::sqrt(double(kHeadDim));
            const CudaCase cc = cudaCase(c.contexts, c.numQHeads, c.numKvHeads, type, 27, scale);
            const kt::PagedKv& kv = cc.kv;
            const at::Tensor &query = cc.query, &ref = cc.ref, &naive = cc.naive;
            const at::Tensor keys = kv.keyCache.cuda();
            const int64_t gridContext = kv.blockTable.size(1) * 16;
            if (major < 9) {
                LECTOR_CHECK(lector::gpu::pagedDecodeClusterPartitions(keys, c.numQHeads, gridContext, 16) == 0);
                continue;
            }
            // Where a 16-CTA cluster's partitions fit (every case here), the device must run it.
            LECTOR_CHECK(lector::gpu::pagedDecodeClusterPartitions(keys, c.numQHeads, gridContext, 16) == 16);
            for (int64_t parts : {16, 5, 2}) {
                if (lector::gpu::pagedDecodeClusterPartitionLen(int(gridContext), int(parts)) >
                    lector::gpu::kDecodeMaxPartition)
                    continue;
                const at::Tensor out = at::full(query.sizes(), NAN, query.options().device(at::kCUDA));
                lector::gpu::pagedDecodeAttention(out, query.cuda(), keys, kv.valueCache.cuda(), kv.blockTable.cuda(),
                                                  kv.contextLens.cuda(), gridContext, scale, -1, parts);
                kt::expectClose(kt::typeName(type) + " " + c.name + " cluster of " + std::to_string(parts), out, ref,
                                kt::nmseBound(type), naive);
            }
        }
    }
    // An empty context gives zeros, as on the other paths.
    const kt::PagedKv kv = kt::makePagedKv({0, 5}, 8, kHeadDim, at::kHalf, 29);
    const at::Tensor query = kt::randn({2, 16, kHeadDim}, 30, at::kHalf).cuda();
    if (major >= 9) {
        const at::Tensor out = at::full({2, 16, kHeadDim}, NAN, query.options());
        lector::gpu::pagedDecodeAttention(out, query, kv.keyCache.cuda(), kv.valueCache.cuda(), kv.blockTable.cuda(),
                                          kv.contextLens.cuda(), kv.blockTable.size(1) * 16, 0.1, -1, 16);
        LECTOR_CHECK(at::equal(out[0].cpu(), at::zeros({16, kHeadDim}, at::kHalf)));
        LECTOR_CHECK(!at::isnan(out).any().item<bool>());
    }
}

LECTOR_TEST(cudaReadsStridedQueriesAndSkipsBadBlockIds)
{
    kt::requireCuda();
    // Queries as a view of a fused QKV row ([seqs, (16 + 8 + 8) * 128]); block ids outside the pool,
    // which the reference and every variant of the kernel must treat as masked: one past the pool and
    // one negative, in a block a warp loads before the wait (64-key partitions, the cluster merge) and in
    // one it loads on use (the cluster of 2 over 700 keys: 22 blocks a CTA, up to 6 a warp).
    const kt::PagedKv kv = kt::makePagedKv({40, 77, 700}, 8, kHeadDim, at::kHalf, 23);
    at::Tensor table = kv.blockTable.clone();
    table[1][2] = kv.numBlocks + 5;
    table[2][3] = -1;
    table[2][40] = kv.numBlocks;
    kt::PagedKv bad = kv;
    bad.blockTable = table;
    const at::Tensor qkv = kt::randn({3, 32 * kHeadDim}, 24, at::kHalf);
    const at::Tensor query = qkv.slice(1, 0, 16 * kHeadDim).view({3, 16, kHeadDim});
    kt::PagedKv bad32 = bad;
    bad32.keyCache = bad.keyCache.to(at::kFloat);
    bad32.valueCache = bad.valueCache.to(at::kFloat);
    const at::Tensor ref = runReference(bad32, query.to(at::kFloat).contiguous(), 0.09);
    const at::Tensor qkvGpu = qkv.cuda(), keys = kv.keyCache.cuda(), values = kv.valueCache.cuda();
    const at::Tensor tableGpu = table.cuda(), lens = kv.contextLens.cuda();
    const int64_t gridContext = table.size(1) * 16;
    struct Split {
        const char* name;
        int64_t context, partition, cluster, rows;
    };
    std::vector<Split> splits{{"no split", 700, 0, 0, 0},
                              {"64-key partitions", gridContext, 64, 0, 0},
                              {"row partitions 3", gridContext, -1, 0, 3}};
    for (int64_t parts : {16, 2})
        if (lector::gpu::pagedDecodeClusterPartitions(keys, 16, gridContext, parts) == parts)
            splits.push_back({parts == 16 ? "cluster of 16" : "cluster of 2", gridContext, -1, parts, 0});
    for (const Split& sp : splits) {
        const at::Tensor out = at::full({3, 16, kHeadDim}, NAN, query.options().device(at::kCUDA));
        lector::gpu::pagedDecodeAttention(out, qkvGpu.slice(1, 0, 16 * kHeadDim).view({3, 16, kHeadDim}), keys, values,
                                          tableGpu, lens, sp.context, 0.09, sp.partition, sp.cluster, sp.rows);
        kt::expectClose(std::string("strided query, block ids outside the pool, ") + sp.name, out, ref,
                        kt::nmseBound(at::kHalf));
    }
}

LECTOR_TEST(cudaFusedRopeMatchesTheReferencesInTurn)
{
    kt::requireCuda();
    // pagedDecodeAttentionRope: the new token's QK-norm + XD-RoPE and K/V write inside the one-pass kernel,
    // against the CPU path of the same op (qkNormRopeWriteKv's reference, then this attention's) in the
    // same dtype: the output, and the K/V the kernel wrote at each sequence's slot. The new token's cache
    // slot holds NaN before the launch, so a kernel that attended to the stale slot instead of the key it
    // rotated fails. Contexts put the new token in a warp's first block (loaded before the wait) and in a
    // later one, at the first and last token of a block, in partitions of one block and of many; a
    // sequence's slot of -1 writes nothing.
    constexpr int kQHeads = 16, kKvHeads = 8, kMaxPos = 4096;
    const std::vector<int> contexts{1, 16, 17, 1076, 33, 700, 5, 2048, 64, 65};
    const int64_t numSeqs = int64_t(contexts.size());
    const at::Tensor cosSin = kt::ropeCosSinCache(kMaxPos, kHeadDim);
    for (at::ScalarType type : kt::floatTypes()) {
        const kt::PagedKv kv = kt::makePagedKv(contexts, kKvHeads, kHeadDim, type, 41);
        at::Tensor slots = at::empty({numSeqs}, at::kLong);
        for (int64_t s = 0; s < numSeqs; ++s) {
            const int t = contexts[s] - 1;
            slots[s] = int64_t(kv.blockTable[s][t / 16].item<int32_t>()) * 16 + t % 16;
        }
        at::Tensor keys = kv.keyCache.clone(), values = kv.valueCache.clone();
        const at::Tensor flatKeys = keys.view({-1, kKvHeads, kHeadDim}), flatValues = values.view({-1, kKvHeads, kHeadDim});
        for (int64_t s = 0; s < numSeqs; ++s) {
            flatKeys[slots[s].item<int64_t>()].fill_(NAN);
            flatValues[slots[s].item<int64_t>()].fill_(NAN);
        }
        at::Tensor writeSlots = slots.clone();
        writeSlots[6] = -1;  // (its output then reads the NaN slot on both paths: left out of the comparison)
        const at::Tensor qkv = kt::randn({numSeqs, (kQHeads + 2 * kKvHeads) * kHeadDim}, 42, type);
        at::Tensor positions = at::randint(0, kMaxPos, {4, numSeqs}, kt::generator(43), at::kLong);
        for (int64_t s = 0; s < numSeqs; ++s) positions[0][s] = contexts[s] - 1;
        const std::vector<int> sections{16, 16, 16, 16};
        const at::Tensor qNorm = (kt::randn({kHeadDim}, 44) * 0.2 + 1.0).to(type);
        const at::Tensor kNorm = (kt::randn({kHeadDim}, 45) * 0.2 + 1.0).to(type);
        auto views = [&](const at::Tensor& t) {
            return std::array<at::Tensor, 3>{
                t.slice(1, 0, kQHeads * kHeadDim).view({-1, kQHeads, kHeadDim}),
                t.slice(1, kQHeads * kHeadDim, (kQHeads + kKvHeads) * kHeadDim).view({-1, kKvHeads, kHeadDim}),
                t.slice(1, (kQHeads + kKvHeads) * kHeadDim).view({-1, kKvHeads, kHeadDim})};
        };
        const double scale = 1.0 / std::sqrt(double(kHeadDim));
        const int64_t gridContext = kv.blockTable.size(1) * 16;
        // The reference: both CPU references in turn, in this dtype.
        const at::Tensor refQkv = qkv.clone(), refKeys = keys.clone(), refValues = values.clone();
        const auto [rq, rk, rv] = views(refQkv);
        const at::Tensor ref = at::full({numSeqs, kQHeads, kHeadDim}, NAN, qkv.options());
        lector::gpu::pagedDecodeAttentionRope(ref, rq, rk, rv, refKeys, refValues, kv.blockTable, kv.contextLens,
                                              gridContext, scale, 3, positions, cosSin, qNorm, kNorm, sections, 1e-6,
                                              writeSlots);
        std::vector<int64_t> kept;
        for (int64_t s = 0; s < numSeqs; ++s)
            if (s != 6) kept.push_back(s);
        const at::Tensor keep = at::tensor(kept, at::kLong);
        for (int64_t rowParts : {1, 3, 64}) {
            const at::Tensor gpuQkv = qkv.cuda(), gpuKeys = keys.cuda(), gpuValues = values.cuda();
            const auto [q, k, v] = views(gpuQkv);
            const at::Tensor out = at::full({numSeqs, kQHeads, kHeadDim}, NAN, gpuQkv.options());
            lector::gpu::pagedDecodeAttentionRope(out, q, k, v, gpuKeys, gpuValues, kv.blockTable.cuda(),
                                                  kv.contextLens.cuda(), gridContext, scale, rowParts, positions.cuda(),
                                                  cosSin.cuda(), qNorm.cuda(), kNorm.cuda(), sections, 1e-6,
                                                  writeSlots.cuda());
            const std::string name = kt::typeName(type) + " fused rope, row partitions " + std::to_string(rowParts);
            kt::expectClose(name, out.cpu().index_select(0, keep).to(at::kFloat),
                            ref.index_select(0, keep).to(at::kFloat), kt::nmseBound(type));
            // The K/V written at the slots (none at the slot of -1, which keeps its NaN).
            const at::Tensor written = slots.index_select(0, keep);
            kt::expectClose(name + ", keys written", gpuKeys.cpu().view({-1, kKvHeads, kHeadDim}).index_select(0, written).to(at::kFloat),
                            refKeys.view({-1, kKvHeads, kHeadDim}).index_select(0, written).to(at::kFloat),
                            kt::nmseBound(type));
            LECTOR_CHECK(at::equal(gpuValues.cpu().view({-1, kKvHeads, kHeadDim}).index_select(0, written),
                                   refValues.view({-1, kKvHeads, kHeadDim}).index_select(0, written)));
            LECTOR_CHECK(at::isnan(gpuKeys.cpu().view({-1, kKvHeads, kHeadDim})[slots[6].item<int64_t>()]).all().item<bool>());
        }
    }
}

LECTOR_TEST(cudaRejectsUnsupportedShapes)
{
    kt::requireCuda();
    const kt::PagedKv kv = kt::makePagedKv({5}, 8, 64, at::kHalf, 25);
    const at::Tensor query = kt::randn({1, 16, 64}, 26, at::kHalf).cuda();
    bool threw = false;
    try {
        lector::gpu::pagedDecodeAttention(at::empty_like(query), query, kv.keyCache.cuda(), kv.valueCache.cuda(),
                                          kv.blockTable.cuda(), kv.contextLens.cuda(), 5, 0.1);
    } catch (const c10::Error& e) {
        threw = std::string(e.what()).find("supported: 128") != std::string::npos;
    }
    LECTOR_CHECK(threw);
}

#endif  // LECTOR_HAVE_CUDA
