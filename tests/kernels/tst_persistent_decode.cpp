// Decode step of one sequence (gpu::PersistentDecoder: gpu/kernels/persistent_decode.cuh, and its
// head-parallel kind, gpu/kernels/head_parallel_decode.cuh): the CPU reference against an independent
// float64 decoder step written with libtorch ops; on CUDA the kernels against the reference on random
// decoders of the real shapes (2 layers, 120818-word vocabulary) and, for the persistent kernel, of odd
// ones (hidden 264, 3 KV heads, three position axes; a single head), at contexts of 1 to 4100 keys over
// shuffled blocks (the head-parallel kernels also just past the keys they load before their wait). Every cache slot no token owns holds NaN, and so does the new
// token's slot before the step: a kernel that reads past the context or attends to the stale slot
// instead of the new key fails. Each case runs two steps back to back (the second attends to the key the
// first wrote, and only works if the first left its counters at zero), then both again as replays of one
// captured CUDA graph whose inputs change between replays, as the model runner uses it. And a head-parallel
// step after the sampler that moved its inputs on in place (a launch of several steps), eager and graphed.
#include <ATen/ATen.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/ops.h"
#include "tests/kernels/kernel_test_util.h"

#ifdef LECTOR_HAVE_CUDA
#include "gpu/device.h"
#endif

namespace kt = lector::test::kernels;
namespace gpu = lector::gpu;

namespace {

struct Dims {
    int layers, hidden, intermediate, qHeads, kvHeads, headDim, vocab;
    std::vector<int> sections;  // XD-RoPE frequencies per position axis
};

constexpr int kMaxPosition = 8192;
constexpr double kEps = 1e-5;

// A random decoder in float32 (CPU): matrices scaled by 1/sqrt(fan-in), norm weights near 1.
struct Model {
    Dims d;
    std::vector<std::array<at::Tensor, 8>> layers;  // inputNorm, qkv, queryNorm, keyNorm, o, postNorm, gateUp, down
    at::Tensor embed, finalNorm, lmHead, cosSin;
};

Model makeModel(const Dims& d, uint64_t seed)
{
    Model m;
    m.d = d;
    auto matrix = [&](int64_t out, int64_t in) { return kt::randn({out, in}, seed++, at::kFloat, 1.0 / std::sqrt(double(in))); };
    auto norm = [&](int64_t n) { return 1.0 + kt::randn({n}, seed++, at::kFloat, 0.1); };
    for (int l = 0; l < d.layers; ++l)
        m.layers.push_back({norm(d.hidden), matrix(int64_t(d.qHeads + 2 * d.kvHeads) * d.headDim, d.hidden),
                            norm(d.headDim), norm(d.headDim), matrix(d.hidden, int64_t(d.qHeads) * d.headDim),
                            norm(d.hidden), matrix(2 * int64_t(d.intermediate), d.hidden),
                            matrix(d.hidden, d.intermediate)});
    m.embed = kt::randn({d.vocab, d.hidden}, seed++);
    m.finalNorm = norm(d.hidden);
    m.lmHead = matrix(d.vocab, d.hidden);
    // cos | sin of pos * 10000^(-2j / headDim), j < headDim / 2.
    const at::Tensor j = at::arange(d.headDim / 2, at::kDouble);
    const at::Tensor angle = at::arange(kMaxPosition, at::kDouble).unsqueeze(1) * at::pow(10000.0, -2.0 * j / d.headDim);
    m.cosSin = at::cat({at::cos(angle), at::sin(angle)}, 1).to(at::kFloat).contiguous();
    return m;
}

// The paged caches of one sequence: its block table (shuffled ids of a pool with spare blocks) and per
// layer K and V [numBlocks, 16, kvHeads, headDim] in float32, random for tokens 0 .. context - 2, NaN
// for every other slot (the new token's too).
struct Caches {
    std::vector<int32_t> table;
    std::vector<at::Tensor> keys, values;
    int numBlocks = 0;
};

Caches makeCaches(const Dims& d, int context, uint64_t seed, int extraTokens)
{
    Caches c;
    const int used = static_cast<int>(gpu::ceilDiv(context + extraTokens, gpu::kKvBlockSize));
    c.numBlocks = used + 3;
    const std::vector<int> ids = kt::permutation(c.numBlocks, seed);
    c.table.assign(ids.begin(), ids.begin() + used);
    for (int l = 0; l < d.layers; ++l) {
        for (std::vector<at::Tensor>* list : {&c.keys, &c.values}) {
            at::Tensor cache = at::full({c.numBlocks, gpu::kKvBlockSize, d.kvHeads, d.headDim}, NAN, at::kFloat);
            const at::Tensor random = kt::randn({std::max(context - 1, 0), d.kvHeads, d.headDim}, seed++);
            for (int t = 0; t + 1 < context; ++t)
                cache[c.table[t / gpu::kKvBlockSize]][t % gpu::kKvBlockSize].copy_(random[t]);
            list->push_back(cache);
        }
    }
    return c;
}

int64_t slotOf(const Caches& c, int token)
{
    return int64_t(c.table[token / gpu::kKvBlockSize]) * gpu::kKvBlockSize + token % gpu::kKvBlockSize;
}

// One step's inputs: the token, its positions per axis (they differ, as in an image prompt), its slot.
struct Step {
    int64_t token;
    std::vector<int64_t> positions;
    int context;  // keys attended, the new token's included
};

// The independent float64 decoder step (libtorch ops, no rounding anywhere), updating the float64 caches.
at::Tensor float64Step(const Model& m, std::vector<at::Tensor>& keys, std::vector<at::Tensor>& values, const Caches& c,
                       const Step& s)
{
    const Dims& d = m.d;
    const int D = d.headDim, half = D / 2, group = d.qHeads / d.kvHeads;
    auto f64 = [](const at::Tensor& t) { return t.to(at::kDouble); };
    auto rms = [](const at::Tensor& x, const at::Tensor& w) {
        return x * at::rsqrt(x.pow(2).mean(-1, true) + kEps) * w.to(at::kDouble);
    };
    // Per-frequency cos / sin, each frequency at the position of its axis.
    at::Tensor cosF = at::empty({half}, at::kDouble), sinF = at::empty({half}, at::kDouble);
    for (int j = 0, axis = 0, bound = d.sections[0]; j < half; ++j) {
        while (j >= bound && axis + 1 < static_cast<int>(d.sections.size())) bound += d.sections[++axis];
        cosF[j] = m.cosSin[s.positions[axis]][j].item<double>();
        sinF[j] = m.cosSin[s.positions[axis]][half + j].item<double>();
    }
    auto rotate = [&](const at::Tensor& x) {  // [heads, D], neox pairs (j, j + D/2)
        const at::Tensor x1 = x.narrow(1, 0, half), x2 = x.narrow(1, half, half);
        return at::cat({x1 * cosF - x2 * sinF, x2 * cosF + x1 * sinF}, 1);
    };
    const int64_t slot = slotOf(c, s.context - 1);
    at::Tensor x = f64(m.embed[s.token]);
    for (int l = 0; l < d.layers; ++l) {
        const auto& w = m.layers[l];
        const at::Tensor qkv = at::mv(f64(w[1]), rms(x, w[0]));
        const at::Tensor q = rms(rotate(qkv.narrow(0, 0, d.qHeads * D).view({d.qHeads, D})), w[2]);
        const at::Tensor k = rms(rotate(qkv.narrow(0, d.qHeads * D, d.kvHeads * D).view({d.kvHeads, D})), w[3]);
        const at::Tensor v = qkv.narrow(0, (d.qHeads + d.kvHeads) * D, d.kvHeads * D).view({d.kvHeads, D});
        keys[l].view({-1, d.kvHeads, D})[slot].copy_(k);
        values[l].view({-1, d.kvHeads, D})[slot].copy_(v);
        std::vector<int64_t> rows;
        for (int t = 0; t < s.context; ++t) rows.push_back(slotOf(c, t));
        const at::Tensor index = at::tensor(rows, at::kLong);
        const at::Tensor K = keys[l].view({-1, d.kvHeads, D}).index_select(0, index);    // [ctx, kv, D]
        const at::Tensor V = values[l].view({-1, d.kvHeads, D}).index_select(0, index);
        std::vector<at::Tensor> heads;
        for (int h = 0; h < d.qHeads; ++h) {
            const at::Tensor p = at::softmax(at::mv(K.select(1, h / group), q[h]) / std::sqrt(double(D)), 0);
            heads.push_back(at::mv(V.select(1, h / group).t(), p));
        }
        x = x + at::mv(f64(w[4]), at::cat(heads));
        const at::Tensor gu = at::mv(f64(w[6]), rms(x, w[5]));
        const at::Tensor g = gu.narrow(0, 0, d.intermediate), u = gu.narrow(0, d.intermediate, d.intermediate);
        x = x + at::mv(f64(w[7]), g * at::sigmoid(g) * u);
    }
    return at::mv(f64(m.lmHead), rms(x, m.finalNorm));
}

// The model (cast to `type` on `device`) and caches as the persistent decoder reads them. The tensors
// live in `keep` / the caches for as long as the decoder.
gpu::PersistentDecoderModel decoderModel(const Model& m, const std::vector<at::Tensor>& keys,
                                         const std::vector<at::Tensor>& values, at::ScalarType type,
                                         const at::Device& device, std::vector<at::Tensor>& keep)
{
    auto put = [&](const at::Tensor& t) {
        keep.push_back(t.to(device, type).contiguous());
        return keep.back();
    };
    gpu::PersistentDecoderModel pm;
    for (int l = 0; l < m.d.layers; ++l) {
        const auto& w = m.layers[l];
        pm.layers.push_back({put(w[0]), put(w[1]), put(w[2]), put(w[3]), put(w[4]), put(w[5]), put(w[6]), put(w[7]),
                             keys[l], values[l]});
    }
    pm.embed = put(m.embed);
    pm.finalNorm = put(m.finalNorm);
    pm.lmHead = put(m.lmHead);
    keep.push_back(m.cosSin.to(device));
    pm.cosSin = keep.back();
    pm.sections = m.d.sections;
    pm.numQHeads = m.d.qHeads;
    pm.numKvHeads = m.d.kvHeads;
    pm.eps = kEps;
    pm.scale = 1.0 / std::sqrt(double(m.d.headDim));
    return pm;
}

// The step's input tensors on `device` (the layout gpu::PersistentDecoder::step takes).
struct Inputs {
    at::Tensor token, positions, slot, context, table;
    Inputs(const Caches& c, const Step& s, const at::Device& device)
        : token(at::tensor({s.token}, at::kLong).to(device)),
          positions(at::tensor(s.positions, at::kLong).view({-1, 1}).to(device)),
          slot(at::tensor({slotOf(c, s.context - 1)}, at::kLong).to(device)),
          context(at::tensor({static_cast<int32_t>(s.context)}, at::kInt).to(device)),
          table(at::tensor(c.table, at::kInt).to(device))
    {
    }
    void copyFrom(const Inputs& other)
    {
        token.copy_(other.token);
        positions.copy_(other.positions);
        slot.copy_(other.slot);
        context.copy_(other.context);
        table.copy_(other.table);
    }
};

std::vector<at::Tensor> cast(const std::vector<at::Tensor>& list, at::ScalarType type, const at::Device& device)
{
    std::vector<at::Tensor> out;
    for (const at::Tensor& t : list) out.push_back(t.to(device, type).contiguous());
    return out;
}

// Two steps: the second one attends to the first's new key.
std::vector<Step> twoSteps(const Dims& d, int context)
{
    auto positions = [&](int pos) {
        std::vector<int64_t> p{pos};
        for (size_t a = 1; a < d.sections.size(); ++a) p.push_back((pos * 7 + 13 * int64_t(a)) % 97);
        return p;
    };
    return {{(context * 31 + 5) % d.vocab, positions(context - 1), context},
            {(context * 17 + 11) % d.vocab, positions(context), context + 1}};
}

}  // namespace

LECTOR_TEST(referenceMatchesFloat64DecoderStep)
{
    // Small odd shapes: group 2, head dim 16, two position axes, 3 layers.
    const Dims d{3, 24, 40, 4, 2, 16, 37, {5, 3}};
    const Model m = makeModel(d, 101);
    for (int context : {1, 17, 40}) {
        Caches c = makeCaches(d, context, 7 + context, 1);
        std::vector<at::Tensor> keys64 = cast(c.keys, at::kDouble, at::kCPU), values64 = cast(c.values, at::kDouble, at::kCPU);
        std::vector<at::Tensor> keep;
        std::vector<at::Tensor> keys = cast(c.keys, at::kFloat, at::kCPU), values = cast(c.values, at::kFloat, at::kCPU);
        const gpu::PersistentDecoder decoder(decoderModel(m, keys, values, at::kFloat, at::kCPU, keep));
        for (const Step& s : twoSteps(d, context)) {
            const at::Tensor want = float64Step(m, keys64, values64, c, s);
            const Inputs in(c, s, at::kCPU);
            const at::Tensor logits = at::full({1, d.vocab}, NAN, at::kFloat);
            decoder.step(logits, in.token, in.positions, in.slot, in.context, in.table);
            kt::expectClose("ref vs float64, context " + std::to_string(s.context), logits.view({-1}), want, 1e-10);
            const int64_t slot = slotOf(c, s.context - 1);
            for (int l = 0; l < d.layers; ++l) {
                const std::string layer = " of layer " + std::to_string(l) + ", context " + std::to_string(s.context);
                kt::expectClose("ref vs float64 new key" + layer, keys[l].view({-1, d.kvHeads, d.headDim})[slot],
                                keys64[l].view({-1, d.kvHeads, d.headDim})[slot], 1e-10);
                kt::expectClose("ref vs float64 new value" + layer, values[l].view({-1, d.kvHeads, d.headDim})[slot],
                                values64[l].view({-1, d.kvHeads, d.headDim})[slot], 1e-10);
            }
        }
    }
}

LECTOR_TEST(stepHiddenIsTheRowTheLmHeadTakes)
{
    // The reference's stepHidden stops before the LM head: its row through the head gives step()'s logits.
    const Dims d{2, 24, 40, 4, 2, 16, 37, {5, 3}};
    const Model m = makeModel(d, 111);
    Caches c = makeCaches(d, 17, 112, 1);
    std::vector<at::Tensor> keep, keys = cast(c.keys, at::kFloat, at::kCPU), values = cast(c.values, at::kFloat, at::kCPU);
    const gpu::PersistentDecoder decoder(decoderModel(m, keys, values, at::kFloat, at::kCPU, keep));
    LECTOR_CHECK(decoder.hasStepHidden());
    const Step s = twoSteps(d, 17)[0];
    const Inputs in(c, s, at::kCPU);
    const at::Tensor logits = at::full({1, d.vocab}, NAN, at::kFloat);
    decoder.step(logits, in.token, in.positions, in.slot, in.context, in.table);
    const at::Tensor hidden = at::full({1, d.hidden}, NAN, at::kFloat);
    decoder.stepHidden(hidden, in.token, in.positions, in.slot, in.context, in.table);
    kt::expectClose("logits of stepHidden's row", at::mv(m.lmHead, hidden.view({-1})), logits.view({-1}), 1e-10);
}

LECTOR_TEST(unsupportedModelsAreNamed)
{
    const Dims d{1, 24, 40, 4, 2, 16, 37, {8}};
    const Model m = makeModel(d, 5);
    Caches c = makeCaches(d, 4, 3, 0);
    std::vector<at::Tensor> keep;
    gpu::PersistentDecoderModel pm = decoderModel(m, c.keys, c.values, at::kFloat, at::kCPU, keep);
    LECTOR_CHECK_EQ(gpu::PersistentDecoder::unsupportedReason(pm), std::string());
    gpu::PersistentDecoderModel wrongShape = pm;
    wrongShape.layers[0].o = pm.layers[0].o.t();  // [in, out]: not the stored layout
    LECTOR_CHECK(gpu::PersistentDecoder::unsupportedReason(wrongShape).find("layer 0") != std::string::npos);
    gpu::PersistentDecoderModel wrongSections = pm;
    wrongSections.sections = {4, 2};
    LECTOR_CHECK(!gpu::PersistentDecoder::unsupportedReason(wrongSections).empty());
    gpu::PersistentDecoderModel wrongHeads = pm;
    wrongHeads.numKvHeads = 3;  // 4 query heads do not share 3 KV heads
    LECTOR_CHECK(!gpu::PersistentDecoder::unsupportedReason(wrongHeads).empty());
    bool threw = false;
    try {
        gpu::PersistentDecoder bad(wrongShape);
    } catch (const c10::Error&) {
        threw = true;
    }
    LECTOR_CHECK(threw);
}

#ifdef LECTOR_HAVE_CUDA

namespace {

// NaN-aware equality of two caches except at the given slots (which must match within `bound`).
void expectCachesMatch(const std::string& what, const at::Tensor& got, const at::Tensor& want,
                       const std::vector<int64_t>& newSlots, at::ScalarType type)
{
    const at::Tensor g = got.to(at::kCPU).to(at::kFloat).view({-1, got.size(2) * got.size(3)});
    const at::Tensor w = want.to(at::kCPU).to(at::kFloat).view({-1, want.size(2) * want.size(3)});
    at::Tensor same = (g == w) | (at::isnan(g) & at::isnan(w));
    for (int64_t s : newSlots) {
        kt::expectClose(what + " new slot " + std::to_string(s), g[s], w[s], kt::nmseBound(type));
        same[s].fill_(true);
    }
    LECTOR_CHECK_MSG(same.all().item<bool>(), what << ": a slot other than the new tokens' changed");
}

using Kind = gpu::PersistentDecoder::Kind;

void checkCuda(const Dims& d, const std::vector<int>& contexts, uint64_t seed, Kind kind = Kind::Persistent)
{
    const at::Device cuda(at::kCUDA, 0);
    const Model m = makeModel(d, seed);
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        for (int context : contexts) {
            const std::string what = std::string(kind == Kind::HeadParallel ? "head-parallel " : "") + kt::typeName(type) +
                                     " hidden " + std::to_string(d.hidden) + " group " +
                                     std::to_string(d.qHeads / d.kvHeads) + " context " + std::to_string(context);
            const Caches c = makeCaches(d, context, seed + context, 1);
            const std::vector<Step> steps = twoSteps(d, context);
            const std::vector<int64_t> newSlots{slotOf(c, context - 1), slotOf(c, context)};
            // Reference on the CPU in the same dtype: both steps, logits of each.
            std::vector<at::Tensor> keepRef, refKeys = cast(c.keys, type, at::kCPU), refValues = cast(c.values, type, at::kCPU);
            const gpu::PersistentDecoder ref(decoderModel(m, refKeys, refValues, type, at::kCPU, keepRef));
            std::vector<at::Tensor> want;
            for (const Step& s : steps) {
                const Inputs in(c, s, at::kCPU);
                want.push_back(at::full({1, d.vocab}, NAN, at::kFloat));
                ref.step(want.back(), in.token, in.positions, in.slot, in.context, in.table);
            }
            // The kernel, launched directly, then replayed from a captured graph on fresh caches.
            for (int graphed = 0; graphed < 2; ++graphed) {
                std::vector<at::Tensor> keep, keys = cast(c.keys, type, cuda), values = cast(c.values, type, cuda);
                const gpu::PersistentDecoder decoder(decoderModel(m, keys, values, type, cuda, keep), kind);
                const std::string how = what + (graphed ? " (graph)" : "");
                Inputs fixed(c, steps[0], cuda);
                at::Tensor logits = at::full({1, d.vocab}, NAN, at::TensorOptions().dtype(at::kFloat).device(cuda));
                gpu::CudaGraph graph;
                if (graphed)  // no eager warm-up: it would write the caches (the direct pass prepared the kernel)
                    graph.capture(cuda, [&] {
                        decoder.step(logits, fixed.token, fixed.positions, fixed.slot, fixed.context, fixed.table);
                    });
                for (size_t k = 0; k < steps.size(); ++k) {
                    const Inputs in(c, steps[k], cuda);
                    logits.fill_(NAN);
                    if (graphed) {
                        fixed.copyFrom(in);
                        graph.replay();
                    } else {
                        decoder.step(logits, in.token, in.positions, in.slot, in.context, in.table);
                    }
                    kt::expectClose(how + " step " + std::to_string(k) + " logits", logits.view({-1}), want[k].view({-1}),
                                    10 * kt::nmseBound(type));
                }
                for (int l = 0; l < d.layers; ++l) {
                    expectCachesMatch(how + " keys of layer " + std::to_string(l), keys[l], refKeys[l], newSlots, type);
                    expectCachesMatch(how + " values of layer " + std::to_string(l), values[l], refValues[l], newSlots, type);
                }
            }
        }
    }
}

}  // namespace

LECTOR_TEST(cudaMatchesReferenceAtTheDecoderShapes)
{
    kt::requireCuda();
    checkCuda({2, 1024, 3584, 16, 8, 128, 120818, {16, 16, 16, 16}}, {1, 1076, 4100}, 1000);
}

LECTOR_TEST(headParallelMatchesReferenceAtTheDecoderShapes)
{
    kt::requireCuda();
    // 1344 = 16 partitions x the 84 keys a CTA loads before its wait: 1345 reads one key after it.
    checkCuda({2, 1024, 3584, 16, 8, 128, 120818, {16, 16, 16, 16}}, {1, 17, 1076, 1345, 4100}, 1500, Kind::HeadParallel);
}

LECTOR_TEST(headParallelNamesOtherShapesUnsupported)
{
    kt::requireCuda();
    const Dims d{1, 264, 520, 6, 3, 128, 1003, {24, 20, 20}};
    const Model m = makeModel(d, 6);
    Caches c = makeCaches(d, 4, 3, 0);
    std::vector<at::Tensor> keep, keys = cast(c.keys, at::kHalf, at::Device(at::kCUDA, 0)),
                                   values = cast(c.values, at::kHalf, at::Device(at::kCUDA, 0));
    const gpu::PersistentDecoderModel pm = decoderModel(m, keys, values, at::kHalf, at::Device(at::kCUDA, 0), keep);
    LECTOR_CHECK_EQ(gpu::PersistentDecoder::unsupportedReason(pm, Kind::Persistent), std::string());
    const std::string why = gpu::PersistentDecoder::unsupportedReason(pm, Kind::HeadParallel);
    LECTOR_CHECK_MSG(why.find("hidden 1024") != std::string::npos, "got: " << why);
}

LECTOR_TEST(cudaMatchesReferenceAtOddShapes)
{
    kt::requireCuda();
    checkCuda({3, 264, 520, 6, 3, 128, 1003, {24, 20, 20}}, {17, 48, 300}, 2000);  // 3 KV heads, 44 partitions each
    checkCuda({1, 200, 96, 1, 1, 128, 77, {64}}, {33}, 3000);                      // one head: 132 partitions
}

// Every output has one writer and a fixed summation order, so repeated launches on the same inputs are
// bitwise equal; a missing wait between CTAs would show up as launches that differ.
namespace {

void checkDeterministic(Kind kind)
{
    const at::Device cuda(at::kCUDA, 0);
    const Dims d{4, 1024, 3584, 16, 8, 128, 4099, {16, 16, 16, 16}};
    const Model m = makeModel(d, 4000);
    const Caches c = makeCaches(d, 1076, 4001, 0);
    std::vector<at::Tensor> keep, keys = cast(c.keys, at::kHalf, cuda), values = cast(c.values, at::kHalf, cuda);
    const gpu::PersistentDecoder decoder(decoderModel(m, keys, values, at::kHalf, cuda, keep), kind);
    const Step s = twoSteps(d, 1076)[0];
    const Inputs in(c, s, cuda);
    const auto floats = at::TensorOptions().dtype(at::kFloat).device(cuda);
    const at::Tensor first = at::full({1, d.vocab}, NAN, floats);
    decoder.step(first, in.token, in.positions, in.slot, in.context, in.table);
    LECTOR_CHECK(at::isfinite(first).all().item<bool>());
    int differing = 0;
    for (int k = 0; k < 30; ++k) {
        const at::Tensor again = at::full({1, d.vocab}, NAN, floats);
        decoder.step(again, in.token, in.positions, in.slot, in.context, in.table);
        differing += at::equal(again, first) ? 0 : 1;
    }
    LECTOR_CHECK_MSG(differing == 0, differing << " of 30 launches differ from the first");
}

}  // namespace

LECTOR_TEST(headParallelStepHiddenMatchesReference)
{
    kt::requireCuda();
    const at::Device cuda(at::kCUDA, 0);
    const Dims d{2, 1024, 3584, 16, 8, 128, 4099, {16, 16, 16, 16}};
    const Model m = makeModel(d, 4100);
    const Caches c = makeCaches(d, 1076, 4101, 0);
    const Step s = twoSteps(d, 1076)[0];
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        std::vector<at::Tensor> keepRef, refKeys = cast(c.keys, type, at::kCPU), refValues = cast(c.values, type, at::kCPU);
        const gpu::PersistentDecoder ref(decoderModel(m, refKeys, refValues, type, at::kCPU, keepRef));
        const Inputs refIn(c, s, at::kCPU);
        const at::Tensor want = at::empty({1, d.hidden}, type);
        ref.stepHidden(want, refIn.token, refIn.positions, refIn.slot, refIn.context, refIn.table);
        std::vector<at::Tensor> keep, keys = cast(c.keys, type, cuda), values = cast(c.values, type, cuda);
        const gpu::PersistentDecoder decoder(decoderModel(m, keys, values, type, cuda, keep), Kind::HeadParallel);
        LECTOR_CHECK(decoder.hasStepHidden());
        const Inputs in(c, s, cuda);
        const at::Tensor got = at::empty({1, d.hidden}, at::TensorOptions().dtype(type).device(cuda));
        decoder.stepHidden(got, in.token, in.positions, in.slot, in.context, in.table);
        kt::expectClose("head-parallel stepHidden " + kt::typeName(type), got.cpu().to(at::kFloat).view({-1}),
                        want.to(at::kFloat).view({-1}), 10 * kt::nmseBound(type));
    }
}

// A launch of several steps, as the model runner captures one: a step, the sampler drawing the next token
// and moving the inputs on in place (gpu::SampleAdvance: the id, the context, every position axis, the
// slot), the next step on those same inputs. The next step's first kernel starts under PDL beside the
// sampler's tail, so it must read the inputs only after its wait (head_parallel_decode.cu, kFirst): if it
// read them before, the second step would attend with the old context, slot or token. Eagerly and as one
// captured graph, against the reference stepping on the inputs moved on by hand.
LECTOR_TEST(headParallelStepReadsTheInputsTheSamplerMovedOn)
{
    kt::requireCuda();
    const at::Device cuda(at::kCUDA, 0);
    const Dims d{2, 1024, 3584, 16, 8, 128, 4099, {16, 16, 16, 16}};
    const Model m = makeModel(d, 4200);
    const int context = 1076;
    const Caches c = makeCaches(d, context, 4201, 2);
    const Step first = twoSteps(d, context)[0];
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(cuda);
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        for (int graphed = 0; graphed < 2; ++graphed) {
            const std::string what = "head-parallel " + kt::typeName(type) + (graphed ? " (graph)" : "");
            std::vector<at::Tensor> keep, keys = cast(c.keys, type, cuda), values = cast(c.values, type, cuda);
            const gpu::PersistentDecoder decoder(decoderModel(m, keys, values, type, cuda, keep), Kind::HeadParallel);
            Inputs in(c, first, cuda);
            const at::Tensor logits0 = at::full({1, d.vocab}, NAN, f32), logits1 = at::full({1, d.vocab}, NAN, f32);
            // Greedy, no penalty; the drawn id lands in the next step's token input.
            const at::Tensor temperature = at::zeros({1}, f32), penalty = at::ones({1}, f32);
            const at::Tensor topK = at::ones({1}, f32.dtype(at::kInt)), seeds = at::zeros({1}, f32.dtype(at::kLong));
            const at::Tensor offsets = at::zeros({1}, f32.dtype(at::kLong)), history = at::full({1}, -1, f32.dtype(at::kLong));
            const at::Tensor scratch = at::zeros({std::max<int64_t>(1, gpu::sampleScratchWords(1, d.vocab))}, f32.dtype(at::kLong));
            const gpu::SampleAdvance advance{in.context, in.positions, in.slot, in.table.view({1, -1}), history};
            auto launch = [&] {
                decoder.step(logits0, in.token, in.positions, in.slot, in.context, in.table);
                gpu::sampleTokens(in.token, logits0, at::Tensor(), temperature, topK, penalty, seeds, offsets, false,
                                  at::Tensor(), scratch, &advance);
                decoder.step(logits1, in.token, in.positions, in.slot, in.context, in.table);
            };
            if (graphed) {
                gpu::CudaGraph graph;
                graph.capture(cuda, launch);
                graph.replay();
            } else {
                launch();
            }
            const int64_t token = history.item<int64_t>();
            LECTOR_CHECK_EQ(token, logits0.argmax(1).item<int64_t>());
            LECTOR_CHECK_EQ(in.token.item<int64_t>(), token);
            LECTOR_CHECK_EQ(in.context.item<int32_t>(), context + 1);
            LECTOR_CHECK_EQ(in.slot.item<int64_t>(), slotOf(c, context));
            // The reference: the same two steps, the second's inputs moved on here.
            std::vector<at::Tensor> keepRef, refKeys = cast(c.keys, type, at::kCPU), refValues = cast(c.values, type, at::kCPU);
            const gpu::PersistentDecoder ref(decoderModel(m, refKeys, refValues, type, at::kCPU, keepRef));
            Step next = first;
            next.token = token;
            for (int64_t& p : next.positions) ++p;
            next.context = context + 1;
            at::Tensor want0 = at::full({1, d.vocab}, NAN, at::kFloat), want1 = at::full({1, d.vocab}, NAN, at::kFloat);
            const Inputs in0(c, first, at::kCPU), in1(c, next, at::kCPU);
            ref.step(want0, in0.token, in0.positions, in0.slot, in0.context, in0.table);
            ref.step(want1, in1.token, in1.positions, in1.slot, in1.context, in1.table);
            kt::expectClose(what + " first step", logits0.view({-1}), want0.view({-1}), 10 * kt::nmseBound(type));
            kt::expectClose(what + " the step after the sampler", logits1.view({-1}), want1.view({-1}), 10 * kt::nmseBound(type));
            LECTOR_CHECK(at::equal(in.positions.cpu().view({-1}), at::tensor(next.positions, at::kLong)));
        }
    }
}

LECTOR_TEST(cudaStepIsDeterministic)
{
    kt::requireCuda();
    checkDeterministic(Kind::Persistent);
    checkDeterministic(Kind::HeadParallel);
}

#endif  // LECTOR_HAVE_CUDA
