// Sampling: the reference against hand-known answers (penalised argmax, exact-k tie handling) and
// against the top-k softmax distribution it must sample from; the CUDA kernel against the reference
// token for token (greedy exactly; top-k up to float summation order at a CDF boundary) over the
// HunyuanOCR vocabulary (120818) in float32, float16 and bfloat16 logits.
#include <ATen/ATen.h>

#include <cmath>

#include "gpu/ref/sample_tokens_ref.h"
#include "gpu/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace kt = lector::test::kernels;
using lector::gpu::orderedKey;
using lector::gpu::penalizedLogit;

namespace {

constexpr int kVocab = 120818;

struct Batch {
    at::Tensor logits;       // [numSeqs, vocab]
    at::Tensor presence;     // [numSeqs, vocab] uint8
    at::Tensor temperature;  // [numSeqs] float32
    at::Tensor topK;         // [numSeqs] int32
    at::Tensor penalty;      // [numSeqs] float32
    at::Tensor seeds, offsets;  // [numSeqs] int64
};

Batch makeBatch(const at::Tensor& logits, std::vector<float> temperature, std::vector<int32_t> topK,
                std::vector<float> penalty, uint64_t seed)
{
    Batch b;
    const int64_t n = logits.size(0);
    b.logits = logits;
    b.presence = (at::rand(logits.sizes(), kt::generator(seed), at::kFloat) < 0.05).to(at::kByte);
    b.temperature = at::tensor(temperature, at::kFloat);
    b.topK = at::tensor(topK, at::kInt);
    b.penalty = at::tensor(penalty, at::kFloat);
    b.seeds = at::arange(n, at::kLong) * 7919 + int64_t(seed);
    b.offsets = at::zeros({n}, at::kLong);
    return b;
}

// Reference on CPU tensors; returns the tokens and updates presence when asked.
at::Tensor runReference(const Batch& b, bool updatePresence)
{
    const at::Tensor tokens = at::full({b.logits.size(0)}, -1, at::kLong);
    lector::gpu::SampleTokensParams p;
    p.dtype = kt::toDType(b.logits.scalar_type());
    p.logits = b.logits.data_ptr();
    p.presence = b.presence.defined() ? b.presence.data_ptr<uint8_t>() : nullptr;
    p.temperature = b.temperature.data_ptr<float>();
    p.topK = b.topK.data_ptr<int32_t>();
    p.repetitionPenalty = b.penalty.data_ptr<float>();
    p.seeds = b.seeds.data_ptr<int64_t>();
    p.offsets = b.offsets.data_ptr<int64_t>();
    p.outTokens = tokens.data_ptr<int64_t>();
    p.logitsStride = b.logits.stride(0);
    p.presenceStride = b.presence.defined() ? b.presence.stride(0) : 0;
    p.numSeqs = static_cast<int>(b.logits.size(0));
    p.vocabSize = static_cast<int>(b.logits.size(1));
    p.updatePresence = updatePresence;
    lector::gpu::ref::sampleTokensRef(p);
    return tokens;
}

// Penalised float32 logits of row s, computed independently of the reference with libtorch.
at::Tensor penalised(const Batch& b, int64_t s)
{
    const at::Tensor l = b.logits[s].to(at::kFloat);
    const float pen = b.penalty[s].item<float>();
    const at::Tensor present = b.presence[s].to(at::kBool);
    return at::where(present, at::where(l > 0, l / pen, l * pen), l);
}

// How far (as a fraction of the total weight) u lies outside token's slice of the top-k CDF in
// vocabulary order; 0 when inside. Used to accept a CUDA/reference disagreement that only float
// summation order explains.
[[maybe_unused]] double cdfDistance(const at::Tensor& row, int k, float temperature, float u,
                                    int64_t token)  // CUDA cases only
{
    const int n = static_cast<int>(row.size(0));
    auto l = row.accessor<float, 1>();
    std::vector<uint32_t> keys(n);
    for (int i = 0; i < n; ++i) keys[i] = orderedKey(l[i]);
    std::vector<uint32_t> sorted = keys;
    std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<uint32_t>());
    const uint32_t kth = sorted[k - 1];
    int ties = k;
    for (uint32_t key : keys) ties -= key > kth;
    double maxLogit = -INFINITY, total = 0.0, before = -1.0, after = -1.0;
    std::vector<char> sel(n);
    for (int i = 0; i < n; ++i) {
        sel[i] = keys[i] > kth || (keys[i] == kth && ties-- > 0);
        if (sel[i]) maxLogit = std::max<double>(maxLogit, l[i]);
    }
    for (int i = 0; i < n; ++i) {
        if (!sel[i]) continue;
        const double w = std::exp((l[i] - maxLogit) / temperature);
        if (i == token) before = total;
        total += w;
        if (i == token) after = total;
    }
    if (before < 0) return 1.0;  // not even selected
    const double target = u * total;
    return target < before ? (before - target) / total : target >= after ? (target - after) / total : 0.0;
}

}  // namespace

LECTOR_TEST(referenceGreedyIsThePenalisedArgmax)
{
    const at::Tensor logits = kt::randn({4, 1000}, 141, at::kFloat, 3.0);
    Batch b = makeBatch(logits, {0.0f, 0.0f, 0.0f, 1.0f}, {0, 1, 50, 1}, {1.3f, 1.0f, 2.0f, 1.5f}, 142);
    // Make penalties matter: mark each row's unpenalised argmax present.
    const at::Tensor top = logits.argmax(1);
    for (int64_t s = 0; s < 4; ++s) b.presence[s][top[s].item<int64_t>()] = 1;
    const at::Tensor before = b.presence.clone();
    std::vector<int64_t> wants;
    for (int64_t s = 0; s < 4; ++s) wants.push_back(penalised(b, s).argmax().item<int64_t>());
    const at::Tensor tokens = runReference(b, true);
    for (int64_t s = 0; s < 4; ++s) {
        const int64_t want = wants[s];
        LECTOR_CHECK_EQ(tokens[s].item<int64_t>(), want);
        LECTOR_CHECK_EQ(b.presence[s][want].item<uint8_t>(), uint8_t(1));
    }
    // Nothing but the chosen tokens changed.
    LECTOR_CHECK((b.presence != before).sum().item<int64_t>() <= 4);
}

LECTOR_TEST(referenceTopKTakesExactlyKWithTiesInVocabularyOrder)
{
    // k = 3 over [1, 3, 2, 2, 2, 0]: the top 3 are index 1 and the first two 2.0s (indices 2, 3).
    const at::Tensor logits = at::tensor(std::vector<float>{1, 3, 2, 2, 2, 0}, at::kFloat).view({1, 6});
    Batch b = makeBatch(logits, {1.0f}, {3}, {1.0f}, 151);
    b.presence.zero_();
    std::vector<int> counts(6, 0);
    for (int64_t offset = 0; offset < 3000; ++offset) {
        b.offsets[0] = offset;
        ++counts[runReference(b, false)[0].item<int64_t>()];
    }
    LECTOR_CHECK_EQ(counts[0] + counts[4] + counts[5], 0);
    // p(3.0) = e / (e + 2) = 0.576; each 2.0 gets 0.212.
    LECTOR_CHECK_NEAR(counts[1] / 3000.0, std::exp(1.0) / (std::exp(1.0) + 2.0), 0.03);
    LECTOR_CHECK_NEAR(counts[2] / 3000.0, 1.0 / (std::exp(1.0) + 2.0), 0.03);
    LECTOR_CHECK_NEAR(counts[3] / 3000.0, 1.0 / (std::exp(1.0) + 2.0), 0.03);
}

LECTOR_TEST(referenceTopKFollowsTheTemperedSoftmax)
{
    const at::Tensor logits = kt::randn({1, 12}, 161, at::kFloat, 1.5);
    Batch b = makeBatch(logits, {0.8f}, {5}, {1.2f}, 162);
    const at::Tensor pen = penalised(b, 0);
    const auto [topValues, topIndices] = pen.topk(5);
    const at::Tensor probs = at::softmax(topValues.to(at::kDouble) / 0.8, 0);
    std::vector<int> counts(12, 0);
    const int draws = 8000;
    for (int64_t offset = 0; offset < draws; ++offset) {
        b.offsets[0] = offset;
        ++counts[runReference(b, false)[0].item<int64_t>()];
    }
    int inTop = 0;
    for (int64_t j = 0; j < 5; ++j) {
        const int64_t token = topIndices[j].item<int64_t>();
        const double p = probs[j].item<double>(), freq = counts[token] / double(draws);
        inTop += counts[token];
        LECTOR_CHECK_NEAR(freq, p, 5.0 * std::sqrt(p * (1 - p) / draws) + 1e-3);
    }
    LECTOR_CHECK_EQ(inTop, draws);
}

// presenceRows: sequence s reads and marks row presenceRows[s] of a larger table (the device sampler's
// per-request rows), with the same tokens as the reference over a table gathered in sequence order;
// rows no sequence names stay untouched. CPU (the reference through gpu::sampleTokens) and CUDA.
LECTOR_TEST(presenceRowsSelectEachSequencesRow)
{
    const int64_t n = 4, rows = 9;
    const at::Tensor logits = kt::randn({n, kVocab}, 191, at::kFloat, 4.0);
    const Batch b = makeBatch(logits, {0.0f, 0.0f, 0.8f, 0.0f}, {0, 1, 40, 0}, {2.0f, 1.5f, 1.3f, 3.0f}, 192);
    const at::Tensor table = (at::rand({rows, kVocab}, kt::generator(193), at::kFloat) < 0.05).to(at::kByte);
    const at::Tensor rowIds = at::tensor(std::vector<int64_t>{7, 2, 5, 0}, at::kLong);
    // Sequence 0's best token is present in its row (7) and absent from row 0, so reading the wrong row
    // changes its greedy choice.
    const int64_t best0 = logits[0].argmax().item<int64_t>();
    table[7][best0] = 1;
    table[0][best0] = 0;
    // Want: the reference over the gathered rows (sequence s <- table[rowIds[s]]).
    Batch gathered = b;
    gathered.presence = table.index_select(0, rowIds).contiguous();
    const at::Tensor want = runReference(gathered, true);
    at::Tensor wantTable = table.clone();
    wantTable.index_copy_(0, rowIds, gathered.presence);
    // Without the rows (sequence s <- row s) the first greedy token differs.
    Batch own = b;
    own.presence = table.narrow(0, 0, n).clone();
    LECTOR_CHECK(!at::equal(runReference(own, false), want));

    for (bool cuda : {false, true}) {
#ifndef LECTOR_HAVE_CUDA
        if (cuda) continue;
#else
        if (cuda && !at::hasCUDA()) continue;
#endif
        const c10::Device dev = cuda ? c10::Device(at::kCUDA) : c10::Device(at::kCPU);
        const at::Tensor t = table.clone().to(dev);  // a copy on the CPU too: the call marks its rows
        const at::Tensor tokens = at::full({n}, -1, at::TensorOptions().dtype(at::kLong).device(dev));
        lector::gpu::sampleTokens(tokens, b.logits.to(dev), t, b.temperature.to(dev), b.topK.to(dev), b.penalty.to(dev),
                                  b.seeds.to(dev), b.offsets.to(dev), true, rowIds.to(dev));
        LECTOR_CHECK_MSG(at::equal(tokens.cpu(), want), (cuda ? "cuda" : "cpu") << " tokens differ");
        LECTOR_CHECK_MSG(at::equal(t.cpu(), wantTable), (cuda ? "cuda" : "cpu") << " presence table differs");
    }
}

// The split of the vocabulary over CTAs: one CTA per sequence from 264 sequences on, at most one per
// 4096-token pass, and never a slice without tokens (the launcher refuses those).
LECTOR_TEST(vocabularySplitLeavesNoSliceEmpty)
{
    using lector::gpu::sampleTokensSlices;
    LECTOR_CHECK_EQ(sampleTokensSlices(1, kVocab), 30);   // 30 passes of 4096 tokens cover 120818
    LECTOR_CHECK_EQ(sampleTokensSlices(32, kVocab), 8);   // 9 wanted; 4 passes each need only 8
    LECTOR_CHECK_EQ(sampleTokensSlices(264, kVocab), 1);
    LECTOR_CHECK_EQ(sampleTokensSlices(1, 100), 1);
    for (int vocab : {1, 4095, 4096, 4097, 50000, kVocab, 262144}) {
        const int chunks = (vocab + 4095) / 4096;
        for (int n = 1; n <= 300; ++n) {
            const int s = sampleTokensSlices(n, vocab);
            LECTOR_CHECK(s >= 1 && s <= chunks);
            const int perSlice = (chunks + s - 1) / s;  // the kernel's slice length, in passes
            LECTOR_CHECK_MSG((s - 1) * perSlice < chunks, "vocab " << vocab << ", " << n << " sequences: empty slice");
        }
    }
}

// Decode inputs of the next step, advanced where each token is drawn (decode graphs of several steps):
// the values a host would write, by hand. Sequence 0 crosses into its table's second block, sequence 1
// stays inside a block, sequence 2 is a graph's padding row (slot -1: nothing moves), sequence 3 has no
// block yet for its next token (slot -1 from then on). Then CUDA against the reference on random inputs:
// 1, 3 and 37 sequences (30, 30 and 8 CTAs a sequence), 4 position axes, top-k draws and greedy.
struct Advance {
    at::Tensor lens, positions, slots, table, history;
    lector::gpu::SampleAdvance on(const at::Device& d) const
    {
        return {lens.to(d), positions.to(d), slots.to(d), table.to(d), history.to(d)};
    }
};

LECTOR_TEST(advanceMovesEachSequenceToItsNextStep)
{
    const int64_t n = 4;
    const Batch b = makeBatch(kt::randn({n, kVocab}, 501, at::kFloat, 4.0), {0, 0, 0, 0}, {0, 0, 0, 0},
                              {1, 1, 1, 1}, 502);
    Advance a;
    a.lens = at::tensor(std::vector<int32_t>{16, 5, 1, 32}, at::kInt);
    a.positions = at::tensor(std::vector<int64_t>{15, 4, 0, 31, 15, 4, 0, 31, 15, 4, 0, 31}, at::kLong).view({3, n});
    a.slots = at::tensor(std::vector<int64_t>{7 * 16 + 15, 2 * 16 + 4, -1, 9 * 16 + 15}, at::kLong);
    a.table = at::tensor(std::vector<int32_t>{7, 3, 2, 0, 0, 0, 9, 4}, at::kInt).view({n, 2});
    a.history = at::full({n}, -1, at::kLong);
    const at::Tensor offsets = b.offsets.clone();
    const at::Tensor tokens = at::full({n}, -1, at::kLong);
    const lector::gpu::SampleAdvance adv = a.on(at::kCPU);
    lector::gpu::sampleTokens(tokens, b.logits, b.presence, b.temperature, b.topK, b.penalty, b.seeds, offsets,
                              false, at::Tensor(), at::Tensor(), &adv);
    LECTOR_CHECK(at::equal(tokens, b.logits.argmax(1)));  // penalty 1: the plain argmax
    LECTOR_CHECK(at::equal(adv.history, tokens));
    LECTOR_CHECK(at::equal(adv.contextLens, at::tensor(std::vector<int32_t>{17, 6, 1, 33}, at::kInt)));
    for (int64_t axis = 0; axis < 3; ++axis)
        LECTOR_CHECK(at::equal(adv.positions[axis], at::tensor(std::vector<int64_t>{16, 5, 0, 32}, at::kLong)));
    // Token 16 of sequence 0 lives in its second block (3), token 5 of sequence 1 in its first (2);
    // sequence 3's token 32 would need a third entry.
    LECTOR_CHECK(at::equal(adv.slots, at::tensor(std::vector<int64_t>{3 * 16 + 0, 2 * 16 + 5, -1, -1}, at::kLong)));
    LECTOR_CHECK(at::equal(offsets, at::tensor(std::vector<int64_t>{1, 1, 0, 1}, at::kLong)));

#ifdef LECTOR_HAVE_CUDA
    if (!at::hasCUDA()) return;
    for (int64_t rows : {1, 3, 37}) {
        const int64_t width = 5;
        const std::vector<float> temps(static_cast<size_t>(rows), 0.7f), pen(static_cast<size_t>(rows), 1.2f);
        std::vector<int32_t> topK(static_cast<size_t>(rows), 20);
        topK[0] = 0;
        Batch r = makeBatch(kt::randn({rows, kVocab}, 600 + rows, at::kHalf, 3.0), temps, topK, pen, 601 + rows);
        r.offsets = at::randint(0, 1000, {rows}, kt::generator(602 + rows), at::kLong);
        Advance x;
        x.lens = at::randint(1, int(width * 16) + 8, {rows}, kt::generator(603 + rows), at::kInt);
        x.positions = (x.lens.to(at::kLong) - 1).unsqueeze(0).repeat({4, 1}).contiguous();
        x.table = at::randint(0, 500, {rows, width}, kt::generator(604 + rows), at::kInt);
        x.slots = at::randint(0, 8000, {rows}, kt::generator(605 + rows), at::kLong);
        x.slots[rows - 1] = -1;
        x.history = at::full({rows}, -1, at::kLong);
        // (copies to the device first: the reference advances x's own tensors)
        const at::Device cuda(at::kCUDA);
        const at::Tensor gpuOffsets = r.offsets.to(cuda), gpuTokens = at::full({rows}, -1, at::TensorOptions().dtype(at::kLong).device(cuda));
        const at::Tensor gpuPresence = r.presence.to(cuda);
        const lector::gpu::SampleAdvance onGpu = x.on(cuda);
        const at::Tensor cpuOffsets = r.offsets.clone(), cpuTokens = at::full({rows}, -1, at::kLong);
        const at::Tensor cpuPresence = r.presence.clone();
        const lector::gpu::SampleAdvance onCpu = x.on(at::kCPU);
        const int32_t padLen = x.lens[rows - 1].item<int32_t>();
        lector::gpu::sampleTokens(cpuTokens, r.logits, cpuPresence, r.temperature, r.topK, r.penalty, r.seeds,
                                  cpuOffsets, true, at::Tensor(), at::Tensor(), &onCpu);
        lector::gpu::sampleTokens(gpuTokens, r.logits.to(cuda), gpuPresence, r.temperature.to(cuda), r.topK.to(cuda),
                                  r.penalty.to(cuda), r.seeds.to(cuda), gpuOffsets, true, at::Tensor(), at::Tensor(), &onGpu);
        // Top-k draws may differ at a CDF boundary (float sums in another order); each row's advance
        // follows its own token, so compare everything but those rows' tokens and marks.
        LECTOR_CHECK_MSG(at::equal(onGpu.history.cpu(), gpuTokens.cpu()), rows << " sequences: history is not the tokens");
        LECTOR_CHECK_MSG(at::equal(onGpu.contextLens.cpu(), onCpu.contextLens), rows << " sequences: context lengths differ");
        LECTOR_CHECK_MSG(at::equal(onGpu.positions.cpu(), onCpu.positions), rows << " sequences: positions differ");
        LECTOR_CHECK_MSG(at::equal(onGpu.slots.cpu(), onCpu.slots), rows << " sequences: slots differ");
        LECTOR_CHECK_MSG(at::equal(gpuOffsets.cpu(), cpuOffsets), rows << " sequences: draw counters differ");
        LECTOR_CHECK_MSG(gpuTokens.cpu()[0].item<int64_t>() == cpuTokens[0].item<int64_t>(), rows << " sequences: greedy row differs");
        LECTOR_CHECK(onCpu.slots[rows - 1].item<int64_t>() == -1 && onCpu.contextLens[rows - 1].item<int32_t>() == padLen);
        std::printf("  %lld sequences: advanced inputs equal the reference\n", static_cast<long long>(rows));
    }
#endif
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReferenceOverTheVocabulary)
{
    kt::requireCuda();
    const std::vector<float> temperature{0.0f, 1.0f, 0.7f, 1.0f, 1.3f, 0.9f, 0.5f};
    const std::vector<int32_t> topK{0, 1, 50, 0, 5, 1000, 20};
    const std::vector<float> penalty{1.03f, 1.0f, 1.03f, 1.0f, 2.0f, 1.1f, 1.03f};
    for (at::ScalarType type : kt::floatTypes()) {
        // Scaled so float16 / bfloat16 rounding creates many ties, also at the k-th value.
        const at::Tensor logits = kt::randn({7, kVocab}, 171, type, 4.0);
        Batch b = makeBatch(logits, temperature, topK, penalty, 172);
        int mismatches = 0, boundary = 0;
        // One scratch for all steps, as the device sampler keeps it: each launch must leave its tickets
        // at zero for the next (7 sequences split their argmax over several CTAs).
        LECTOR_CHECK(lector::gpu::sampleTokensSlices(7, kVocab) > 1);
        const at::Tensor scratch =
            at::zeros({lector::gpu::sampleScratchWords(7, kVocab)}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
        for (int64_t step = 0; step < 12; ++step) {
            b.offsets.fill_(step * 3 + 1);
            const at::Tensor presence = b.presence.cuda();
            const at::Tensor tokens = at::full({7}, -1, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
            lector::gpu::sampleTokens(tokens, b.logits.cuda(), presence, b.temperature.cuda(), b.topK.cuda(),
                                      b.penalty.cuda(), b.seeds.cuda(), b.offsets.cuda(), true, at::Tensor(), scratch);
            const at::Tensor got = tokens.cpu();
            Batch before = b;  // the penalties this step used, before the reference marks its tokens
            before.presence = b.presence.clone();
            const at::Tensor want = runReference(b, true);
            for (int64_t s = 0; s < 7; ++s) {
                const int64_t g = got[s].item<int64_t>(), w = want[s].item<int64_t>();
                LECTOR_CHECK_MSG(g >= 0 && g < kVocab, "token " << g);
                LECTOR_CHECK_MSG(presence[s][g].item<uint8_t>() == 1, "presence not updated for row " << s);
                if (g == w) continue;
                ++mismatches;
                const bool greedy = temperature[s] <= 0 || topK[s] == 1;
                LECTOR_CHECK_MSG(!greedy, kt::typeName(type) << " greedy row " << s << ": got " << g << ", want " << w);
                const int k = topK[s] <= 0 ? kVocab : topK[s];
                const float u = lector::gpu::uniformDraw(b.seeds[s].item<int64_t>(), b.offsets[s].item<int64_t>());
                const double d = cdfDistance(penalised(before, s), k, temperature[s], u, g);
                LECTOR_CHECK_MSG(d < 1e-5, kt::typeName(type) << " row " << s << " step " << step << ": got " << g
                                                               << ", want " << w << ", CDF distance " << d);
                ++boundary;
            }
        }
        const at::Tensor tickets = scratch.view({7, lector::gpu::sampleTokensScratchStride(kVocab)}).select(1, 0);
        LECTOR_CHECK_MSG(tickets.eq(0).all().item<bool>(), "tickets not returned to zero");
        std::printf("  %s: 84 draws, %d differ from the reference, all within 1e-5 of a CDF boundary (%d)\n",
                    kt::typeName(type).c_str(), mismatches, boundary);
    }
}

// Greedy with penalties at batch sizes whose argmax is split over 30, 8 and 1 CTAs per sequence (and
// float16 logits scaled so that ties are common, also between slices): exactly the reference's tokens.
// The winner is planted in different slices (first, middle, last token of the vocabulary) so a slice
// that is skipped or a reduction that takes the wrong one shows.
LECTOR_TEST(cudaGreedyMatchesReferenceWhateverTheSplit)
{
    kt::requireCuda();
    for (int64_t n : {1, 32, 300}) {
        const int slices = lector::gpu::sampleTokensSlices(static_cast<int>(n), kVocab);
        const at::Tensor logits = kt::randn({n, kVocab}, 201 + n, at::kHalf, 3.0);
        const std::vector<float> zero(static_cast<size_t>(n), 0.0f), pen(static_cast<size_t>(n), 1.3f);
        const std::vector<int32_t> topK(static_cast<size_t>(n), 0);
        Batch b = makeBatch(logits, zero, topK, pen, 202);
        for (int64_t s = 0; s < n; ++s) {
            const int64_t planted = s % 3 == 0 ? 0 : s % 3 == 1 ? kVocab / 2 + s : kVocab - 1;
            b.logits[s][planted] = 30.0f;
            b.presence[s][planted] = 0;
        }
        const at::Tensor presence = b.presence.cuda();
        const at::Tensor tokens = at::full({n}, -1, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
        lector::gpu::sampleTokens(tokens, b.logits.cuda(), presence, b.temperature.cuda(), b.topK.cuda(),
                                  b.penalty.cuda(), b.seeds.cuda(), b.offsets.cuda(), true);
        const at::Tensor want = runReference(b, true);
        LECTOR_CHECK_MSG(at::equal(tokens.cpu(), want), n << " sequences (" << slices << " slices): tokens differ");
        LECTOR_CHECK_MSG(at::equal(presence.cpu(), b.presence), n << " sequences: presence differs");
        // Without the planted winners the choice comes from the penalised random logits: again exact.
        Batch plain = makeBatch(kt::randn({n, kVocab}, 301 + n, at::kHalf, 3.0), zero, topK, pen, 302);
        const at::Tensor p2 = plain.presence.cuda();
        lector::gpu::sampleTokens(tokens, plain.logits.cuda(), p2, plain.temperature.cuda(), plain.topK.cuda(),
                                  plain.penalty.cuda(), plain.seeds.cuda(), plain.offsets.cuda(), false);
        LECTOR_CHECK_MSG(at::equal(tokens.cpu(), runReference(plain, false)), n << " sequences: random tokens differ");
        std::printf("  %lld sequences: %d CTAs each, tokens equal the reference\n", static_cast<long long>(n), slices);
    }
}

// The device sampler keeps one scratch for every step, whose batch size changes from step to step: a
// launch must find its tickets at zero wherever the previous launch (of another size) put its results.
LECTOR_TEST(oneScratchServesBatchesOfEverySize)
{
    kt::requireCuda();
    const at::Tensor scratch =
        at::zeros({lector::gpu::sampleScratchWords(40, kVocab)}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
    int64_t seed = 400;
    for (int64_t n : {1, 2, 7, 40, 3, 1, 2}) {
        const std::vector<float> zero(static_cast<size_t>(n), 0.0f), pen(static_cast<size_t>(n), 1.5f);
        const std::vector<int32_t> topK(static_cast<size_t>(n), 0);
        // (two seeds in order: both ++seed inside one call would be unsequenced)
        const int64_t logitSeed = ++seed, batchSeed = ++seed;
        const Batch b = makeBatch(kt::randn({n, kVocab}, logitSeed, at::kFloat, 4.0), zero, topK, pen, batchSeed);
        const at::Tensor tokens = at::full({n}, -1, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
        lector::gpu::sampleTokens(tokens, b.logits.cuda(), b.presence.cuda(), b.temperature.cuda(), b.topK.cuda(),
                                  b.penalty.cuda(), b.seeds.cuda(), b.offsets.cuda(), false, at::Tensor(), scratch);
        LECTOR_CHECK_MSG(at::equal(tokens.cpu(), runReference(b, false)), n << " sequences after other sizes: tokens differ");
    }
}

#endif  // LECTOR_HAVE_CUDA
