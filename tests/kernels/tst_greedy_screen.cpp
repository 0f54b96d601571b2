// The greedy screen (greedy_screen.cuh): its bound against float64 logits on random and adversarial heads
// (the weight's rounding errors all lined up with x's signs), the reference's token against the penalized
// argmax of the full logits computed with libtorch in float64 (ties to the lower id, NaN lowest), how few
// rows it recomputes at HunyuanOCR's shapes, the inputs it moves on; the CUDA kernel against the
// reference on odd sizes in every dtype, launched again and again on one scratch.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>

#include "gpu/ops.h"
#include "gpu/ref/element_ref.h"
#include "tests/kernels/kernel_test_util.h"

namespace kt = lector::test::kernels;
namespace gpu = lector::gpu;

namespace {

struct Case {
    at::Tensor weight;    // [vocab, k]
    at::Tensor x;         // [k]
    at::Tensor presence;  // [2, vocab] uint8: the sequence uses row 1
    float penalty = 1.0f;
};

Case makeCase(int64_t vocab, int64_t k, at::ScalarType type, uint64_t seed, float penalty)
{
    Case c;
    c.weight = kt::randn({vocab, k}, seed, type, 0.02);
    c.x = kt::randn({k}, seed + 1, type);
    c.presence = (at::rand({2, vocab}, kt::generator(seed + 2), at::kFloat) < 0.05).to(at::kByte);
    c.penalty = penalty;
    return c;
}

// Penalized float64 logits of the case: the ground truth.
at::Tensor penalizedLogits(const Case& c)
{
    const at::Tensor l = at::mv(c.weight.to(at::kDouble), c.x.to(at::kDouble));
    const at::Tensor present = c.presence[1].to(at::kBool);
    return at::where(present, at::where(l > 0, l / c.penalty, l * c.penalty), l);
}

struct Run {
    int64_t token = -1;
    int64_t recomputed = 0;
};

// One screen on the case's device; the presence row and stats as the runner passes them.
Run screen(const Case& c, const gpu::GreedyScreenHead& head, bool updatePresence = false,
           const at::Tensor& scratch = at::Tensor())
{
    const at::TensorOptions on = c.weight.options();
    const at::Tensor token = at::full({1}, -1, on.dtype(at::kLong));
    const at::Tensor stats = at::zeros({2}, on.dtype(at::kLong));
    gpu::greedyScreen(token, c.x, c.weight, head, c.presence, at::ones({1}, on.dtype(at::kLong)),
                      at::full({1}, c.penalty, on.dtype(at::kFloat)), updatePresence, scratch, nullptr, at::Tensor(), stats);
    const at::Tensor s = stats.cpu();
    LECTOR_CHECK_EQ(s[1].item<int64_t>(), int64_t(1));
    return {token.cpu().item<int64_t>(), s[0].item<int64_t>()};
}

// The token is the penalized argmax, or ties it within float32's summation error.
void checkIsArgmax(int64_t token, const at::Tensor& pen, const char* what)
{
    const int64_t want = pen.argmax().item<int64_t>();
    if (token == want) return;
    LECTOR_CHECK_MSG(token >= 0 && token < pen.size(0), what);
    const double a = pen[token].item<double>(), b = pen[want].item<double>();
    const double scale = pen.abs().max().item<double>();
    std::printf("  %s: token %lld (%.9g) against the argmax %lld (%.9g)\n", what, static_cast<long long>(token), a,
                static_cast<long long>(want), b);
    LECTOR_CHECK_MSG(std::fabs(a - b) <= 1e-5 * scale, what);
}

// |float64 logit - approx| / bound, largest over the rows, with approx and bound as the kernel forms them.
double worstBoundRatio(const at::Tensor& weight, const at::Tensor& x)
{
    const gpu::GreedyScreenHead head = gpu::quantizeGreedyScreen(weight);
    const int64_t vocab = weight.size(0), k = weight.size(1);
    const at::Tensor xf = x.to(at::kFloat).contiguous();
    const float* xv = xf.data_ptr<float>();
    float amax = 0.0f, asum = 0.0f;
    for (int64_t i = 0; i < k; ++i) amax = std::fmax(amax, std::fabs(xv[i])), asum += std::fabs(xv[i]);
    const float sx = gpu::screenXScale(amax), bound = gpu::screenBound(asum, sx, static_cast<int>(k));
    std::vector<int64_t> xi(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) xi[i] = gpu::screenXLevel(xv[i], sx);
    const at::Tensor exact = at::mv(weight.to(at::kDouble), x.to(at::kDouble));
    const int8_t* q = head.q.data_ptr<int8_t>();
    const float* s = head.scales.data_ptr<float>();
    double worst = 0.0;
    for (int64_t r = 0; r < vocab; ++r) {
        int64_t dot = 0;
        for (int64_t i = 0; i < k; ++i) dot += q[r * k + i] * xi[i];
        const double approx = double(s[r]) * sx * double(dot);
        const double b = double(s[r]) * bound;
        const double err = std::fabs(exact[r].item<double>() - approx);
        if (b == 0.0) LECTOR_CHECK_EQ(err, 0.0);
        else worst = std::max(worst, err / b);
    }
    return worst;
}

}  // namespace

LECTOR_TEST(boundHoldsOnRandomAndAdversarialHeads)
{
    for (at::ScalarType type : kt::floatTypes()) {
        // Random heads and inputs, x with an outlier dimension (norm weights make them).
        for (int64_t k : {16, 48, 1024}) {
            at::Tensor w = kt::randn({300, k}, 11 + k, type, 0.02);
            at::Tensor x = kt::randn({k}, 12 + k, type);
            x[3] = 40.0;
            w[7][5] = 3.0;  // a row whose scale one element sets
            w[8].zero_();   // a zero row: scale 0, exact 0
            const double ratio = worstBoundRatio(w, x);
            std::printf("  %s k %lld: worst |error| / bound %.4f\n", kt::typeName(type).c_str(), static_cast<long long>(k), ratio);
            LECTOR_CHECK(ratio <= 1.0);
        }
        // Every element's rounding error close to half a step of the grid, with x's sign: the bound's
        // first term is nearly reached (a bound of 0.45 s |x|_1 would fail here).
        const int64_t k = 512;
        const at::Tensor x = kt::randn({k}, 21, at::kFloat).to(type).to(at::kFloat);
        // Steps of j + frac, exact in the type: float16 holds 125.375, bfloat16 (8 bits) 31.375.
        const double frac = type == at::kFloat ? 0.499 : 0.375;
        const int64_t steps = type == at::kBFloat16 ? 32 : 126;
        at::Tensor w = at::empty({40, k}, at::kFloat);
        for (int64_t r = 0; r < 40; ++r)
            for (int64_t i = 0; i < k; ++i) {
                const double step = i == 0 ? 127.0 : double((r * 7 + i) % steps) + frac;
                w[r][i] = (i == 0 || x[i].item<float>() >= 0 ? step : -step) * (1.0 / 1024.0);
            }
        const at::Tensor wt = w.to(type);
        // x[0] is 0 in the row's error sum: w[r][0] sits on the grid exactly.
        const double ratio = worstBoundRatio(wt, x.to(type));
        std::printf("  %s adversarial: worst |error| / bound %.4f\n", kt::typeName(type).c_str(), ratio);
        LECTOR_CHECK(ratio <= 1.0);
        LECTOR_CHECK(ratio > (type == at::kFloat ? 0.9 : 0.6));  // the test does press the bound
    }
}

LECTOR_TEST(referenceTokenIsThePenalizedArgmax)
{
    for (at::ScalarType type : kt::floatTypes())
        for (float penalty : {1.0f, 1.3f, 0.8f}) {
            Case c = makeCase(5000, 64, type, 31 + static_cast<uint64_t>(penalty * 10), penalty);
            // Make the penalty matter: the unpenalized argmax is present.
            const at::Tensor raw = at::mv(c.weight.to(at::kDouble), c.x.to(at::kDouble));
            c.presence[1][raw.argmax().item<int64_t>()] = 1;
            const at::Tensor pen = penalizedLogits(c);
            const at::Tensor before = c.presence.clone();
            const Run run = screen(c, gpu::quantizeGreedyScreen(c.weight), /*updatePresence=*/true);
            checkIsArgmax(run.token, pen, "reference token");
            LECTOR_CHECK_EQ(c.presence[1][run.token].item<uint8_t>(), uint8_t(1));
            LECTOR_CHECK((c.presence != before).sum().item<int64_t>() <= 1);
            LECTOR_CHECK(run.recomputed >= 1 && run.recomputed < 5000);
        }
}

LECTOR_TEST(tiesGoToTheLowerIdAndNaNIsLowest)
{
    Case c = makeCase(1000, 32, at::kHalf, 41, 1.0f);
    c.presence.zero_();
    // Rows 100 and 700 equal and far above the rest: the lower id wins.
    c.weight[100] = c.x * 0.5;
    c.weight[700] = c.weight[100];
    LECTOR_CHECK_EQ(screen(c, gpu::quantizeGreedyScreen(c.weight)).token, int64_t(100));
    // Penalized, row 100 drops below row 700 only if present; both present: 100 again.
    c.presence[1][100] = 1;
    c.penalty = 1.5f;
    LECTOR_CHECK_EQ(screen(c, gpu::quantizeGreedyScreen(c.weight)).token, int64_t(700));
    c.presence[1][700] = 1;
    LECTOR_CHECK_EQ(screen(c, gpu::quantizeGreedyScreen(c.weight)).token, int64_t(100));
    // x all zero: every logit 0, token 0 (the sampler's first maximum).
    Case z = makeCase(50, 16, at::kFloat, 42, 1.0f);
    z.x.zero_();
    LECTOR_CHECK_EQ(screen(z, gpu::quantizeGreedyScreen(z.weight)).token, int64_t(0));
    // A NaN in x: every logit NaN, which the sampler's order puts lowest; token 0 as the sampler gives.
    Case n = makeCase(50, 16, at::kFloat, 43, 1.0f);
    n.x[4] = NAN;
    LECTOR_CHECK_EQ(screen(n, gpu::quantizeGreedyScreen(n.weight)).token, int64_t(0));
    // A NaN row never wins while others are finite.
    Case r = makeCase(50, 16, at::kFloat, 44, 1.0f);
    r.weight[9][2] = NAN;
    const at::Tensor pen = penalizedLogits(r);
    const int64_t token = screen(r, gpu::quantizeGreedyScreen(r.weight)).token;
    LECTOR_CHECK(token != 9);
    LECTOR_CHECK_EQ(token, at::where(at::isnan(pen), at::full_like(pen, -1e300), pen).argmax().item<int64_t>());
}

LECTOR_TEST(screenRecomputesFewRowsAtHunyuanShapes)
{
    // HunyuanOCR's head: 120818 x 1024, initialised like the random reference model (std 0.02).
    Case c = makeCase(120818, 1024, at::kHalf, 51, 1.03f);
    const Run run = screen(c, gpu::quantizeGreedyScreen(c.weight));
    checkIsArgmax(run.token, penalizedLogits(c), "hunyuan shapes");
    std::printf("  rows recomputed: %lld of 120818\n", static_cast<long long>(run.recomputed));
    LECTOR_CHECK(run.recomputed < 120818 / 50);  // the screen keeps under 2 % of the head's bytes
}

LECTOR_TEST(advanceMovesTheInputsOn)
{
    Case c = makeCase(300, 32, at::kFloat, 61, 1.0f);
    const at::Tensor lens = at::full({1}, 37, at::kInt);  // the step attended 37 keys: the next is key 37
    const at::Tensor positions = at::tensor(std::vector<int64_t>{36, 5, 9}, at::kLong).view({3, 1});
    const at::Tensor slots = at::full({1}, int64_t(7 * 16 + 4), at::kLong);
    const at::Tensor table = at::tensor(std::vector<int32_t>{3, 8, 7, 11}, at::kInt).view({1, 4});
    const at::Tensor offsets = at::full({1}, int64_t(5), at::kLong);
    const at::Tensor history = at::full({1}, int64_t(-1), at::kLong);
    const gpu::SampleAdvance advance{lens, positions, slots, table, history};
    const at::Tensor token = at::empty({1}, at::kLong);
    gpu::greedyScreen(token, c.x, c.weight, gpu::quantizeGreedyScreen(c.weight), at::Tensor(), at::Tensor(), at::Tensor(),
                      false, at::Tensor(), &advance, offsets);
    LECTOR_CHECK_EQ(token.item<int64_t>(), penalizedLogits(Case{c.weight, c.x, at::zeros({2, 300}, at::kByte), 1.0f})
                                               .argmax()
                                               .item<int64_t>());
    LECTOR_CHECK_EQ(history.item<int64_t>(), token.item<int64_t>());
    LECTOR_CHECK_EQ(lens.item<int32_t>(), 38);
    LECTOR_CHECK_EQ(positions[0][0].item<int64_t>(), int64_t(37));
    LECTOR_CHECK_EQ(positions[2][0].item<int64_t>(), int64_t(10));
    LECTOR_CHECK_EQ(slots.item<int64_t>(), int64_t(7 * 16 + 5));  // key 37: table entry 37 / 16 = 2 (block 7), offset 5
    LECTOR_CHECK_EQ(offsets.item<int64_t>(), int64_t(6));
}

LECTOR_TEST(cudaMatchesTheReference)
{
    kt::requireCuda();
    const at::Device cuda(at::kCUDA);
    int compared = 0;
    for (at::ScalarType type : kt::floatTypes())
        for (int64_t vocab : {1, 31, 1000, 4099, 120818})
            for (int64_t k : {16, 48, 1024}) {
                if (vocab == 120818 && k != 1024) continue;
                const float penalty = (vocab + k) % 3 == 0 ? 1.0f : 1.2f;
                Case host = makeCase(vocab, k, type, 71 + static_cast<uint64_t>(vocab + k), penalty);
                const gpu::GreedyScreenHead hostHead = gpu::quantizeGreedyScreen(host.weight);
                const Run want = screen(host, hostHead);
                Case dev{host.weight.to(cuda), host.x.to(cuda), host.presence.to(cuda), penalty};
                const gpu::GreedyScreenHead head = gpu::quantizeGreedyScreen(dev.weight);
                // The device's copy of the head: the same scales; q may differ by one step where w / s lies
                // within an ulp of a half (the bound allows for that), and almost nowhere.
                LECTOR_CHECK(at::equal(head.scales.cpu(), hostHead.scales));
                const at::Tensor qDiff = (head.q.cpu().to(at::kInt) - hostHead.q.to(at::kInt)).abs();
                LECTOR_CHECK(qDiff.max().item<int>() <= 1 && qDiff.sum().item<int64_t>() * 100000 <= qDiff.numel());
                const at::Tensor scratch = at::zeros({gpu::greedyScreenScratchWords(vocab, cuda)}, at::TensorOptions().dtype(at::kLong).device(cuda));
                for (int launch = 0; launch < 3; ++launch) {
                    const Run got = screen(dev, head, false, scratch);
                    if (got.token != want.token) checkIsArgmax(got.token, penalizedLogits(host), "CUDA token");
                    LECTOR_CHECK_EQ(scratch.abs().sum().item<int64_t>(), int64_t(0));
                }
                // Marking the token present, on the device.
                const Run marked = screen(dev, head, true, scratch);
                LECTOR_CHECK_EQ(dev.presence[1][marked.token].item<uint8_t>(), uint8_t(1));
                ++compared;
            }
    LECTOR_CHECK_EQ(compared, 3 * 13);
}

LECTOR_TEST(cudaAdvanceEqualsTheReference)
{
    kt::requireCuda();
    const at::Device cuda(at::kCUDA);
    Case c = makeCase(4099, 1024, at::kHalf, 81, 1.0f);
    auto run = [&](const at::Device& d) {
        const at::TensorOptions o = at::TensorOptions().device(d);
        const at::Tensor lens = at::full({1}, 40, o.dtype(at::kInt));
        const at::Tensor positions = at::tensor(std::vector<int64_t>{39, 2, 3}, at::kLong).view({3, 1}).to(d);
        const at::Tensor slots = at::full({1}, int64_t(3 * 16 + 7), o.dtype(at::kLong));
        const at::Tensor table = at::tensor(std::vector<int32_t>{5, 9, 3}, at::kInt).view({1, 3}).to(d);
        const at::Tensor offsets = at::full({1}, int64_t(11), o.dtype(at::kLong));
        const gpu::SampleAdvance advance{lens, positions, slots, table, at::Tensor()};
        const at::Tensor token = at::empty({1}, o.dtype(at::kLong));
        const at::Tensor w = c.weight.to(d), x = c.x.to(d);
        gpu::greedyScreen(token, x, w, gpu::quantizeGreedyScreen(w), at::Tensor(), at::Tensor(), at::Tensor(), false,
                          at::Tensor(), &advance, offsets);
        return at::cat({token.cpu(), lens.cpu().to(at::kLong), positions.cpu().view({-1}), slots.cpu(), offsets.cpu()});
    };
    const at::Tensor want = run(at::Device(at::kCPU)), got = run(cuda);
    LECTOR_CHECK(at::equal(got, want));
    LECTOR_CHECK_EQ(want[5].item<int64_t>(), int64_t(3 * 16 + 8));  // key 40: table entry 2 (block 3), offset 8
}
