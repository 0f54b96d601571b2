// HunyuanOCR text side, pieces checked against hand-known values: the spec's toy prompt (§5.1), the
// XD-RoPE base, frequencies and section layout (§5.3, §13), a rotation worked by hand, the KV cache's
// chunked causal GQA attention against a naive loop, the sampler (penalty arithmetic, greedy, top-k,
// top-p, temperature, seeded draws) and the runaway-repeat guard.
#include "tests/support/lector_test.h"

#include <c10/core/InferenceMode.h>

#include <cmath>
#include <map>
#include <numeric>

#include "core/model/hunyuan/decoder.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/prompt.h"
#include "core/model/hunyuan/sampler.h"
#include "core/model/hunyuan/xdrope.h"

using namespace lector::model::hunyuan;

namespace {

std::vector<int64_t> row(const at::Tensor& t, int64_t r)
{
    const at::Tensor x = t[r].to(at::kLong).contiguous();
    return std::vector<int64_t>(x.data_ptr<int64_t>(), x.data_ptr<int64_t>() + x.numel());
}

at::Tensor logitsOf(const std::vector<float>& v)
{
    return at::tensor(at::ArrayRef<float>(v.data(), v.size()));
}

}  // namespace

// --- prompt layout and positions ---

LECTOR_TEST(toyPromptFromSpecHasExpectedIdsAndPositions)
{
    // Spec §5.1 (ncnn prompt_builder_test): grid 2x4 patches -> R=1, C=2, T_img=5; "Hello, world!".
    const TokenIds tokens;
    const ImageGrid grid{2, 4};
    LECTOR_CHECK_EQ(imageTokenCount(grid), 5);
    const auto ids = buildInputIds(tokens, {16883, 11, 2385, 0}, {imageTokenCount(grid)});
    const std::vector<int> expectedIds = {120000, 120021, 120118, 120120, 120120, 120120, 120120,
                                          120120, 120119, 16883,  11,     2385,   0,      120006};
    LECTOR_CHECK(ids == expectedIds);

    auto pos = buildPositionIds(ids, tokens, {grid});
    LECTOR_CHECK_MSG(pos.ok(), pos.error().message);
    LECTOR_CHECK_EQ(pos->sizes().vec(), (std::vector<int64_t>{4, 14}));
    const std::vector<int64_t> p = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    const std::vector<int64_t> w = {0, 1, 2, 3, 0, 1, 2, 7, 8, 9, 10, 11, 12, 13};
    const std::vector<int64_t> h = {0, 1, 2, 3, 0, 0, 0, 7, 8, 9, 10, 11, 12, 13};
    LECTOR_CHECK(row(*pos, 0) == p);
    LECTOR_CHECK(row(*pos, 1) == w);
    LECTOR_CHECK(row(*pos, 2) == h);
    LECTOR_CHECK(row(*pos, 3) == h);  // t = image ordinal 0 on the grid, like h here
}

LECTOR_TEST(secondImageGetsOrdinalOneOnAxisT)
{
    const TokenIds tokens;
    const ImageGrid a{2, 4}, b{4, 2};  // T_img 5 and 2*(1+1)+2 = 6
    LECTOR_CHECK_EQ(imageTokenCount(b), 6);
    const auto ids = buildInputIds(tokens, {7}, {5, 6}, /*withSystemTurn=*/false);
    // bos, [start, 5 x image, end], [start, 6 x image, end], 7, user
    LECTOR_CHECK_EQ(ids.size(), size_t(1 + 7 + 8 + 2));
    auto pos = buildPositionIds(ids, tokens, {a, b});
    LECTOR_CHECK_MSG(pos.ok(), pos.error().message);
    // Second image: start at 8, image_begin at 9, grid 10..13 (rows 0,0,1,1; cols 0,1,0,1), end row 14.
    const std::vector<int64_t> w = {0, 1, 2, 0, 1, 2, 6, 7, 8, 9, 0, 1, 0, 1, 14, 15, 16, 17};
    const std::vector<int64_t> h = {0, 1, 2, 0, 0, 0, 6, 7, 8, 9, 0, 0, 1, 1, 14, 15, 16, 17};
    const std::vector<int64_t> t = {0, 1, 2, 0, 0, 0, 6, 7, 8, 9, 1, 1, 1, 1, 14, 15, 16, 17};
    LECTOR_CHECK(row(*pos, 1) == w);
    LECTOR_CHECK(row(*pos, 2) == h);
    LECTOR_CHECK(row(*pos, 3) == t);
    std::vector<int64_t> seq(18);
    std::iota(seq.begin(), seq.end(), 0);
    LECTOR_CHECK(row(*pos, 0) == seq);
}

LECTOR_TEST(decodePositionsAreTheSequenceIndexOnEveryAxis)
{
    const at::Tensor p = sequentialPositionIds(335, 2);
    LECTOR_CHECK_EQ(p.sizes().vec(), (std::vector<int64_t>{4, 2}));
    for (int a = 0; a < 4; ++a) LECTOR_CHECK(row(p, a) == (std::vector<int64_t>{335, 336}));
}

// --- XD-RoPE ---

LECTOR_TEST(ropeBaseAndFrequenciesMatchSpecNumbers)
{
    const XdRope rope(128, 10000.0, 1000.0, {16, 16, 16, 16});
    LECTOR_CHECK_NEAR(rope.base(), 11158839.925, 1e-2);  // spec §1.2 / §13
    const float* inv = rope.invFreq().data_ptr<float>();
    LECTOR_CHECK_NEAR(inv[0], 1.0, 0.0);
    LECTOR_CHECK_NEAR(inv[1] / 0.7760344, 1.0, 2e-6);
    LECTOR_CHECK_NEAR(inv[16] / 0.0173020, 1.0, 2e-5);
    LECTOR_CHECK_NEAR(inv[63] / 1.1548e-7, 1.0, 1e-4);
    // Tiny fixture model: head_dim 16 -> base 10000 * 1000^(16/14).
    const XdRope tiny(16, 10000.0, 1000.0, {2, 2, 2, 2});
    LECTOR_CHECK_NEAR(tiny.base() / (10000.0 * std::pow(1000.0, 16.0 / 14.0)), 1.0, 1e-12);
}

LECTOR_TEST(frequencyJUsesAxisJOverSectionInBothHalves)
{
    const XdRope rope(128, 10000.0, 1000.0, {16, 16, 16, 16});
    const at::Tensor axis = rope.axisOfFrequency();
    for (int j = 0; j < 64; ++j) LECTOR_CHECK_EQ(axis[j].item<int64_t>(), int64_t(j / 16));
    // Positions (p, w, h, t) = (100, 1, 2, 3): dims {0-15, 64-79} rotate by p, {16-31, 80-95} by w, ...
    const at::Tensor pos = at::tensor(at::ArrayRef<int64_t>({100, 1, 2, 3})).view({4, 1});
    auto [cos, sin] = rope.cosSin(pos);
    const float* inv = rope.invFreq().data_ptr<float>();
    const int64_t axisPos[4] = {100, 1, 2, 3};
    for (int d = 0; d < 128; ++d) {
        const int j = d % 64;
        const double angle = static_cast<double>(static_cast<float>(axisPos[j / 16]) * inv[j]);
        LECTOR_CHECK_NEAR(cos[0][d].item<float>(), std::cos(angle), 2e-6);
        LECTOR_CHECK_NEAR(sin[0][d].item<float>(), std::sin(angle), 2e-6);
    }
}

LECTOR_TEST(rotationWorkedByHand)
{
    // head_dim 4, two axes of one frequency each, alpha 1: inv_freq = {1, 1/100}.
    const XdRope rope(4, 10000.0, 1.0, {1, 1});
    const at::Tensor pos = at::tensor(at::ArrayRef<int64_t>({3, 5})).view({2, 1});  // p = 3, w = 5
    auto [cos, sin] = rope.cosSin(pos);
    const at::Tensor x = at::tensor(at::ArrayRef<float>({1, 2, 3, 4})).view({1, 1, 4});
    const at::Tensor y = XdRope::apply(x, cos, sin);
    const double a0 = 3.0, a1 = 0.05;
    const double expected[4] = {1 * std::cos(a0) - 3 * std::sin(a0), 2 * std::cos(a1) - 4 * std::sin(a1),
                                3 * std::cos(a0) + 1 * std::sin(a0), 4 * std::cos(a1) + 2 * std::sin(a1)};
    for (int d = 0; d < 4; ++d) LECTOR_CHECK_NEAR(y[0][0][d].item<float>(), expected[d], 1e-5);
}

LECTOR_TEST(bf16TablesAreRoundedToBf16Values)
{
    const XdRope rope(16, 10000.0, 1000.0, {2, 2, 2, 2});
    const at::Tensor pos = sequentialPositionIds(0, 50);
    auto [cos, sin] = rope.cosSin(pos, at::kBFloat16);
    LECTOR_CHECK(at::equal(cos, cos.to(at::kBFloat16).to(at::kFloat)));
    auto [cosF, sinF] = rope.cosSin(pos);
    LECTOR_CHECK((cos - cosF).abs().max().item<float>() <= 4e-3f);  // bf16 has 8 significant bits
}

// --- KV cache attention vs a naive loop ---

LECTOR_TEST(cachedAttentionMatchesNaiveCausalGqaAcrossChunksAndSteps)
{
    c10::InferenceMode inference;
    const int heads = 4, kvHeads = 2, d = 8;
    at::manual_seed(7);
    ContiguousKvCache cache(1, kvHeads, d, /*reserveTokens=*/4);  // forces several regrowths
    std::vector<at::Tensor> allK, allV;
    const double scale = 1.0 / std::sqrt(double(d));
    for (int64_t n : {300, 1, 7, 1}) {  // 300 crosses the 256-query chunk
        const at::Tensor q = at::randn({n, heads, d}), k = at::randn({n, kvHeads, d}), v = at::randn({n, kvHeads, d});
        const int64_t past = cache.numTokens();
        const at::Tensor out = cache.appendAndAttend(0, q, k, v, scale);
        cache.advance(n);
        allK.push_back(k.to(at::kDouble));
        allV.push_back(v.to(at::kDouble));
        const at::Tensor K = at::cat(allK), V = at::cat(allV);  // [past + n, kvHeads, d]
        auto ka = K.accessor<double, 3>();
        auto va = V.accessor<double, 3>();
        const at::Tensor qd = q.to(at::kDouble);
        auto qa = qd.accessor<double, 3>();
        double worst = 0;
        for (int64_t i = 0; i < n; ++i) {
            for (int h = 0; h < heads; ++h) {
                const int kv = h / (heads / kvHeads);
                const int64_t visible = past + i + 1;
                std::vector<double> s(static_cast<size_t>(visible));
                double mx = -1e300;
                for (int64_t j = 0; j < visible; ++j) {
                    double dot = 0;
                    for (int c = 0; c < d; ++c) dot += qa[i][h][c] * ka[j][kv][c];
                    s[j] = dot * scale;
                    mx = std::max(mx, s[j]);
                }
                double sum = 0;
                for (auto& e : s) sum += (e = std::exp(e - mx));
                for (int c = 0; c < d; ++c) {
                    double o = 0;
                    for (int64_t j = 0; j < visible; ++j) o += s[j] / sum * va[j][kv][c];
                    worst = std::max(worst, std::fabs(o - out[i][h][c].item<double>()));
                }
            }
        }
        LECTOR_CHECK_MSG(worst < 1e-5, "n " << n << " past " << past << ": max abs error " << worst);
    }
    LECTOR_CHECK_EQ(cache.numTokens(), int64_t(309));
    LECTOR_CHECK(cache.capacity() >= 309);
}

// --- sampler ---

LECTOR_TEST(repetitionPenaltyArithmeticOnHandValues)
{
    std::vector<float> l = {2.06f, -1.0f, 0.5f, 3.0f, 0.0f};
    applyRepetitionPenalty(l.data(), 5, {0, 1, 1, 4, 99, -3}, 1.03f);  // duplicates and out-of-range ids
    LECTOR_CHECK_NEAR(l[0], 2.0, 1e-6);    // positive: divided
    LECTOR_CHECK_NEAR(l[1], -1.03, 1e-6);  // negative: multiplied, once despite the duplicate
    LECTOR_CHECK_EQ(l[2], 0.5f);           // not in the sequence
    LECTOR_CHECK_EQ(l[3], 3.0f);
    LECTOR_CHECK_EQ(l[4], 0.0f);           // zero: 0 * 1.03
}

LECTOR_TEST(greedyAppliesPenaltyAndSwitchesOff)
{
    const at::Tensor logits = logitsOf({1.0f, 1.02f, -5.0f});
    Sampler withPenalty(SamplingConfig{});  // greedy, 1.03
    LECTOR_CHECK_EQ(withPenalty.sample(logits, {1}), 0);  // 1.02 / 1.03 = 0.990 < 1.0
    SamplingConfig off;
    off.repetitionPenalty = 1.0f;
    Sampler without(off);
    LECTOR_CHECK_EQ(without.sample(logits, {1}), 1);
    LECTOR_CHECK_EQ(argmaxFirst(std::vector<float>{1, 3, 3, 2}.data(), 4), 1);  // first of a tie
}

LECTOR_TEST(topKOneEqualsGreedy)
{
    at::manual_seed(3);
    for (int trial = 0; trial < 20; ++trial) {
        const at::Tensor logits = at::randn({1000}) * 3;
        const std::vector<int> seen = {trial, 2 * trial + 1, 500};
        SamplingConfig greedy;
        SamplingConfig topOne;
        topOne.temperature = 1.5f;
        topOne.topK = 1;
        topOne.topP = 0.9f;
        topOne.seed = static_cast<uint64_t>(trial);
        Sampler g(greedy), s(topOne);
        const int expected = g.sample(logits, seen);
        for (int draw = 0; draw < 5; ++draw) LECTOR_CHECK_EQ(s.sample(logits, seen), expected);
    }
}

LECTOR_TEST(topPCutsAtTheRequestedMass)
{
    // Probabilities 0.5, 0.3, 0.15, 0.05 (temperature 1, penalty off).
    const at::Tensor logits = at::log(at::tensor(at::ArrayRef<float>({0.15f, 0.5f, 0.05f, 0.3f})));
    SamplingConfig c;
    c.temperature = 1.0f;
    c.repetitionPenalty = 1.0f;
    c.topP = 0.7f;  // 0.5 (mass before 0) and 0.3 (before 0.5) kept; 0.15 has 0.8 before it
    auto d = Sampler(c).distribution(logits, {});
    LECTOR_CHECK_EQ(d.size(), size_t(2));
    LECTOR_CHECK_EQ(d[0].id, 1);
    LECTOR_CHECK_EQ(d[1].id, 3);
    LECTOR_CHECK_NEAR(d[0].prob, 0.625, 1e-6);
    LECTOR_CHECK_NEAR(d[1].prob, 0.375, 1e-6);
    c.topP = 0.85f;
    d = Sampler(c).distribution(logits, {});
    LECTOR_CHECK_EQ(d.size(), size_t(3));
    LECTOR_CHECK_NEAR(d[2].prob, 0.15 / 0.95, 1e-6);
    c.topP = 0.3f;  // the top token alone is always kept
    d = Sampler(c).distribution(logits, {});
    LECTOR_CHECK_EQ(d.size(), size_t(1));
    LECTOR_CHECK_EQ(d[0].id, 1);
}

LECTOR_TEST(topKAndTemperatureReshapeTheDistribution)
{
    const float ln2 = std::log(2.0f);
    const at::Tensor logits = logitsOf({0.0f, ln2, -1.0f});
    SamplingConfig c;
    c.temperature = 1.0f;
    c.repetitionPenalty = 1.0f;
    c.topK = 2;
    auto d = Sampler(c).distribution(logits, {});
    LECTOR_CHECK_EQ(d.size(), size_t(2));
    LECTOR_CHECK_NEAR(d[0].prob, 2.0 / 3.0, 1e-6);
    LECTOR_CHECK_NEAR(d[1].prob, 1.0 / 3.0, 1e-6);
    c.temperature = 0.5f;  // logits doubled: 4 : 1
    d = Sampler(c).distribution(logits, {});
    LECTOR_CHECK_NEAR(d[0].prob, 0.8, 1e-6);
    LECTOR_CHECK_NEAR(d[1].prob, 0.2, 1e-6);
}

LECTOR_TEST(seededDrawsAreDeterministicAndFollowTheDistribution)
{
    const at::Tensor logits = at::log(at::tensor(at::ArrayRef<float>({0.5f, 0.3f, 0.15f, 0.05f})));
    SamplingConfig c;
    c.temperature = 1.0f;
    c.repetitionPenalty = 1.0f;
    c.seed = 42;
    Sampler a(c), b(c);
    std::vector<int> drawsA, drawsB;
    std::map<int, int> counts;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
        drawsA.push_back(a.sample(logits, {}));
        drawsB.push_back(b.sample(logits, {}));
        ++counts[drawsA.back()];
    }
    LECTOR_CHECK(drawsA == drawsB);
    const double expected[4] = {0.5, 0.3, 0.15, 0.05};
    for (int id = 0; id < 4; ++id) LECTOR_CHECK_NEAR(counts[id] / double(n), expected[id], 0.015);

    c.seed = 43;
    Sampler other(c);
    std::vector<int> drawsC;
    for (int i = 0; i < 200; ++i) drawsC.push_back(other.sample(logits, {}));
    LECTOR_CHECK(drawsC != std::vector<int>(drawsA.begin(), drawsA.begin() + 200));
    a.reseed(42);
    for (int i = 0; i < 200; ++i) LECTOR_CHECK_EQ(a.sample(logits, {}), drawsA[static_cast<size_t>(i)]);
}

// --- repeat guard ---

LECTOR_TEST(repeatGuardFindsTheShortestPeriodAndKeepsOneCopy)
{
    std::vector<int> seq = {1, 2, 3, 4, 5};
    for (int i = 0; i < 10; ++i) seq.insert(seq.end(), {7, 8, 9});  // 10 copies of a 3-token period
    RepeatGuardConfig cfg{true, 10, 64, 30, 0};
    LECTOR_CHECK_EQ(RepeatGuard(cfg).check(seq), 27);
    cfg.minSpanTokens = 31;  // the copies span 30 tokens
    LECTOR_CHECK_EQ(RepeatGuard(cfg).check(seq), 0);
    cfg.minSpanTokens = 30;
    cfg.minTokens = 36;  // only 35 tokens out
    LECTOR_CHECK_EQ(RepeatGuard(cfg).check(seq), 0);
    cfg.minTokens = 0;
    seq.resize(seq.size() - 3);  // 9 copies
    LECTOR_CHECK_EQ(RepeatGuard(cfg).check(seq), 0);

    std::vector<int> same(20, 4);  // period 1 wins over 2, 3, ...
    LECTOR_CHECK_EQ(RepeatGuard(RepeatGuardConfig{true, 10, 64, 10, 0}).check(same), 19);
    std::vector<int> distinct(200);
    std::iota(distinct.begin(), distinct.end(), 0);
    LECTOR_CHECK_EQ(RepeatGuard(RepeatGuardConfig{true, 2, 64, 1, 0}).check(distinct), 0);
    cfg.enabled = false;
    LECTOR_CHECK_EQ(RepeatGuard(cfg).check(same), 0);
}
