// The serving engine's decoder (core/runner/model_runner: fused QK-norm + XD-RoPE, fused add + RMSNorm,
// SiLU-and-mul, paged K/V write, paged prefill and decode attention) against the reference TextDecoder on
// its own contiguous cache (itself checked against the transformers fixtures in tst_hunyuan_text), on the
// tiny fixture model in float32 through gpu/'s CPU references (on the GPU machine the same test runs on
// CUDA where the kernels fit). Steps mix a prefill chunk with a full prefill, then a prefill tail with a
// decode, then decodes only, over shuffled KV blocks, with 4-axis positions that differ per axis.
// Plus the device sampler against the host Sampler (greedy with the repetition penalty).
#include "tests/support/lector_test.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/decoder.h"
#include "core/model/hunyuan/prompt.h"
#include "core/model/hunyuan/sampler.h"
#include "core/model/hunyuan/weights.h"
#include "core/runner/device_sampler.h"
#include "core/runner/model_runner.h"

using namespace lector;
using lector::test::must;
namespace hy = lector::model::hunyuan;

namespace {

struct Seq {
    std::vector<int> ids;  // whole sequence: prompt then the decode tokens
    at::Tensor positions;  // [4, ids.size()] int64
    std::unique_ptr<hy::KvCache> cache;
    std::vector<int> blocks;  // paged KV blocks of the sequence
};

// The tiny fixture model's config and float32 CPU decoder.
struct TinyModel {
    std::filesystem::path dir = test::fixture("fixtures/hunyuan/tiny_model");
    hy::HunyuanConfig config = must(hy::loadConfig(dir));
    hy::WeightStore weights = must(hy::WeightStore::open(dir));
    hy::TextDecoder decoder = must(hy::TextDecoder::load(weights, config.text));
};

double relErr(const at::Tensor& a, const at::Tensor& b)
{
    return (a - b).norm().item<double>() / std::max(b.norm().item<double>(), 1e-30);
}

// deviceIds: decode-only steps take their ids from RunnerStep::deviceTokenIds, with wrong ids on the host
// (the engine's overlapped steps, whose ids are the previous step's tokens still on the device).
// tuning: taken by the runner before the steps (ModelRunner::applyTuning), as from an earlier start.
void checkStepByStep(const runner::RunnerOptions& options, bool deviceIds = false,
                     const runner::RunnerTuning* tuning = nullptr)
{
    c10::InferenceMode guard;
    const TinyModel tiny;
    const hy::HunyuanConfig& config = tiny.config;
    const hy::TextDecoder& decoder = tiny.decoder;
    const int bs = 16, numBlocks = 32;
    runner::PagedKvStorage kv(config.text.numLayers, config.text.numKvHeads, config.text.headDim, numBlocks, bs,
                              at::kFloat, at::kCPU);
    runner::ModelRunner runner(decoder, kv, options);
    if (tuning) {
        LECTOR_CHECK(runner.applyTuning(*tuning));
        LECTOR_CHECK(runner.tuning() == *tuning);
    }
    if (options.persistentDecode == runner::RunnerOptions::Persistent::Always)
        LECTOR_CHECK_MSG(runner.persistentReport().find("CPU reference") != std::string::npos, runner.persistentReport());

    // Two sequences: prompts of 37 and 50 tokens, then 3 decode tokens each. Positions: axis 0 sequential,
    // the others scrambled (like image rows, where w / h / t differ from the sequence index).
    std::mt19937 rng(7);
    std::vector<int> blocks(numBlocks);
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    std::vector<Seq> seqs(2);
    const int promptLen[2] = {37, 50};
    int nextBlock = 0;
    for (int s = 0; s < 2; ++s) {
        Seq& q = seqs[static_cast<size_t>(s)];
        const int total = promptLen[s] + 4;
        for (int i = 0; i < total; ++i) q.ids.push_back(static_cast<int>(rng() % 1000) + 5);
        q.positions = at::arange(total, at::kLong).unsqueeze(0).repeat({4, 1});
        for (int a = 1; a < 4; ++a)
            for (int i = 0; i < promptLen[s]; ++i) q.positions[a][i] = static_cast<int64_t>(rng() % 40);
        q.cache = decoder.makeCache(total);
        for (int b = 0; b < (total + bs - 1) / bs; ++b) {
            q.blocks.push_back(blocks[static_cast<size_t>(nextBlock++)]);
        }
    }

    // Steps as (sequence, from, count): the fused runner sees each step's chunks at once; the reference
    // runs each chunk alone on its contiguous cache and gives the logits of the chunk's last token.
    struct Chunk { int seq; int from; int count; };
    const std::vector<std::vector<Chunk>> steps = {
        {{0, 0, 20}, {1, 0, 50}},   // prefill chunk + whole prefill
        {{1, 50, 1}, {0, 20, 10}},  // a decode first, then a prefill chunk (decode kernel, then prefill kernel)
        {{0, 30, 7}, {1, 51, 1}},   // prefill tail + a decode (prefill kernel over both)
        {{0, 37, 1}, {1, 52, 1}},   // decodes only (decode kernel)
        {{1, 53, 1}, {0, 38, 1}},   // decodes, sequences in the other order
        {{0, 39, 1}},               // a decode step of one sequence (the persistent decoder where it is on)
    };
    for (size_t k = 0; k < steps.size(); ++k) {
        runner::RunnerStep step;
        std::vector<at::Tensor> embeds, want;
        std::vector<std::vector<std::int64_t>> axes(4);
        for (const Chunk& c : steps[k]) {
            Seq& q = seqs[static_cast<size_t>(c.seq)];
            const std::vector<int> ids(q.ids.begin() + c.from, q.ids.begin() + c.from + c.count);
            const at::Tensor e = must(decoder.embed(ids, at::Tensor(), -1));
            const at::Tensor pos = q.positions.narrow(1, c.from, c.count).contiguous();
            want.push_back(decoder.logits(decoder.forward(e, pos, *q.cache)).select(0, c.count - 1));
            // Prefill rows go in as embeddings, decode rows as token ids: both paths of the runner's input.
            const bool decode = c.count == 1 && c.from >= promptLen[c.seq];
            for (int i = 0; i < c.count; ++i) step.tokenIds.push_back(decode ? ids[static_cast<size_t>(i)] : -1);
            if (!decode) embeds.push_back(e);
            for (int a = 0; a < 4; ++a)
                for (int i = 0; i < c.count; ++i) axes[static_cast<size_t>(a)].push_back(pos[a][i].item<int64_t>());
            runner::RunnerSequence rs;
            rs.numNew = c.count;
            rs.past = c.from;
            rs.blocks = q.blocks;
            rs.sample = true;
            step.seqs.push_back(rs);
        }
        for (const auto& a : axes) step.positions.insert(step.positions.end(), a.begin(), a.end());
        if (!embeds.empty()) step.promptEmbeds = at::cat(embeds);
        if (deviceIds && embeds.empty()) {
            step.deviceTokenIds = at::tensor(step.tokenIds, at::kLong);
            for (std::int64_t& id : step.tokenIds) id = (id + 1) % 1000;  // must not be read
        }
        const at::Tensor got = runner.run(step);  // [sequences, vocab]
        LECTOR_CHECK_EQ(got.size(0), static_cast<int64_t>(want.size()));
        for (size_t i = 0; i < want.size(); ++i) {
            const double err = relErr(got[static_cast<int64_t>(i)], want[i]);
            LECTOR_CHECK_MSG(err < 2e-5, "step " << k << " chunk " << i << ": logits rel err " << err);
            LECTOR_CHECK_EQ(got[static_cast<int64_t>(i)].argmax().item<int64_t>(), want[i].argmax().item<int64_t>());
        }
    }
}

}  // namespace

LECTOR_TEST(fusedRunnerMatchesTheReferenceDecoderStepByStep)
{
    checkStepByStep(runner::RunnerOptions{});
}

// The same with the skinny GEMM for every projection up to 2 rows: the decode-only steps then take the
// fused variants (SiLU-mul read by the down projection, add + RMSNorm inside the next projection with the
// residual in two alternating buffers, the final norm before the LM head).
LECTOR_TEST(fusedRunnerWithSkinnyProjectionsMatchesTheReference)
{
    runner::RunnerOptions options;
    options.skinnyRows = 2;
    checkStepByStep(options);
}

// The same with the skinny GEMM's SIMT engine at one row and its tensor-core engine above (on the CPU
// both are the reference): the engine choice reaches every fused variant, and steps of 2 rows take it.
LECTOR_TEST(fusedRunnerWithTensorCoreProjectionsMatchesTheReference)
{
    runner::RunnerOptions options;
    options.skinnyRows = 1;
    options.tensorCoreRows = 64;
    checkStepByStep(options);
}

// The same with the tensor-core engine behind the add + RMSNorm and SiLU-mul kernels (the route the
// decode-step tuning picks on CUDA where it is faster): the norm kernel's output and the activation's
// reach the plain products, and the residual stays in one buffer.
LECTOR_TEST(fusedRunnerWithTensorCoresBehindTheNormKernelsMatchesTheReference)
{
    runner::RunnerOptions options;
    options.skinnyRows = 1;
    options.tensorCoreRows = 64;
    options.tensorCoreApart = true;
    checkStepByStep(options);
}

// A tuning kept from an earlier start (core/runner/tuning_cache.h), taken instead of measuring: transposed
// copies of the o and down weights and the LM head, the skinny GEMM at 1-2 rows, and decode-step routes
// for 3 to 16 rows (the steps of 8 and 11 rows here) that put qkv, gate/up and down on the tensor cores
// behind the norm kernels and o on the tensor cores; all of it must reach the products (on the CPU through
// gpu/'s references) and give the reference's logits.
LECTOR_TEST(aTuningFromAnEarlierStartServesTheReferenceLogits)
{
    runner::RunnerTuning t;
    t.transposed = {false, true, false, true, true};
    t.skinnyRows = {2, 1, 2, 1, 1};
    t.tensorCoreRows = {0, 0, 0, 0, 0};
    t.tensorCoresAgree = {true, true, true, true, false};
    t.chainRoutes[16] = {3, 2, 3, 3};  // TensorCoreApart, TensorCore, TensorCoreApart, TensorCoreApart
    t.singleSequence = runner::RunnerTuning::kChain;
    t.report = {"decode step of 16 sequences: (kept)"};
    checkStepByStep(runner::RunnerOptions{}, /*deviceIds=*/false, &t);
}

// A kept tuning that does not fit the runner changes nothing: a single-sequence decoder it does not have
// (the CPU runner has no head-parallel kernels), a route that does not exist, a graph size below 1, a row
// count out of range.
LECTOR_TEST(aTuningThatDoesNotFitTheRunnerIsRefused)
{
    c10::InferenceMode guard;
    const TinyModel tiny;
    runner::PagedKvStorage kv(tiny.config.text.numLayers, tiny.config.text.numKvHeads, tiny.config.text.headDim, 8, 16,
                              at::kFloat, at::kCPU);
    runner::ModelRunner runner(tiny.decoder, kv);
    const runner::RunnerTuning before = runner.tuning();
    runner::RunnerTuning t = before;
    t.transposed = {true, true, true, true, true};
    t.singleSequence = runner::RunnerTuning::kHeadParallel;
    LECTOR_CHECK(!runner.applyTuning(t));
    t.singleSequence = runner::RunnerTuning::kChain;
    t.chainRoutes[8] = {0, 9, 0, 0};
    LECTOR_CHECK(!runner.applyTuning(t));
    t.chainRoutes.clear();
    t.rotationInside[0] = true;  // no graph of 0 sequences
    LECTOR_CHECK(!runner.applyTuning(t));
    t.rotationInside.clear();
    t.skinnyRows[2] = -3;
    LECTOR_CHECK(!runner.applyTuning(t));
    LECTOR_CHECK(runner.tuning() == before);
    // Nothing is tuned on the CPU, so there is no key to keep a tuning under.
    LECTOR_CHECK(runner.tuningKey().empty());
}

// Decode-only steps whose ids come from the device (RunnerStep::deviceTokenIds) rather than the host.
LECTOR_TEST(decodeIdsFedFromTheDeviceMatchTheReference)
{
    checkStepByStep(runner::RunnerOptions{}, /*deviceIds=*/true);
}

// Single-sequence decode steps through gpu::PersistentDecoder (here its CPU reference, the kernel chain
// spelled out over the same weights and paged caches), with host and device ids: the runner's wiring of
// ids, positions, slot, context length and block table into it.
LECTOR_TEST(persistentDecoderStepsMatchTheReference)
{
    runner::RunnerOptions options;
    options.persistentDecode = runner::RunnerOptions::Persistent::Always;
    checkStepByStep(options);
    checkStepByStep(options, /*deviceIds=*/true);
}

// The load-time check the engine relies on to fall back to the reference decoder on a card where the
// kernels misbehave: on agreeing runners (here the CPU references) its error is tiny. (Dropping the
// QK-norm/RoPE call from the runner makes it report 0.73, checked by hand.)
LECTOR_TEST(selfCheckOfAgreeingRunnersIsTiny)
{
    c10::InferenceMode guard;
    const TinyModel tiny;
    const hy::HunyuanConfig& config = tiny.config;
    const hy::TextDecoder& decoder = tiny.decoder;
    runner::PagedKvStorage kv(config.text.numLayers, config.text.numKvHeads, config.text.headDim, 8, 16, at::kFloat,
                              at::kCPU);
    runner::ModelRunner runner(decoder, kv);
    const double error = runner.selfCheck();
    LECTOR_CHECK_MSG(std::isfinite(error) && error < 1e-5, "self check error " << error);
}

LECTOR_TEST(graphBatchLadderCoversEveryBatchUpToTheMaximum)
{
    const auto sizes = runner::graphBatchSizes(256);
    LECTOR_CHECK_EQ(sizes.front(), 1);
    LECTOR_CHECK_EQ(sizes.back(), 256);
    LECTOR_CHECK(std::is_sorted(sizes.begin(), sizes.end()));
    // Padding waste stays bounded: the graph used for batch b has fewer than 2b and b + 32 rows.
    for (int b = 1; b <= 256; ++b) {
        const int g = *std::lower_bound(sizes.begin(), sizes.end(), b);
        LECTOR_CHECK_MSG(g >= b && g <= std::max(1, 2 * b - 1) && g < b + 32, "batch " << b << " -> " << g);
    }
    LECTOR_CHECK(runner::graphBatchSizes(5) == (std::vector<int>{1, 2, 4}));
}

LECTOR_TEST(deviceSamplerMatchesTheHostSamplerWithPenalty)
{
    c10::InferenceMode guard;
    const int vocab = 301, S = 5;
    runner::DeviceSampler sampler(vocab, at::kCPU);
    std::mt19937 rng(3);
    std::vector<int> rows;
    std::vector<std::vector<int>> history(S);
    for (int s = 0; s < S; ++s) {
        rows.push_back(sampler.acquireRow());
        for (int i = 0; i < 40; ++i) history[static_cast<size_t>(s)].push_back(static_cast<int>(rng() % vocab));
        history[static_cast<size_t>(s)].push_back(vocab + 7);  // out of the vocabulary: ignored
        sampler.resetRow(rows.back(), history[static_cast<size_t>(s)]);
    }
    for (int step = 0; step < 6; ++step) {
        // Logits whose argmax is often a penalised id, so the penalty decides.
        at::Tensor logits = at::randn({S, vocab}, at::kFloat) * 0.01;
        for (int s = 0; s < S; ++s) logits[s][history[static_cast<size_t>(s)][0]] = 0.5f + 0.01f * step;
        std::vector<runner::DeviceSampling> params;
        for (int s = 0; s < S; ++s) {
            runner::DeviceSampling d;
            d.row = rows[static_cast<size_t>(s)];
            d.repetitionPenalty = s % 2 ? 1.0f : 100.0f;
            params.push_back(d);
        }
        const auto got = sampler.sample(logits, params);
        for (int s = 0; s < S; ++s) {
            hy::SamplingConfig sc;
            sc.repetitionPenalty = params[static_cast<size_t>(s)].repetitionPenalty;
            hy::Sampler host(sc);
            const int want = host.sample(logits[s], history[static_cast<size_t>(s)]);
            LECTOR_CHECK_EQ(got[static_cast<size_t>(s)], want);
            history[static_cast<size_t>(s)].push_back(want);  // the device marks it too
        }
    }
    // A released row is handed out again and reset clears it.
    sampler.releaseRow(rows[0]);
    const int again = sampler.acquireRow();
    LECTOR_CHECK_EQ(again, rows[0]);
}

// The sampler's fixed capacity and the pieces a decode graph draws with: past `capacity` sequences
// acquireRow() says no (the backend then draws on the host); packed parameters for more rows than
// sequences draw greedily from a spare row and leave every sequence's presence row alone.
LECTOR_TEST(deviceSamplerPadsGraphRowsWithASpareRow)
{
    c10::InferenceMode guard;
    const int vocab = 97;
    runner::DeviceSampler sampler(vocab, at::kCPU, /*capacity=*/2);
    const int a = sampler.acquireRow(), b = sampler.acquireRow();
    LECTOR_CHECK(a >= 0 && b >= 0 && a != b);
    LECTOR_CHECK_EQ(sampler.acquireRow(), -1);
    sampler.releaseRow(b);
    LECTOR_CHECK_EQ(sampler.acquireRow(), b);

    // Sequence a has id 5 in its history, so the penalty of 100 sends it to its second best, 6. The two
    // padding rows' best ids are 11 and 12 (greedy, no penalty).
    sampler.resetRow(a, {5});
    at::Tensor logits = at::zeros({3, vocab}, at::kFloat);
    logits[0][5] = 1.0f;
    logits[0][6] = 0.5f;
    logits[1][11] = 1.0f;
    logits[2][12] = 1.0f;
    runner::DeviceSampling d;
    d.row = a;
    d.repetitionPenalty = 100.0f;
    const std::int64_t rows = 3;
    at::Tensor packed = at::zeros({runner::DeviceSampler::packedBytes(rows)}, at::kByte);
    sampler.pack({d}, rows, packed.data_ptr<std::uint8_t>());
    at::Tensor tokens = at::full({rows}, -1, at::kLong);
    sampler.launch(tokens, logits, packed, at::Tensor());
    LECTOR_CHECK_EQ(tokens[0].item<std::int64_t>(), 6);
    LECTOR_CHECK_EQ(tokens[1].item<std::int64_t>(), 11);
    LECTOR_CHECK_EQ(tokens[2].item<std::int64_t>(), 12);
    // a's row now holds 5 and its new 6; b's row stays empty whatever the padding rows drew.
    const auto pending = runner::DeviceSampler::copyToHost(tokens);
    LECTOR_CHECK(pending.onDevice().data_ptr() == tokens.data_ptr());
    at::Tensor again = at::zeros({1, vocab}, at::kFloat);
    again[0][11] = 1.0f;
    again[0][12] = 0.9f;
    runner::DeviceSampling e;
    e.row = b;
    e.repetitionPenalty = 100.0f;
    const std::int64_t fromB = sampler.sample(again, {e}).at(0);
    LECTOR_CHECK_EQ(fromB, 11);  // 11 not penalised: b never saw it
    at::Tensor third = at::zeros({1, vocab}, at::kFloat);
    third[0][6] = 1.0f;
    third[0][7] = 0.5f;
    const std::int64_t fromA = sampler.sample(third, {d}).at(0);
    LECTOR_CHECK_EQ(fromA, 7);  // a's 6 was marked by the packed draw
}
