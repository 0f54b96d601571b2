// QK-norm + XD-RoPE: the reference against the spec's section layout (docs/hunyuanocr-spec.md §5.3:
// frequencies [0,16) rotate by axis p, [16,32) by w, [32,48) by h, [48,64) by t, neox pairing) and
// against a libtorch float64 version; the CUDA kernel against the reference for int64 and int32
// positions, 4-axis and 1-axis RoPE, with and without norm weights, on strided q/k views of a fused
// QKV projection, for 1, 7 and 37 tokens.
#include <ATen/ATen.h>

#include <cmath>

#include "gpu/ref/qk_norm_rope_ref.h"
#include "gpu/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace kt = lector::test::kernels;

namespace {

constexpr int kHeadDim = 128, kHalf = 64, kQHeads = 16, kKvHeads = 8, kMaxPos = 4096;
constexpr double kEps = 1e-5;

at::Tensor cosSinCache() { return kt::ropeCosSinCache(kMaxPos, kHeadDim); }

struct Inputs {
    at::Tensor qkv;        // [numTokens, 32 * 128]: q = heads 0..15, k = 16..23, v = 24..31
    at::Tensor positions;  // [numAxes, numTokens] int64
    std::vector<int> sections;
    at::Tensor qWeight, kWeight;  // [128]
};

Inputs makeInputs(int numTokens, int numAxes, at::ScalarType type, uint64_t seed)
{
    Inputs in;
    in.qkv = kt::randn({numTokens, (kQHeads + 2 * kKvHeads) * kHeadDim}, seed, type);
    // Axis 0 counts tokens; the others look like an image grid (and differ from axis 0).
    in.positions = at::randint(0, kMaxPos, {numAxes, numTokens}, kt::generator(seed + 1), at::kLong);
    in.positions[0].copy_(at::arange(numTokens, at::kLong) + 100);
    in.sections = numAxes == 4 ? std::vector<int>{16, 16, 16, 16} : std::vector<int>{kHalf};
    in.qWeight = (kt::randn({kHeadDim}, seed + 2) * 0.2 + 1.0).to(type);
    in.kWeight = (kt::randn({kHeadDim}, seed + 3) * 0.2 + 1.0).to(type);
    return in;
}

at::Tensor queryOf(const at::Tensor& qkv) { return qkv.slice(1, 0, kQHeads * kHeadDim).view({-1, kQHeads, kHeadDim}); }
at::Tensor keyOf(const at::Tensor& qkv)
{
    return qkv.slice(1, kQHeads * kHeadDim, (kQHeads + kKvHeads) * kHeadDim).view({-1, kKvHeads, kHeadDim});
}

// Reference in place on the q/k views of `qkv` (CPU).
void runReference(const at::Tensor& qkv, const at::Tensor& positions, const std::vector<int>& sections,
                  const at::Tensor& cache, const at::Tensor& qWeight, const at::Tensor& kWeight)
{
    const at::Tensor q = queryOf(qkv), k = keyOf(qkv);
    lector::gpu::QkNormRopeParams p;
    p.dtype = kt::toDType(qkv.scalar_type());
    p.query = q.data_ptr();
    p.key = k.data_ptr();
    p.positions = positions.data_ptr();
    p.positionsInt64 = positions.scalar_type() == at::kLong;
    p.cosSinCache = cache.data_ptr<float>();
    p.queryNormWeight = qWeight.defined() ? qWeight.data_ptr() : nullptr;
    p.keyNormWeight = kWeight.defined() ? kWeight.data_ptr() : nullptr;
    p.queryTokenStride = q.stride(0);
    p.keyTokenStride = k.stride(0);
    p.positionsAxisStride = positions.stride(0);
    p.numTokens = static_cast<int>(q.size(0));
    p.numQHeads = kQHeads;
    p.numKvHeads = kKvHeads;
    p.headDim = kHeadDim;
    p.maxPosition = static_cast<int>(cache.size(0));
    p.numPosAxes = static_cast<int>(positions.size(0));
    for (size_t a = 0; a < sections.size(); ++a) p.sections[a] = sections[a];
    p.eps = static_cast<float>(kEps);
    lector::gpu::ref::qkNormRopeRef(p);
}

// cos and sin [numTokens, 64] for each frequency, its axis chosen by sections (`type`, same device).
std::pair<at::Tensor, at::Tensor> anglesOf(const at::Tensor& cache, const at::Tensor& positions,
                                           const std::vector<int>& sections, at::ScalarType type)
{
    std::vector<at::Tensor> cosParts, sinParts;
    int start = 0;
    for (size_t a = 0; a < sections.size(); ++a) {
        const at::Tensor rows = cache.index_select(0, positions[a].to(at::kLong)).to(type);
        cosParts.push_back(rows.slice(1, start, start + sections[a]));
        sinParts.push_back(rows.slice(1, kHalf + start, kHalf + start + sections[a]));
        start += sections[a];
    }
    return {at::cat(cosParts, 1), at::cat(sinParts, 1)};
}

// x: [numTokens, heads, 128] rotated by the per-token angles, in x's dtype arithmetic.
at::Tensor rotate(const at::Tensor& x, const at::Tensor& c, const at::Tensor& s)
{
    const at::Tensor x1 = x.slice(2, 0, kHalf), x2 = x.slice(2, kHalf, kHeadDim);
    const at::Tensor cc = c.unsqueeze(1), ss = s.unsqueeze(1);
    return at::cat({x1 * cc - x2 * ss, x2 * cc + x1 * ss}, 2);
}

at::Tensor normDouble(const at::Tensor& y, const at::Tensor& w)
{
    return y / at::sqrt(y.pow(2).mean(-1, true) + kEps) * w.to(at::kDouble);
}

// HF semantics in the element type: rotation in float32 cast back, then HF RMSNorm.
[[maybe_unused]] at::Tensor naiveHead(const at::Tensor& x, const at::Tensor& c, const at::Tensor& s,
                                     const at::Tensor& w)  // CUDA cases only
{
    const at::Tensor y = rotate(x.to(at::kFloat), c, s).to(x.scalar_type());
    const at::Tensor yf = y.to(at::kFloat);
    return w * (yf * at::rsqrt(yf.pow(2).mean(-1, true) + kEps)).to(x.scalar_type());
}

}  // namespace

LECTOR_TEST(referenceRotatesEachDimByItsSpecAxis)
{
    // One token, four distinct axis positions, no norm: dim d (< 64) must rotate by the position of
    // axis d / 16 (p, w, h, t) with frequency base^(-2d/128), paired with d + 64.
    const at::Tensor cache = cosSinCache();
    at::Tensor qkv = kt::randn({1, (kQHeads + 2 * kKvHeads) * kHeadDim}, 111);
    const at::Tensor before = qkv.clone();
    const at::Tensor positions = at::tensor(std::vector<int64_t>{5, 901, 1333, 2047}, at::kLong).view({4, 1});
    runReference(qkv, positions, {16, 16, 16, 16}, cache, at::Tensor(), at::Tensor());
    const double base = 10000.0 * std::pow(1000.0, 128.0 / 126.0);
    const int64_t pos[4] = {5, 901, 1333, 2047};
    for (int head : {0, 15, 16, 23}) {  // query heads 0 and 15, key heads 0 and 7
        const int64_t off = int64_t(head) * kHeadDim;
        auto x = before.accessor<float, 2>();
        auto y = qkv.accessor<float, 2>();
        for (int d : {0, 15, 16, 31, 32, 47, 48, 63}) {
            const double angle = pos[d / 16] * std::pow(base, -2.0 * d / kHeadDim);
            const double x1 = x[0][off + d], x2 = x[0][off + d + kHalf];
            LECTOR_CHECK_NEAR(y[0][off + d], x1 * std::cos(angle) - x2 * std::sin(angle), 2e-5);
            LECTOR_CHECK_NEAR(y[0][off + d + kHalf], x2 * std::cos(angle) + x1 * std::sin(angle), 2e-5);
        }
    }
    // V heads are untouched.
    const int64_t v0 = (kQHeads + kKvHeads) * kHeadDim;
    LECTOR_CHECK(at::equal(qkv.slice(1, v0), before.slice(1, v0)));
}

LECTOR_TEST(referenceMatchesFloat64)
{
    const at::Tensor cache = cosSinCache();
    for (int numAxes : {1, 4}) {
        const Inputs in = makeInputs(7, numAxes, at::kFloat, 121 + numAxes);
        const at::Tensor qkv = in.qkv.clone();
        runReference(qkv, in.positions, in.sections, cache, in.qWeight, in.kWeight);
        const auto [c, s] = anglesOf(cache, in.positions, in.sections, at::kDouble);
        const at::Tensor wantQ = normDouble(rotate(queryOf(in.qkv).to(at::kDouble), c, s), in.qWeight);
        const at::Tensor wantK = normDouble(rotate(keyOf(in.qkv).to(at::kDouble), c, s), in.kWeight);
        kt::expectClose("ref q vs float64, axes " + std::to_string(numAxes), queryOf(qkv), wantQ, 1e-12);
        kt::expectClose("ref k vs float64, axes " + std::to_string(numAxes), keyOf(qkv), wantK, 1e-12);
    }
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReference)
{
    kt::requireCuda();
    const at::Tensor cache = cosSinCache(), cacheCuda = cache.cuda();
    for (at::ScalarType type : kt::floatTypes()) {
        for (int numAxes : {1, 4}) {
            for (int numTokens : {1, 7, 37}) {
                for (bool int32Positions : {false, true}) {
                    for (bool withNorm : {true, false}) {
                        const Inputs in = makeInputs(numTokens, numAxes, type, 131 + numTokens * 8 + numAxes);
                        const at::Tensor qW = withNorm ? in.qWeight : at::Tensor();
                        const at::Tensor kW = withNorm ? in.kWeight : at::Tensor();
                        const at::Tensor ref = in.qkv.to(at::kFloat).clone();
                        runReference(ref, in.positions, in.sections, cache, withNorm ? qW.to(at::kFloat) : qW,
                                     withNorm ? kW.to(at::kFloat) : kW);

                        const at::Tensor qkv = in.qkv.cuda();
                        const at::Tensor positions =
                            (int32Positions ? in.positions.to(at::kInt) : in.positions).cuda();
                        lector::gpu::qkNormRope(queryOf(qkv), keyOf(qkv), positions, cacheCuda,
                                                withNorm ? qW.cuda() : qW, withNorm ? kW.cuda() : kW, in.sections,
                                                kEps);
                        const auto [c, s] = anglesOf(cacheCuda, positions, in.sections, at::kFloat);
                        const at::Tensor x = in.qkv.cuda();
                        at::Tensor naiveQ, naiveK;
                        if (withNorm) {
                            naiveQ = naiveHead(queryOf(x), c, s, qW.cuda());
                            naiveK = naiveHead(keyOf(x), c, s, kW.cuda());
                        } else {
                            naiveQ = rotate(queryOf(x).to(at::kFloat), c, s).to(type);
                            naiveK = rotate(keyOf(x).to(at::kFloat), c, s).to(type);
                        }
                        const std::string what = kt::typeName(type) + " axes " + std::to_string(numAxes) +
                                                 " tokens " + std::to_string(numTokens) +
                                                 (int32Positions ? " int32" : " int64") +
                                                 (withNorm ? " norm" : " no-norm");
                        kt::expectClose(what + " q", queryOf(qkv), queryOf(ref), kt::nmseBound(type), naiveQ);
                        kt::expectClose(what + " k", keyOf(qkv), keyOf(ref), kt::nmseBound(type), naiveK);
                        const int64_t v0 = (kQHeads + kKvHeads) * kHeadDim;
                        LECTOR_CHECK(at::equal(qkv.slice(1, v0).cpu(), in.qkv.slice(1, v0)));
                    }
                }
            }
        }
    }
}

#endif  // LECTOR_HAVE_CUDA

// The fused KV write (qkNormRopeWriteKv): the new tokens' rotated, normed K and their V land in the
// paged cache at their slots (shuffled, one skipped with slot -1), and nothing else of the cache moves.
// CPU: against qkNormRope followed by writeKvCache; CUDA: against the CPU result.
namespace {

struct FusedResult {
    at::Tensor qkv, keyCache, valueCache;
};

FusedResult runFused(const Inputs& in, const at::Tensor& slots, const at::Tensor& cache, const c10::Device& device,
                     bool split)
{
    const int numBlocks = 5;
    FusedResult r;
    r.qkv = in.qkv.to(device).clone();
    r.keyCache = kt::randn({numBlocks, 16, kKvHeads, kHeadDim}, 901, in.qkv.scalar_type()).to(device);
    r.valueCache = kt::randn({numBlocks, 16, kKvHeads, kHeadDim}, 902, in.qkv.scalar_type()).to(device);
    const at::Tensor q = queryOf(r.qkv), k = keyOf(r.qkv);
    const at::Tensor v = r.qkv.slice(1, (kQHeads + kKvHeads) * kHeadDim).view({-1, kKvHeads, kHeadDim});
    const at::Tensor positions = in.positions.to(device), cs = cache.to(device), s = slots.to(device);
    const at::Tensor qW = in.qWeight.to(device), kW = in.kWeight.to(device);
    if (split) {
        lector::gpu::qkNormRope(q, k, positions, cs, qW, kW, in.sections, kEps);
        lector::gpu::writeKvCache(r.keyCache, r.valueCache, k, v, s);
    } else {
        lector::gpu::qkNormRopeWriteKv(q, k, v, positions, cs, qW, kW, in.sections, kEps, r.keyCache, r.valueCache, s);
    }
    return r;
}

}  // namespace

LECTOR_TEST(fusedKvWriteMatchesRopeThenWrite)
{
    const at::Tensor cache = cosSinCache();
    const int numTokens = 7;
    const at::Tensor slots = at::tensor(std::vector<int64_t>{77, 3, -1, 16, 79, 40, 15}, at::kLong);
    for (at::ScalarType type : {at::kFloat, at::kHalf}) {
        const Inputs in = makeInputs(numTokens, 4, type, 171);
        const FusedResult want = runFused(in, slots, cache, at::kCPU, /*split=*/true);
        const FusedResult got = runFused(in, slots, cache, at::kCPU, /*split=*/false);
        LECTOR_CHECK(at::equal(got.qkv, want.qkv));
        LECTOR_CHECK(at::equal(got.keyCache, want.keyCache));
        LECTOR_CHECK(at::equal(got.valueCache, want.valueCache));
        // The write really happened: slot 3 holds token 1's key, which differs from the random fill.
        LECTOR_CHECK(at::equal(got.keyCache.view({-1, kKvHeads, kHeadDim})[3], keyOf(got.qkv)[1]));
        LECTOR_CHECK(!at::equal(got.keyCache, runFused(in, at::full({numTokens}, -1, at::kLong), cache, at::kCPU,
                                                       false).keyCache));
#ifdef LECTOR_HAVE_CUDA
        if (!at::hasCUDA()) continue;
        const FusedResult cuda = runFused(in, slots, cache, at::kCUDA, /*split=*/false);
        kt::expectClose(kt::typeName(type) + " fused q/k", cuda.qkv.cpu(), want.qkv, kt::nmseBound(type));
        kt::expectClose(kt::typeName(type) + " fused key cache", cuda.keyCache.cpu(), want.keyCache, kt::nmseBound(type));
        LECTOR_CHECK(at::equal(cuda.valueCache.cpu(), want.valueCache));
#endif
    }
}
