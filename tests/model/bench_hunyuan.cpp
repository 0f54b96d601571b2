// bench_hunyuan: parity and latency of the HunyuanOCR model path (vision tower + decoder with a KV cache,
// one request) on any device and dtype, against a golden file of tools/hunyuan_reference.py.
// Not a test: the GPU run (bench/gpu/run_all.sh) drives it on the --size full random model; on this
// machine it runs on the tiny fixture model in float32 (then the parity figures must be ~1e-5).
//   bench_hunyuan --model DIR --image PNG [--golden FILE] [--device cpu|cuda] [--dtype float32|float16|bfloat16]
//                 [--gen 32] [--new-tokens 256] [--repeats 10] [--threads N]
//                 [--runner fused] [--decode-batches 1,32] [--context 1076]
// Parity (with --golden): image embeddings and last-position logits as relative L2 error, the prefill
// ids, and the greedy decode (no penalty, like the reference) compared step by step with the
// reference's top-2 margin at the first step that differs. Timing: median of --repeats requests of
// --new-tokens forced tokens, split into preprocess / vision / prefill / decode.
// --runner fused: the serving engine's decoder (core/runner/model_runner: fused kernels, paged KV cache,
// CUDA graphs for decode) gets the same parity checks (prefill logits, greedy decode through graphed
// decode steps), then one decode step alone at each of --decode-batches sequences of --context cached
// tokens, with and without CUDA graphs (median of 50 steps, host work included).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "core/common/timing.h"
#include "core/image/decode.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/decoder.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/prompt.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/hunyuan/weights.h"
#include "core/model/safetensors.h"
#include "core/runner/device_sampler.h"
#include "core/runner/model_runner.h"
#include "core/runner/paged_kv.h"
#include "gpu/device.h"
#include "gpu/ops.h"

using namespace lector;
using namespace lector::model::hunyuan;
using Clock = std::chrono::steady_clock;

namespace {

// The spotting prompt's ids in the real tokenizer (hunyuanocr-spec.md §7), as the reference uses them.
const std::vector<int> kSpottingIds = {5055, 951, 9977, 12858, 1843, 9738, 270, 934, 8433, 4699, 68216, 8287, 292};

// Waits for the device work that produced `t` (a one-element copy to the host).
void sync(const at::Tensor& t)
{
    if (t.defined() && t.numel() > 0) (void)t.flatten()[0].item<float>();
}

double relErr(const at::Tensor& ours, const at::Tensor& ref)
{
    const auto a = ours.to(at::kCPU, at::kDouble).flatten(), b = ref.to(at::kCPU, at::kDouble).flatten();
    if (a.numel() != b.numel()) return -1;
    return (a - b).norm().item<double>() / std::max(b.norm().item<double>(), 1e-30);
}

std::vector<std::string> split(const std::string& s)
{
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t comma = s.find(',', start);
        const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!part.empty()) out.push_back(part);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

double median(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

[[noreturn]] void die(const std::string& what)
{
    std::fprintf(stderr, "bench_hunyuan: %s\n", what.c_str());
    std::exit(1);
}

template <class T>
T must(Result<T> r, const char* what)
{
    if (!r.ok()) die(std::string(what) + ": " + r.error().message);
    return std::move(r).value();
}

}  // namespace

// A decode-only step of `batch` sequences with `context` cached tokens each (sequence i owns blocks
// i * blocksPerSeq ..), as the engine builds it.
runner::RunnerStep decodeStep(int batch, int context, int blockSize, int numAxes)
{
    const int blocksPerSeq = (context + 1 + blockSize - 1) / blockSize;
    runner::RunnerStep step;
    for (int i = 0; i < batch; ++i) {
        runner::RunnerSequence s;
        s.numNew = 1;
        s.past = context;
        for (int b = 0; b < blocksPerSeq; ++b) s.blocks.push_back(i * blocksPerSeq + b);
        s.sample = true;
        step.seqs.push_back(std::move(s));
        step.tokenIds.push_back(1000 + i);
    }
    for (int a = 0; a < numAxes; ++a)
        for (int i = 0; i < batch; ++i) step.positions.push_back(context);
    return step;
}

// The vision tower of one page, median of 10, with the fused attention backends libtorch may pick
// (flash, then memory-efficient, then cuDNN on the GPU machine's 2.11): which one is fastest here.
void visionBackends(const VisionEncoder& vision, const PreprocessedImage& pre)
{
#if __has_include(<ATen/ops/_scaled_dot_product_cudnn_attention.h>)
    auto& ctx = at::globalContext();
    struct Setting { const char* name; bool flash, memEff, cudnn; };
    const Setting settings[] = {{"default (flash first)", true, true, true}, {"cuDNN (flash, mem-efficient off)", false, false, true},
                                {"memory-efficient only", false, true, false}};
    std::printf("| vision tower, %dx%d patches | median ms |\n|---|---|\n", pre.gridH, pre.gridW);
    for (const Setting& st : settings) {
        ctx.setSDPUseFlash(st.flash);
        ctx.setSDPUseMemEfficient(st.memEff);
        ctx.setSDPUseCuDNN(st.cudnn);
        try {
            for (int i = 0; i < 2; ++i) sync(vision.encode(pre));
            std::vector<double> times;
            for (int i = 0; i < 10; ++i) {
                const auto t0 = Clock::now();
                sync(vision.encode(pre));
                times.push_back(msSince(t0));
            }
            std::printf("| %s | %.2f |\n", st.name, median(times));
        } catch (const std::exception& e) {
            std::printf("| %s | failed: %.80s |\n", st.name, e.what());
        }
    }
    ctx.setSDPUseFlash(true);
    ctx.setSDPUseMemEfficient(true);
    ctx.setSDPUseCuDNN(true);
    std::printf("\n");
#else
    (void)vision;
    (void)pre;
#endif
}

// One row of a breakdown table: an operation called perStep times a step (or a prefill).
struct TimedOp {
    const char* name;
    int perStep;
    std::function<void()> fn;
};

// Times each op alone (gpu::graphMicros: launch overhead excluded) and prints the table: "| op, title |
// us per call | calls per unit | us per unit |". Returns the sum over the ops.
double printOpTable(const at::Device& device, const std::string& title, const char* unit, const std::vector<TimedOp>& ops)
{
    std::printf("| op, %s | us per call | calls per %s | us per %s |\n|---|---|---|---|\n", title.c_str(), unit, unit);
    double total = 0.0;
    for (const TimedOp& op : ops) {
        const double us = gpu::graphMicros(device, op.fn);
        total += us * op.perStep;
        std::printf("| %s | %.2f | %d | %.1f |\n", op.name, us, op.perStep, us * op.perStep);
    }
    return total;
}

// Random activations of `rows` rows in the decoder's shapes, as one layer's ops read and write them;
// q, k and v are views of qkv.
struct LayerActivations {
    at::Tensor h, res, qkv, attn, gateUp, act, q, k, v;
};

LayerActivations layerActivations(const TextConfig& c, const at::TensorOptions& opts, int64_t rows)
{
    const int64_t d = c.headDim, hq = c.numHeads, hk = c.numKvHeads;
    LayerActivations a;
    a.h = at::randn({rows, c.hiddenSize}, opts);
    a.res = at::randn({rows, c.hiddenSize}, opts);
    a.qkv = at::randn({rows, (hq + 2 * hk) * d}, opts);
    a.attn = at::randn({rows, hq, d}, opts);
    a.gateUp = at::randn({rows, 2 * c.intermediateSize}, opts);
    a.act = at::randn({rows, c.intermediateSize}, opts);
    a.q = a.qkv.narrow(1, 0, hq * d).view({rows, hq, d});
    a.k = a.qkv.narrow(1, hq * d, hk * d).view({rows, hk, d});
    a.v = a.qkv.narrow(1, (hq + hk) * d, hk * d).view({rows, hk, d});
    return a;
}

// GPU time of each operation of a decode step at `batch` sequences of `context` tokens (gpu::graphMicros:
// launch overhead excluded); per-layer ops are multiplied by the number of layers. Projections as the
// decoder stores them: the runner's tuned choice (transposed copies, the skinny GEMM) is in its layout
// report above. CUDA only.
void decodeBreakdown(const TextDecoder& decoder, runner::PagedKvStorage& kv, int batch, int context)
{
    const TextConfig& c = decoder.config();
    const at::Device device = decoder.device();
    const auto opts = at::TensorOptions().dtype(decoder.dtype()).device(device);
    const auto& w = decoder.layers()[0];
    const int64_t b = batch, d = c.headDim, hq = c.numHeads, hk = c.numKvHeads, bs = kv.blockSize();
    const int64_t blocksPerSeq = (context + 1 + bs - 1) / bs;
    const LayerActivations act0 = layerActivations(c, opts, b);
    const at::Tensor &h = act0.h, &res = act0.res, &attn = act0.attn, &gateUp = act0.gateUp, &act = act0.act;
    const at::Tensor &q = act0.q, &k = act0.k, &v = act0.v;
    const at::Tensor pos = at::full({4, b}, context, at::TensorOptions().dtype(at::kLong).device(device));
    const at::Tensor cosSin = at::randn({context + 8, d}, at::TensorOptions().dtype(at::kFloat).device(device));
    const at::Tensor slots = at::arange(b, at::TensorOptions().dtype(at::kLong).device(device)) * (blocksPerSeq * bs) + context;
    const at::Tensor table = at::arange(b * blocksPerSeq, at::TensorOptions().dtype(at::kInt).device(device)).view({b, blocksPerSeq});
    const at::Tensor lens = at::full({b}, context + 1, at::TensorOptions().dtype(at::kInt).device(device));
    const at::Tensor graphTable = at::zeros({b, 512}, table.options());
    graphTable.narrow(1, 0, blocksPerSeq).copy_(table);
    const at::Tensor keyCache = kv.keys(0).view({-1, bs, hk, d}), valueCache = kv.values(0).view({-1, bs, hk, d});
    const double scale = 1.0 / std::sqrt(double(d));
    const int L = c.numLayers;
    std::vector<TimedOp> ops = {
        {"qkv matmul", L, [&] { (void)at::linear(h, w.qkvProj); }},
        {"o matmul", L, [&] { (void)at::linear(attn.view({b, hq * d}), w.oProj); }},
        {"gate/up matmul", L, [&] { (void)at::linear(h, w.gateUpProj); }},
        {"down matmul", L, [&] { (void)at::linear(act, w.downProj); }},
        {"lm head + float", 1, [&] { (void)at::linear(h, decoder.lmHead()).to(at::kFloat); }},
        {"qk-norm + rope", L, [&] { gpu::qkNormRope(q, k, pos, cosSin, w.queryNorm, w.keyNorm, c.xdropeSection, 1e-5); }},
        {"kv write", L, [&] { gpu::writeKvCache(keyCache, valueCache, k, v, slots); }},
        {"qk-norm + rope + kv write (one kernel)", L, [&] { gpu::qkNormRopeWriteKv(q, k, v, pos, cosSin, w.queryNorm, w.keyNorm, c.xdropeSection, 1e-5, keyCache, valueCache, slots); }},
        {"attention (auto split)", L, [&] { gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, table, lens, context + 1, scale, -1); }},
        {"attention (graph: 8192, p128)", L, [&] { gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, graphTable, lens, 8192, scale, 128); }},
        {"attention (graph: 8192, p64)", L, [&] { gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, graphTable, lens, 8192, scale, 64); }},
        {"attention (graph: 8192, p256)", L, [&] { gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, graphTable, lens, 8192, scale, 256); }},
        {"attention (graph: 8192, p512)", L, [&] { gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, graphTable, lens, 8192, scale, 512); }},
        {"attention (ctx, p64)", L, [&] { gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, table, lens, context + 1, scale, 64); }},
        {"attention (graph: 8192, row partitions, the graphs' choice from 8 rows)", L, [&] {
             gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, graphTable, lens, 8192, scale, -1, 0,
                                       gpu::pagedDecodeRowPartitions(b, hk, q.device()));
         }},
        {"add + rmsnorm", 2 * L, [&] { gpu::fusedAddRmsNorm(h, res, attn.view({b, hq * d}).narrow(1, 0, c.hiddenSize), w.postNorm, 1e-5); }},
        {"silu x mul", L, [&] { gpu::siluAndMul(act, gateUp); }},
        {"embedding", 1, [&] { (void)at::embedding(decoder.embedTokens(), slots.remainder(1000)); }},
    };
    if (gpu::pagedDecodeClusterPartitions(keyCache, hq, 8192, 16) == 16) {  // sm_90: the cluster merge
        ops.push_back({"attention (graph: 8192, cluster 16)", L, [&] { gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, graphTable, lens, 8192, scale, -1, 16); }});
        ops.push_back({"attention (graph: 8192, cluster 8)", L, [&] { gpu::pagedDecodeAttention(attn, q, keyCache, valueCache, graphTable, lens, 8192, scale, -1, 8); }});
    }
    if (b <= gpu::kSkinnyMaxRows) {
        const at::Tensor outQkv = at::empty({b, w.qkvProj.size(0)}, opts), outO = at::empty({b, c.hiddenSize}, opts);
        const at::Tensor outGateUp = at::empty({b, w.gateUpProj.size(0)}, opts), outDown = at::empty({b, c.hiddenSize}, opts);
        ops.push_back({"qkv skinny", L, [=, &w] { gpu::skinnyLinear(outQkv, h, w.qkvProj); }});
        ops.push_back({"o skinny", L, [=, &w] { gpu::skinnyLinear(outO, attn.view({b, hq * d}), w.oProj); }});
        ops.push_back({"gate/up skinny", L, [=, &w] { gpu::skinnyLinear(outGateUp, h, w.gateUpProj); }});
        const at::Tensor outLogits = at::empty({b, decoder.lmHead().size(0)}, opts.dtype(at::kFloat));
        ops.push_back({"lm head skinny, float32 out", 1, [=, &decoder] { gpu::skinnyLinear(outLogits, h, decoder.lmHead()); }});
        ops.push_back({"down skinny, silu x mul input", L, [=, &w] { gpu::skinnyLinear(outDown, gateUp, w.downProj, true); }});
        const at::Tensor res2 = at::empty_like(res);
        ops.push_back({"qkv skinny, add + rmsnorm prologue", L, [=, &w] { gpu::skinnyLinearAddRmsNorm(outQkv, h, res, res2, w.inputNorm, 1e-5, w.qkvProj); }});
        ops.push_back({"gate/up skinny, add + rmsnorm prologue", L, [=, &w] { gpu::skinnyLinearAddRmsNorm(outGateUp, h, res, res2, w.postNorm, 1e-5, w.gateUpProj); }});
    }
    if (b > 1 && b <= gpu::kSkinnyTcMaxRows && h.scalar_type() != at::kFloat) {
        // The skinny GEMM's tensor-core engine (sm_90, 16-bit types) on the same operands.
        constexpr gpu::SkinnyEngine tc = gpu::SkinnyEngine::TensorCore;
        const at::Tensor outQkv = at::empty({b, w.qkvProj.size(0)}, opts), outO = at::empty({b, c.hiddenSize}, opts);
        const at::Tensor outGateUp = at::empty({b, w.gateUpProj.size(0)}, opts), outDown = at::empty({b, c.hiddenSize}, opts);
        const at::Tensor outLogits = at::empty({b, decoder.lmHead().size(0)}, opts.dtype(at::kFloat));
        const at::Tensor res2 = at::empty_like(res);
        ops.push_back({"qkv tensor cores, add + rmsnorm prologue", L, [=, &w] { gpu::skinnyLinearAddRmsNorm(outQkv, h, res, res2, w.inputNorm, 1e-5, w.qkvProj, tc); }});
        ops.push_back({"o tensor cores", L, [=, &w] { gpu::skinnyLinear(outO, attn.view({b, hq * d}), w.oProj, false, tc); }});
        ops.push_back({"gate/up tensor cores, add + rmsnorm prologue", L, [=, &w] { gpu::skinnyLinearAddRmsNorm(outGateUp, h, res, res2, w.postNorm, 1e-5, w.gateUpProj, tc); }});
        ops.push_back({"down tensor cores, silu x mul input", L, [=, &w] { gpu::skinnyLinear(outDown, gateUp, w.downProj, true, tc); }});
        ops.push_back({"lm head tensor cores, float32 out", 1, [=, &decoder] { gpu::skinnyLinear(outLogits, h, decoder.lmHead(), false, tc); }});
    }
    if (b == 1) {
        // The whole step as one persistent kernel (same weights and caches), for the per-op sums above.
        const gpu::PersistentDecoderModel pm = runner::persistentDecoderModel(decoder, kv, cosSin);
        if (const std::string why = gpu::PersistentDecoder::unsupportedReason(pm); why.empty()) {
            auto persistent = std::make_shared<gpu::PersistentDecoder>(pm);
            const at::Tensor logits = at::empty({1, c.vocabSize}, opts.dtype(at::kFloat));
            const at::Tensor id = slots.remainder(1000), pos1 = pos.narrow(1, 0, 1);
            ops.push_back({"persistent decode step (every layer + LM head)", 1, [=] {
                               persistent->step(logits, id, pos1, slots, lens, table.view({-1}));
                           }});
        } else {
            std::printf("- persistent decode step not timed: %s\n\n", why.c_str());
        }
    }
    (void)printOpTable(device, "batch " + std::to_string(batch) + ", context " + std::to_string(context), "step", ops);
    std::printf("\n");
}

// GPU time of each operation of the prefill of one prompt of `tokens` new tokens and no cached ones (the
// page's 1076), as the runner's forward() runs them (gpu::graphMicros: launch overhead excluded), so
// their sum can be held against the engine's prefill stage. CUDA only.
void prefillBreakdown(const TextDecoder& decoder, runner::PagedKvStorage& kv, int tokens)
{
    const TextConfig& c = decoder.config();
    const at::Device device = decoder.device();
    const auto opts = at::TensorOptions().dtype(decoder.dtype()).device(device);
    const auto ints = at::TensorOptions().dtype(at::kInt).device(device);
    const auto& w = decoder.layers()[0];
    const int64_t n = tokens, d = c.headDim, hq = c.numHeads, hk = c.numKvHeads, bs = kv.blockSize();
    const int64_t blocks = (n + bs - 1) / bs;
    if (kv.keys(0).view({-1, bs, hk, d}).size(0) < blocks) {
        std::printf("- prefill breakdown not timed: the KV pool holds fewer than %lld blocks\n\n", (long long)blocks);
        return;
    }
    const LayerActivations act0 = layerActivations(c, opts, n);
    const at::Tensor &h = act0.h, &res = act0.res, &attn = act0.attn, &gateUp = act0.gateUp, &act = act0.act;
    const at::Tensor &q = act0.q, &k = act0.k, &v = act0.v;
    const at::Tensor pos = at::arange(n, at::TensorOptions().dtype(at::kLong).device(device)).unsqueeze(0).repeat({4, 1});
    const at::Tensor cosSin = at::randn({n + 8, d}, at::TensorOptions().dtype(at::kFloat).device(device));
    const at::Tensor slots = at::arange(n, at::TensorOptions().dtype(at::kLong).device(device));
    const at::Tensor table = at::arange(blocks, ints).view({1, blocks});
    const at::Tensor cuSeqlens = at::tensor(std::vector<int32_t>{0, int32_t(n)}, at::kInt).to(device);
    const at::Tensor lens = at::full({1}, n, ints);
    const at::Tensor keyCache = kv.keys(0).view({-1, bs, hk, d}), valueCache = kv.values(0).view({-1, bs, hk, d});
    const double scale = 1.0 / std::sqrt(double(d));
    const int L = c.numLayers;
    const std::vector<TimedOp> ops = {
        {"add + rmsnorm", 2 * L + 1, [&] { gpu::fusedAddRmsNorm(h, res, attn.view({n, hq * d}).narrow(1, 0, c.hiddenSize), w.postNorm, 1e-5); }},
        {"qkv matmul", L, [&] { (void)at::linear(h, w.qkvProj); }},
        {"qk-norm + rope + kv write", L, [&] { gpu::qkNormRopeWriteKv(q, k, v, pos, cosSin, w.queryNorm, w.keyNorm, c.xdropeSection, 1e-5, keyCache, valueCache, slots); }},
        {"prefill attention (causal, paged)", L, [&] { gpu::pagedPrefillAttention(attn, q, keyCache, valueCache, table, cuSeqlens, lens, n, n, scale); }},
        {"o matmul", L, [&] { (void)at::linear(attn.view({n, hq * d}), w.oProj); }},
        {"gate/up matmul", L, [&] { (void)at::linear(h, w.gateUpProj); }},
        {"silu x mul", L, [&] { gpu::siluAndMul(act, gateUp); }},
        {"down matmul", L, [&] { (void)at::linear(act, w.downProj); }},
    };
    const double total = printOpTable(device, "prefill of " + std::to_string(n) + " tokens", "prefill", ops);
    std::printf("| sum (the embedding, the last row's LM head and the copies not included) | | | %.1f |\n\n", total);
}

// The fused runner: parity against the golden file (when given) and the decode step alone.
bool benchRunner(const TextDecoder& decoder, const HunyuanConfig& config, const VisionEncoder& vision, const Image& image,
                 std::map<std::string, std::string>& opt, const at::Device& device, at::ScalarType dtype)
{
    const TextConfig& t = config.text;
    const int bs = 16, numAxes = decoder.rope().numAxes(), context = std::stoi(opt.count("context") ? opt["context"] : "1076");
    std::vector<int> batches;
    for (const std::string& b : split(opt.count("decode-batches") ? opt["decode-batches"] : "1,32")) batches.push_back(std::stoi(b));
    const int maxBatch = *std::max_element(batches.begin(), batches.end());
    const int blocksPerSeq = (context + 1 + bs - 1) / bs;
    const int numBlocks = std::max(maxBatch * blocksPerSeq, 256);
    runner::PagedKvStorage kv(t.numLayers, t.numKvHeads, t.headDim, numBlocks, bs, dtype, device);
    // The graphed runner takes the engine's default for batch-1 steps: the fastest at load of the kernel
    // chain, the persistent kernel and the head-parallel kernels (its report says which), so parity and
    // the tables below exercise what the engine serves; the "kernel chain" column is the step without
    // either (tst_persistent_decode checks both kernels against the reference).
    runner::RunnerOptions graphedOptions;
    runner::ModelRunner graphed(decoder, kv, graphedOptions);
    const auto c0 = Clock::now();
    graphed.tuneLayouts();
    const int numGraphs = graphed.captureGraphs();
    std::printf("## fused runner (core/runner/model_runner)\n\n%d CUDA graphs captured in %.0f ms\n\n", numGraphs, msSince(c0));
    for (const std::string& line : graphed.layoutReport()) std::printf("- weight layout, %s\n", line.c_str());
    std::printf("- load-time self check against the reference decoder: rel. L2 %.2e\n", graphed.selfCheck());
    if (!graphed.layoutReport().empty()) std::printf("\n");

    // The engine's runner for one sequence: the single-sequence decoder the load-time timing picks (as
    // graphed's), its decode graphs drawing their own tokens (attachSampler), with the graph of several
    // steps a lone request's launches replay.
    runner::DeviceSampler graphSampler(t.vocabSize, device);
    runner::RunnerOptions sampledOptions;
    sampledOptions.maxGraphBatch = 1;
    runner::ModelRunner sampled(decoder, kv, sampledOptions);
    sampled.attachSampler(graphSampler);
    sampled.tuneLayouts();
    sampled.captureGraphs();
    if (!sampled.greedyScreenReport().empty()) std::printf("- %s\n\n", sampled.greedyScreenReport().c_str());

    bool ok = true;
    if (opt.count("golden")) {
        auto file = must(model::SafetensorsFile::open(opt["golden"]), "golden");
        const PreprocessedImage pre = must(preprocessImage(image, config.preprocess), "preprocess");
        const at::Tensor imageEmbeds = vision.encode(pre);
        const PromptLayout layout = must(imagePromptLayout(config, kSpottingIds, {pre.gridH, pre.gridW}), "prompt");
        const auto L = static_cast<std::int64_t>(layout.ids.size());
        const int gen = std::stoi(opt["gen"]);
        runner::RunnerStep prefill;
        runner::RunnerSequence s;
        s.numNew = L;
        for (std::int64_t b = 0; b < (L + gen + bs - 1) / bs; ++b) s.blocks.push_back(static_cast<int>(b));
        s.sample = true;
        prefill.seqs.push_back(s);
        prefill.tokenIds.assign(static_cast<size_t>(L), -1);
        prefill.promptEmbeds = must(decoder.embed(layout.ids, imageEmbeds, config.tokens.image), "embed");
        const at::Tensor pos = layout.positionIds.contiguous();
        prefill.positions.assign(pos.data_ptr<std::int64_t>(), pos.data_ptr<std::int64_t>() + pos.numel());
        const at::Tensor logits = graphed.run(prefill).flatten();
        const at::Tensor refLogits = file->tensor("last_logits").to(at::kFloat);
        const double logitErr = relErr(logits, refLogits);
        const double logitMaxAbs = (logits.cpu() - refLogits).abs().max().item<double>();
        // Greedy (no penalty, like the reference) through decode steps: graph replays on CUDA. Each step
        // reads its input id from the device (RunnerStep::deviceTokenIds, as the engine's overlapped steps
        // do); the host's copy of the id is deliberately wrong, so a step that read it would split off.
        // Greedy step k (k >= 1) of the page: its input id on the device, a wrong one on the host.
        auto greedyStep = [&](int k, std::int64_t previous, const at::Tensor& onDevice) {
            runner::RunnerStep step;
            runner::RunnerSequence d;
            d.numNew = 1;
            d.past = L + k - 1;
            d.blocks = s.blocks;
            d.sample = true;
            step.seqs.push_back(d);
            step.tokenIds.push_back(previous + 1);
            step.deviceTokenIds = onDevice;
            for (int a = 0; a < numAxes; ++a) step.positions.push_back(d.past);
            return step;
        };
        at::Tensor last = logits.argmax().view({1});
        std::vector<std::int64_t> ids{last.item<std::int64_t>()};
        const auto refGreedy = file->tensor("greedy_ids").to(at::kLong);
        const auto margins = file->tensor("greedy_margins").to(at::kFloat);
        // Each decode step's logits too, not only its argmax (on the random model the reference's greedy
        // ids are one id repeated, so the ids alone say little): against the reference's final hidden state
        // after the same input id (greedy_hidden[k - 1], the reference's step fed greedy_ids[k - 1]) through
        // this decoder's LM head, while our ids still agree with the reference's.
        const at::Tensor refHidden = file->contains("greedy_hidden") ? file->tensor("greedy_hidden") : at::Tensor();
        double stepErr = 0;
        int stepsCompared = 0;
        for (int k = 1; k < gen; ++k) {
            const at::Tensor stepLogits = graphed.run(greedyStep(k, ids.back(), last)).flatten();
            if (refHidden.defined() && k - 1 < refHidden.size(0) && k - 1 < refGreedy.numel() &&
                ids[static_cast<size_t>(k - 1)] == refGreedy[k - 1].item<int64_t>()) {
                const at::Tensor h = refHidden[k - 1].to(device, dtype).unsqueeze(0);
                stepErr = std::max(stepErr, relErr(stepLogits, decoder.logits(h).flatten()));
                ++stepsCompared;
            }
            last = stepLogits.argmax().view({1});
            ids.push_back(last.item<std::int64_t>());
        }
        const int n = std::min<int>(gen, static_cast<int>(refGreedy.numel()));
        int agree = 0;
        while (agree < n && ids[static_cast<size_t>(agree)] == refGreedy[agree].item<int64_t>()) ++agree;
        const double marginAtSplit = agree < n ? margins[agree].item<float>() : 0.0;
        const double flipTol = std::max(0.05, 4 * logitMaxAbs);
        const bool greedyOk = agree == n || marginAtSplit <= flipTol;
        const double tol = dtype == at::kFloat ? 1e-3 : 2e-2;
        const bool stepsOk = stepsCompared == 0 || (stepErr >= 0 && stepErr < tol);
        ok = logitErr >= 0 && logitErr < tol && greedyOk && stepsOk;
        std::printf("| check (fused runner) | value | limit | ok |\n|---|---|---|---|\n");
        std::printf("| last logits rel. L2 | %.2e | %.0e | %s |\n", logitErr, tol, logitErr >= 0 && logitErr < tol ? "yes" : "NO");
        std::printf("| last logits max abs | %.3f | | |\n", logitMaxAbs);
        std::printf("| greedy steps equal | %d / %d | split only where margin <= %.3f | %s |\n", agree, n, flipTol, greedyOk ? "yes" : "NO");
        if (agree < n) std::printf("| reference margin at the first split | %.4f | | |\n", marginAtSplit);
        // (The limit. An id fed at the wrong step moves the tiny model's logits by only ~1.6e-2, the
        // input being the same repeated id, so the ratio to the prefill's own error is printed too.)
        if (stepsCompared > 0)
            std::printf("| decode steps' logits rel. L2 (graph replays), worst of %d | %.2e (%.1fx the prefill's) | %.0e | %s |\n",
                        stepsCompared, stepErr, stepErr / std::max(logitErr, 1e-30), tol, stepsOk ? "yes" : "NO");
        // The same greedy steps through the engine's path: each token drawn inside the decode graph, the
        // next step reading it where the graph drew it (the host's id again deliberately wrong).
        runner::DeviceSampling g;
        g.row = graphSampler.acquireRow();
        graphSampler.resetRow(g.row, {});
        runner::PendingTokens drawn = graphSampler.sampleAsync(sampled.run(prefill), {g});
        std::vector<std::int64_t> inGraph{drawn.get().at(0)};
        for (int k = 1; k < gen; ++k) {
            const runner::RunnerStep step = greedyStep(k, inGraph.back(), drawn.onDevice());
            if (!sampled.samplesInGraph(step)) break;  // no graphs (CPU, or graphs unavailable)
            drawn = sampled.runSampled(step, {g});
            inGraph.push_back(drawn.get().at(0));
        }
        int agreeInGraph = 0;
        const int nInGraph = std::min<int>(n, static_cast<int>(inGraph.size()));
        while (agreeInGraph < nInGraph && inGraph[static_cast<size_t>(agreeInGraph)] == refGreedy[agreeInGraph].item<int64_t>())
            ++agreeInGraph;
        const bool inGraphOk = agreeInGraph == nInGraph || margins[agreeInGraph].item<float>() <= flipTol;
        ok = ok && inGraphOk;
        std::printf("| greedy steps equal, tokens drawn inside the decode graphs | %d / %d | split only where margin <= %.3f | %s |\n",
                    agreeInGraph, nInGraph, flipTol, inGraphOk ? "yes" : "NO");
        // Again in launches of several steps (ModelRunner::runSampledSteps: one graph replay, the sampler
        // moving each step's inputs on for the next), the last few one at a time, as the engine runs a lone
        // request, against one step a replay. With a repetition penalty of 1.3, so that the random model's
        // tokens vary (greedy alone repeats one token here): a step that read a stale input would part the
        // two. Both take the same kernels, so the ids must be equal. (CUDA: the graphs' path.)
        if (device.is_cuda()) {
            runner::DeviceSampling pen = g;
            pen.repetitionPenalty = 1.3f;
            auto decodeAll = [&](bool launches, int& launched, int& perLaunch) {
                graphSampler.resetRow(pen.row, layout.ids);
                runner::PendingTokens run = graphSampler.sampleAsync(sampled.run(prefill), {pen});
                std::vector<std::int64_t> out{run.get().at(0)};
                while (static_cast<int>(out.size()) < gen) {
                    const int k = static_cast<int>(out.size());
                    const runner::RunnerStep step = greedyStep(k, out.back(), run.onDevice());
                    runner::DeviceSampling draw = pen;
                    draw.offset = k;
                    const int steps = sampled.decodeStepsFor(step);
                    if (launches && steps > 1 && k + steps <= gen) {
                        run = sampled.runSampledSteps(step, {draw});
                        perLaunch = steps;
                        ++launched;
                    } else if (sampled.samplesInGraph(step)) {
                        run = sampled.runSampled(step, {draw});
                    } else {
                        break;  // no graphs
                    }
                    for (std::int64_t id : run.get()) out.push_back(id);
                }
                return out;
            };
            int launched = 0, perLaunch = 1, unused = 0, unusedPer = 1;
            const std::vector<std::int64_t> single = decodeAll(false, unused, unusedPer);
            const std::vector<std::int64_t> several = decodeAll(true, launched, perLaunch);
            const bool same = single == several && static_cast<int>(single.size()) == gen;
            std::vector<std::int64_t> distinct = single;
            std::sort(distinct.begin(), distinct.end());
            distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
            ok = ok && same;
            std::printf("| penalty 1.3: %zu ids (%zu distinct) in %d launches of %d decode steps, equal to one step a replay | %s | | %s |\n",
                        several.size(), distinct.size(), launched, perLaunch, same ? "all" : "NOT", same ? "yes" : "NO");
        }
        graphSampler.releaseRow(g.row);
        std::printf("\n");
    }

    runner::RunnerOptions eagerOptions;
    eagerOptions.cudaGraphs = false;
    runner::ModelRunner eager(decoder, kv, eagerOptions);
    eager.tuneLayouts();  // same layouts as the graphed runner: the columns differ by graphs only
    // The batch-1 step without the persistent kernel (the kernel chain in a graph), in the same run.
    runner::RunnerOptions chainOptions;
    chainOptions.persistentDecode = runner::RunnerOptions::Persistent::Never;
    chainOptions.maxGraphBatch = 1;
    runner::ModelRunner chain(decoder, kv, chainOptions);
    chain.tuneLayouts();
    chain.captureGraphs();
    // ... and without the cluster merge in its attention (the split-K ticket), in the same run.
    runner::RunnerOptions ticketOptions = chainOptions;
    ticketOptions.attentionClusterMaxBatch = 0;
    runner::ModelRunner ticket(decoder, kv, ticketOptions);
    ticket.tuneLayouts();
    ticket.captureGraphs();
    std::printf("- batch 1: %s\n\n", graphed.persistentReport().c_str());
    // "queued" times 50 graphed steps issued back to back with one synchronisation at the end: the host
    // prepares each step while the device runs the previous one, as the engine's overlapped steps do.
    auto timed = [&](runner::ModelRunner& r, const runner::RunnerStep& step, double& queued) {
        for (int w = 0; w < 3; ++w) sync(r.run(step));
        std::vector<double> times;
        for (int k = 0; k < 50; ++k) {
            const auto s0 = Clock::now();
            sync(r.run(step));
            times.push_back(msSince(s0));
        }
        at::Tensor out;
        const auto q0 = Clock::now();
        for (int k = 0; k < 50; ++k) out = r.run(step);
        sync(out);
        queued = msSince(q0) / 50;
        return median(times);
    };
    std::printf("| decode step, context %d | graphs ms | eager ms | graphs tokens/s | graphs, queued back to back ms | "
                "kernel chain (graph) ms | kernel chain, queued ms | chain with the split-K ticket, queued ms |\n"
                "|---|---|---|---|---|---|---|---|\n", context);
    for (int b : batches) {
        const runner::RunnerStep step = decodeStep(b, context, bs, numAxes);
        double queued = 0, eagerQueued = 0, chainQueued = 0, ticketQueued = 0;
        const double graphMs = timed(graphed, step, queued), eagerMs = timed(eager, step, eagerQueued);
        std::printf("| batch %d | %.3f | %.3f | %.0f | %.3f |", b, graphMs, eagerMs, b * 1000.0 / std::max(graphMs, 1e-9), queued);
        if (b == 1) {
            const double chainMs = timed(chain, step, chainQueued);
            (void)timed(ticket, step, ticketQueued);
            std::printf(" %.3f | %.3f | %.3f |\n", chainMs, chainQueued, ticketQueued);
        } else {
            std::printf(" = | = | = |\n");
        }
    }
    std::printf("\n");
    if (device.is_cuda()) {
        // The stream work the engine adds between two graphs, without its host side: the chain's batch-1
        // graph, then the device sampler (greedy, repetition penalty 1.05) and the token's copy to the
        // host, the next step reading its input id from the sampler's output, 50 steps queued.
        runner::DeviceSampler sampler(t.vocabSize, device);
        runner::DeviceSampling sp;
        sp.row = sampler.acquireRow();
        sp.repetitionPenalty = 1.05f;
        sampler.resetRow(sp.row, {1, 2, 3});
        runner::RunnerStep step = decodeStep(1, context, bs, numAxes);
        for (int w = 0; w < 3; ++w) (void)sampler.sample(chain.run(step), {sp});
        std::vector<runner::PendingTokens> pending;
        const auto q0 = Clock::now();
        for (int k = 0; k < 50; ++k) {
            if (!pending.empty()) step.deviceTokenIds = pending.back().onDevice();
            pending.push_back(sampler.sampleAsync(chain.run(step), {sp}));
        }
        (void)pending.back().get();
        std::printf("- batch 1, chain graph + device sampler + token copy, queued back to back: %.3f ms per step\n",
                    msSince(q0) / 50);
        // The engine's path: the token drawn inside the graph, one copy in per step, one out.
        runner::DeviceSampling gp = sp;
        gp.row = graphSampler.acquireRow();
        graphSampler.resetRow(gp.row, {1, 2, 3});
        runner::RunnerStep own = decodeStep(1, context, bs, numAxes);
        if (sampled.samplesInGraph(own)) {
            for (int w = 0; w < 3; ++w) (void)sampled.runSampled(own, {gp}).get();
            std::vector<runner::PendingTokens> drawn;
            const auto d0 = Clock::now();
            for (int k = 0; k < 50; ++k) {
                if (!drawn.empty()) own.deviceTokenIds = drawn.back().onDevice();
                drawn.push_back(sampled.runSampled(own, {gp}));
            }
            (void)drawn.back().get();
            std::printf("- batch 1, the engine's single-sequence graph drawing its own token, queued back to back: %.3f ms per step\n",
                        msSince(d0) / 50);
        }
        // A lone request's path: launches of several steps, each one graph replay (its inputs moved on by
        // the sampler inside), 400 steps queued back to back at this context, against one step a replay
        // through the same graph 1, alternated twice.
        runner::RunnerStep lone = decodeStep(1, context, bs, numAxes);
        lone.seqs[0].blocks.resize(static_cast<size_t>((context + 64 + bs - 1) / bs));
        std::iota(lone.seqs[0].blocks.begin(), lone.seqs[0].blocks.end(), 0);
        const int launchSteps = sampled.decodeStepsFor(lone);
        if (launchSteps > 1) {
            auto perStep = [&](bool several) {
                std::vector<runner::PendingTokens> drawn;
                for (int w = 0; w < 3; ++w) (void)(several ? sampled.runSampledSteps(lone, {gp}) : sampled.runSampled(lone, {gp})).get();
                lone.deviceTokenIds = at::Tensor();
                const int launches = several ? 400 / launchSteps : 400;
                const auto t0 = Clock::now();
                for (int k = 0; k < launches; ++k) {
                    if (!drawn.empty()) lone.deviceTokenIds = drawn.back().onDevice();
                    drawn.push_back(several ? sampled.runSampledSteps(lone, {gp}) : sampled.runSampled(lone, {gp}));
                }
                (void)drawn.back().get();
                lone.deviceTokenIds = at::Tensor();
                return msSince(t0) / (several ? launches * launchSteps : launches);
            };
            for (int round = 0; round < 2; ++round) {
                const double one = perStep(false), several = perStep(true);
                std::printf("- batch 1, the runner's single-sequence graph, context %d, queued back to back: %.4f ms a step one a "
                            "replay, %.4f in replays of %d steps (%.1f us less)\n",
                            context, one, several, launchSteps, (one - several) * 1000);
            }
        }
        std::printf("\n");
    }
    if (device.is_cuda()) visionBackends(vision, must(preprocessImage(image, config.preprocess), "preprocess"));
    if (device.is_cuda() && gpu::cudaGraphsAvailable())
        for (int b : batches)
            if (b == 1 || b == 32) decodeBreakdown(decoder, kv, b, context);
    if (device.is_cuda() && gpu::cudaGraphsAvailable()) {
        std::fflush(stdout);  // a failure below must not take the parity table with it
        try {
            prefillBreakdown(decoder, kv, context);
        } catch (const std::exception& e) {
            std::printf("- prefill breakdown failed: %.200s\n\n", e.what());
        }
    }
    return ok;
}

int main(int argc, char** argv)
{
    std::map<std::string, std::string> opt = {{"device", "cpu"}, {"dtype", "float32"}, {"gen", "32"},
                                              {"new-tokens", "256"}, {"repeats", "10"}, {"threads", "0"}};
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i];
        if (k.rfind("--", 0) != 0) die("unexpected argument " + k);
        opt[k.substr(2)] = argv[i + 1];
    }
    if (!opt.count("model") || !opt.count("image")) die("usage: bench_hunyuan --model DIR --image PNG [--golden FILE] ...");
    if (const int t = std::stoi(opt["threads"]); t > 0) at::set_num_threads(t);
    const at::Device device = opt["device"] == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    if (device.is_cuda() && !at::hasCUDA()) die("--device cuda: no CUDA device");
    const at::ScalarType dtype = opt["dtype"] == "float16" ? at::kHalf : opt["dtype"] == "bfloat16" ? at::kBFloat16 : at::kFloat;
    const int gen = std::stoi(opt["gen"]), newTokens = std::stoi(opt["new-tokens"]), repeats = std::stoi(opt["repeats"]);
    c10::InferenceMode guard;

    const auto t0 = Clock::now();
    const std::filesystem::path dir = opt["model"];
    const HunyuanConfig config = must(loadConfig(dir), "config");
    const WeightStore weights = must(WeightStore::open(dir), "weights");
    const VisionEncoder vision = must(VisionEncoder::load(weights, config, dtype, device), "vision tower");
    const TextDecoder decoder = must(TextDecoder::load(weights, config.text, dtype, device), "decoder");
    const double loadMs = msSince(t0);
    const Image image = must(image::decodeImageFile(opt["image"]), "image");
    std::printf("# bench_hunyuan: %s on %s (%s), image %dx%d, weights loaded in %.0f ms\n\n", dir.filename().c_str(),
                device.str().c_str(), opt["dtype"].c_str(), image.width, image.height, loadMs);

    // One request: preprocess -> vision -> prompt -> generate. Returns the generation and fills the split.
    struct Split { double preprocess = 0, vision = 0, prefill = 0, decode = 0, total = 0; int steps = 0; };
    at::Tensor imageEmbeds;
    PromptLayout layout;  // of the last request
    auto request = [&](const GenerationConfig& g, Split& s) {
        const auto start = Clock::now();
        auto t = Clock::now();
        const PreprocessedImage pre = must(preprocessImage(image, config.preprocess), "preprocess");
        s.preprocess = msSince(t);
        t = Clock::now();
        imageEmbeds = vision.encode(pre);
        sync(imageEmbeds);
        s.vision = msSince(t);
        layout = must(imagePromptLayout(config, kSpottingIds, {pre.gridH, pre.gridW}), "prompt");
        PrefillInput in;
        in.ids = layout.ids;
        in.positionIds = layout.positionIds;
        in.imageEmbeds = imageEmbeds;
        in.imageTokenId = config.tokens.image;
        GenerationResult r = must(generate(decoder, in, g), "generate");
        s.prefill = r.timings.prefillMs;
        s.decode = r.timings.decodeMs;
        s.steps = r.timings.numDecodeSteps;
        s.total = msSince(start);
        return r;
    };

    bool parityOk = true;
    if (opt.count("golden")) {
        auto file = must(model::SafetensorsFile::open(opt["golden"]), "golden");
        GenerationConfig g = defaultGenerationConfig(config);
        g.sampling = SamplingConfig{};
        g.sampling.repetitionPenalty = 1.0f;
        g.maxNewTokens = gen;
        g.ignoreEos = true;
        g.repeatGuard.enabled = false;
        Split s;
        const GenerationResult r = request(g, s);
        const double embErr = relErr(imageEmbeds, file->tensor("image_embeds"));
        const auto refIds = file->tensor("input_ids").to(at::kLong);
        bool idsSame = refIds.numel() == static_cast<int64_t>(layout.ids.size());
        for (int64_t i = 0; idsSame && i < refIds.numel(); ++i) idsSame = refIds[i].item<int64_t>() == layout.ids[i];

        // Last-position logits of the prefill: a fresh prefill of the same prompt on a contiguous cache.
        auto embeds = must(decoder.embed(layout.ids, imageEmbeds, config.tokens.image), "embed");
        auto cache = decoder.makeCache(static_cast<int64_t>(layout.ids.size()) + 1);
        const at::Tensor hidden = decoder.forward(embeds, layout.positionIds.to(device), *cache);
        const at::Tensor logits = decoder.logits(hidden.slice(0, hidden.size(0) - 1)).to(at::kFloat).flatten();
        const at::Tensor refLogits = file->tensor("last_logits").to(at::kFloat);
        const double logitErr = relErr(logits, refLogits);
        const double logitMaxAbs = (logits.cpu() - refLogits).abs().max().item<double>();

        const auto refGreedy = file->tensor("greedy_ids").to(at::kLong);
        const auto margins = file->tensor("greedy_margins").to(at::kFloat);
        int agree = 0;
        const int n = std::min<int>(static_cast<int>(r.ids.size()), static_cast<int>(refGreedy.numel()));
        while (agree < n && r.ids[agree] == refGreedy[agree].item<int64_t>()) ++agree;
        const double marginAtSplit = agree < n ? margins[agree].item<float>() : 0.0;
        // Tolerance of a greedy split: the reference's top-2 margin must be within what the dtype's
        // logit error can flip (4x the max abs logit error of the prefill, at least 0.05).
        const double flipTol = std::max(0.05, 4 * logitMaxAbs);
        const bool greedyOk = agree == n || marginAtSplit <= flipTol;
        const double tol = dtype == at::kFloat ? 1e-3 : 2e-2;
        parityOk = idsSame && embErr >= 0 && embErr < tol && logitErr >= 0 && logitErr < tol && greedyOk;
        std::printf("## parity against %s\n\n", std::filesystem::path(opt["golden"]).filename().c_str());
        std::printf("| check | value | limit | ok |\n|---|---|---|---|\n");
        std::printf("| prefill ids (%zu) | %s | identical | %s |\n", layout.ids.size(), idsSame ? "identical" : "DIFFER", idsSame ? "yes" : "NO");
        std::printf("| image embeddings rel. L2 | %.2e | %.0e | %s |\n", embErr, tol, embErr >= 0 && embErr < tol ? "yes" : "NO");
        std::printf("| last logits rel. L2 | %.2e | %.0e | %s |\n", logitErr, tol, logitErr >= 0 && logitErr < tol ? "yes" : "NO");
        std::printf("| last logits max abs | %.3f | | |\n", logitMaxAbs);
        std::printf("| greedy steps equal | %d / %d | split only where margin <= %.3f | %s |\n", agree, n, flipTol, greedyOk ? "yes" : "NO");
        if (agree < n) std::printf("| reference margin at the first split | %.4f | | |\n", marginAtSplit);
        std::printf("\n");
    }

    if (opt["runner"] == "fused") parityOk = benchRunner(decoder, config, vision, image, opt, device, dtype) && parityOk;

    if (repeats > 0) {
        GenerationConfig g = defaultGenerationConfig(config);
        g.maxNewTokens = newTokens;
        g.ignoreEos = true;
        g.repeatGuard.enabled = false;
        Split warm;
        request(g, warm);  // warm-up: allocator, kernels, BLAS handles
        std::vector<double> pre, vis, prefill, step, total;
        int steps = 0;
        for (int i = 0; i < repeats; ++i) {
            Split s;
            request(g, s);
            pre.push_back(s.preprocess);
            vis.push_back(s.vision);
            prefill.push_back(s.prefill);
            step.push_back(s.steps ? s.decode / s.steps : 0);
            total.push_back(s.total);
            steps = s.steps;
        }
        std::printf("## one request, %d forced new tokens, %zu prompt tokens (median of %d)\n\n", newTokens, layout.ids.size(), repeats);
        std::printf("| stage | ms |\n|---|---|\n");
        std::printf("| preprocess (CPU) | %.1f |\n| vision | %.1f |\n| prefill + first token | %.1f |\n", median(pre), median(vis), median(prefill));
        std::printf("| decode step (batch 1) | %.3f |\n| decode, %d steps | %.1f |\n| end to end | %.1f |\n\n", median(step), steps,
                    median(step) * steps, median(total));
    }
    return parityOk ? 0 : 2;
}
