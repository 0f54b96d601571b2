// ModelRunner (see model_runner.h). Central idea: everything a step needs besides the weights and the
// cache — ids, positions, slots, block table, query offsets, context lengths, rows to sample — is a few
// small integer arrays; they travel to the device in two copies, and a decode step's arrays (with the
// sampler's parameters) in one copy into the static inputs of a captured graph instead, so the host
// issues a handful of operations per step rather than hundreds of kernel launches.
#include "core/runner/model_runner.h"

#include <c10/core/InferenceMode.h>
#include <torch/version.h>  // TORCH_VERSION, part of the tuning's key

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/common/assert.h"
#include "core/common/env.h"
#include "core/common/paths.h"
#include "core/model/hunyuan/prompt.h"
#include "gpu/device.h"
#include "gpu/ops.h"

namespace lector::runner {
namespace hy = model::hunyuan;

namespace {

// Split-K partition for the graphed decode of 2 sequences: 64 keys, the variant that loads K and V
// before waiting for the previous kernel (the graph of 1 takes the cluster merge). Graphs of 3 and more
// split each sequence's own context into gpu::pagedDecodeRowPartitions() equal shares instead: the grid
// then covers any context up to the graph's 8192-token bound with one wave of CTAs and none empty.
// H200 (perf.md calls 56-59, 69 and 89): at batch 8 the step took 1.42 against 1.68 ms with 64-key
// partitions; batch 32 attention 44.7 us a layer against 46.0 with the 256-key partitions before, the
// batch-64 step 2.95 against 3.17 ms. At batch 4, since the partitions stay within one wave (16, not 17),
// attention takes 11.4 against 13.8 us a layer at context 1076 (12.4 against 15.0 at 1332); at batch 2
// the 64-key variant still wins (7.9 against 10.3).
constexpr int kGraphPartitionSmall = 64;
constexpr int kGraphSmallBatch = 2;
// Partitions per sequence of the cluster merge (RunnerOptions::attentionClusterMaxBatch): 16 CTAs per KV
// head, 128 CTAs for one sequence of the decoder's 8 KV heads, about one per SM of an H200.
constexpr int kGraphClusterPartitions = 16;
// chooseChainRoutes() times the graph sizes from here to the tensor-core engine's 64 rows (below, the
// SIMT engine's prologues inside win in the step as they do alone).
constexpr int kChainMinRows = 3;
// The LM head's row counts where tuneLayouts() times the warp-group engine (its float32 logits: 62 to 97
// us at 1 to 64 rows on the H200 against the tensor-core engine's 65 to 175 and cuBLAS's 76 to 122; device
// call 124).
constexpr std::int64_t kLmHeadWarpGroupRows[] = {4, 8, 16, 32, 64};
// A page's prompt (1058 image tokens and the instruction): the context the tuning times steps at.
constexpr std::int64_t kTuningContext = 1076;

// Microseconds rounded for the load's report lines; "-" where a way failed (timed as infinity).
std::string roundedUs(double us) { return std::isfinite(us) ? std::to_string(static_cast<long long>(us + 0.5)) : "-"; }

at::TensorOptions hostOptions(at::ScalarType type, const at::Device& device)
{
    // Pinned host memory lets the copy to the device run asynchronously; the caching host allocator
    // keeps the block alive until that copy has completed.
    return at::TensorOptions().dtype(type).pinned_memory(device.is_cuda());
}

}  // namespace

gpu::PersistentDecoderModel persistentDecoderModel(const hy::TextDecoder& decoder, PagedKvStorage& kv,
                                                   const at::Tensor& cosSin)
{
    const hy::TextConfig& c = decoder.config();
    gpu::PersistentDecoderModel pm;
    for (size_t l = 0; l < decoder.layers().size(); ++l) {
        const hy::TextDecoder::Layer& w = decoder.layers()[l];
        const int li = static_cast<int>(l);
        pm.layers.push_back({w.inputNorm, w.qkvProj, w.queryNorm, w.keyNorm, w.oProj, w.postNorm, w.gateUpProj,
                             w.downProj, kv.keys(li).view({-1, kv.blockSize(), c.numKvHeads, c.headDim}),
                             kv.values(li).view({-1, kv.blockSize(), c.numKvHeads, c.headDim})});
    }
    pm.embed = decoder.embedTokens();
    pm.finalNorm = decoder.finalNorm();
    pm.lmHead = decoder.lmHead();
    pm.cosSin = cosSin;
    pm.sections = c.xdropeSection;
    pm.numQHeads = c.numHeads;
    pm.numKvHeads = c.numKvHeads;
    pm.eps = c.rmsNormEps;
    pm.scale = 1.0 / std::sqrt(static_cast<double>(c.headDim));
    return pm;
}

std::vector<int> graphBatchSizes(int maxBatch)
{
    std::vector<int> sizes;
    for (int b : {1, 2, 4, 8})
        if (b <= maxBatch) sizes.push_back(b);
    for (int b = 16; b <= std::min(64, maxBatch); b += 8) sizes.push_back(b);
    for (int b = 96; b <= maxBatch; b += 32) sizes.push_back(b);
    return sizes;
}

// --- metadata ---

struct ModelRunner::Metadata {
    std::int64_t numRows = 0, numSeqs = 0, maxQueryLen = 0, maxContextLen = 0;
    bool decodeOnly = false;
    // A mixed step's leading sequences of one new token each (the scheduler puts decodes first): their
    // rows [0, numLeadingSingles) take decode attention, the rest prefill attention over its own
    // cuSeqlensQ. 0 when the step is decode-only or starts with a longer chunk.
    std::int64_t numLeadingSingles = 0;
    at::Tensor restCuSeqlensQ;  // [numSeqs - numLeadingSingles + 1] int32, from 0
    at::Tensor ids;          // [n] int64 (-1 for prompt rows)
    at::Tensor positions;    // [numAxes, n] int64
    at::Tensor slots;        // [n] int64
    at::Tensor promptRows;   // [P] int64: rows filled from promptEmbeds (undefined if none)
    at::Tensor sampleRows;   // [S] int64, undefined when every row is sampled (decode-only, all sampling)
    at::Tensor blockTable;   // [numSeqs, maxBlocks] int32
    at::Tensor cuSeqlensQ;   // [numSeqs + 1] int32
    at::Tensor contextLens;  // [numSeqs] int32
};

struct ModelRunner::DecodeGraph {
    gpu::CudaGraph graph;
    at::Tensor logits;  // [batch, vocab] float32, written by every replay
};

ModelRunner::ModelRunner(const hy::TextDecoder& decoder, PagedKvStorage& kv, RunnerOptions options)
    : m_decoder(decoder), m_kv(kv), m_options(options)
{
    if (const std::string v = envValue("LECTOR_FUSED_DECODE_ROPE"); v == "0" || v == "1") {  // comparisons
        m_options.fusedDecodeRopeMaxBatch = v == "1" ? std::numeric_limits<int>::max() : 0;
        m_rotationForced = true;
    }
    c10::InferenceMode inference;
    const hy::TextConfig& c = decoder.config();
    LECTOR_ASSERT(kv.blockSize() == gpu::kKvBlockSize);
    m_sections = c.xdropeSection;
    if (options.skinnyRows >= 0) std::fill(std::begin(m_skinnyRows), std::end(m_skinnyRows), options.skinnyRows);
    if (options.tensorCoreRows >= 0)
        std::fill(std::begin(m_tensorCoreRows), std::end(m_tensorCoreRows),
                  std::min(options.tensorCoreRows, gpu::kSkinnyTcMaxRows));
    m_scale = 1.0 / std::sqrt(static_cast<double>(c.headDim));
    // Rotary tables for every position, all axes equal: frequency j's angle is pos * invFreq[j] whatever
    // axis it reads, so one row per position serves every axis (the kernel picks the row per axis).
    const int numAxes = decoder.rope().numAxes();
    const std::int64_t maxPos = std::max(c.maxPositionEmbeddings, 1);
    const at::Tensor pos = at::arange(maxPos, at::kLong).unsqueeze(0).expand({numAxes, maxPos}).contiguous();
    const auto [cos, sin] = decoder.rope().cosSin(pos, decoder.dtype());  // [maxPos, headDim] each
    const std::int64_t half = c.headDim / 2;
    m_cosSin = at::cat({cos.narrow(1, 0, half), sin.narrow(1, 0, half)}, 1).contiguous().to(decoder.device());

    if (const std::string env = envValue("LECTOR_GREEDY_SCREEN"); env[0] == '0' || env[0] == '1')
        m_options.greedyScreen = env[0] == '0' ? RunnerOptions::GreedyScreen::Off : RunnerOptions::GreedyScreen::On;
    if (m_options.greedyScreen == RunnerOptions::GreedyScreen::On && decoder.device().is_cpu())
        m_screenHead = std::make_unique<gpu::GreedyScreenHead>(gpu::quantizeGreedyScreen(decoder.lmHead()));

    gpu::PersistentDecoderModel pm = persistentDecoderModel(decoder, kv, m_cosSin);
    using P = RunnerOptions::Persistent;
    using Kind = gpu::PersistentDecoder::Kind;
    std::string why = options.persistentDecode == P::Never ? "off (runner option)"
                      : options.persistentDecode == P::Auto && !decoder.device().is_cuda()
                          ? "off (CPU: the kernel chain)"
                          : gpu::PersistentDecoder::unsupportedReason(pm);
    std::string headParallelWhy = "";
    if (options.persistentDecode == P::Auto && decoder.device().is_cuda()) {
        headParallelWhy = gpu::PersistentDecoder::unsupportedReason(pm, Kind::HeadParallel);
        if (headParallelWhy.empty()) m_headParallel = std::make_unique<gpu::PersistentDecoder>(pm, Kind::HeadParallel);
    }
    if (m_headParallel && !why.empty()) {
        m_persistent = std::move(m_headParallel);
        m_persistentReport = "head-parallel decode kernels for single-sequence steps (the persistent kernel: " + why + ")";
    } else if (why.empty()) {
        m_persistent = std::make_unique<gpu::PersistentDecoder>(std::move(pm));
        m_persistentReport = "persistent decode kernel for single-sequence steps" +
                             (m_persistent->numCtas() > 0 ? " (" + std::to_string(m_persistent->numCtas()) + " CTAs)"
                                                          : std::string(" (CPU reference)"));
    } else {
        m_persistentReport = "single-sequence steps run the kernel chain: " + why +
                             (headParallelWhy.empty() ? "" : "; head-parallel kernels: " + headParallelWhy);
    }
}

ModelRunner::~ModelRunner() = default;

ModelRunner::Metadata ModelRunner::upload(const RunnerStep& step) const
{
    const at::Device device = m_decoder.device();
    const int numAxes = m_decoder.rope().numAxes();
    const int bs = m_kv.blockSize();
    Metadata m;
    m.numRows = static_cast<std::int64_t>(step.tokenIds.size());
    m.numSeqs = static_cast<std::int64_t>(step.seqs.size());
    LECTOR_ASSERT(static_cast<std::int64_t>(step.positions.size()) == numAxes * m.numRows);
    std::vector<std::int64_t> promptRows, sampleRows, slots;
    for (std::int64_t r = 0; r < m.numRows; ++r)
        if (step.tokenIds[static_cast<size_t>(r)] < 0) promptRows.push_back(r);
    std::int64_t row = 0;
    bool allSample = true;
    for (const RunnerSequence& s : step.seqs) {
        LECTOR_ASSERT(static_cast<std::int64_t>(s.blocks.size()) * bs >= s.past + s.numNew && s.numNew > 0);
        for (std::int64_t t = s.past; t < s.past + s.numNew; ++t)
            slots.push_back(static_cast<std::int64_t>(s.blocks[static_cast<size_t>(t / bs)]) * bs + t % bs);
        row += s.numNew;
        if (s.sample) sampleRows.push_back(row - 1);
        allSample = allSample && s.sample;
        m.maxQueryLen = std::max(m.maxQueryLen, s.numNew);
        m.maxContextLen = std::max(m.maxContextLen, s.past + s.numNew);
    }
    LECTOR_ASSERT(row == m.numRows);
    m.decodeOnly = m.maxQueryLen == 1;
    if (!m.decodeOnly)
        while (m.numLeadingSingles < m.numSeqs && step.seqs[static_cast<size_t>(m.numLeadingSingles)].numNew == 1)
            ++m.numLeadingSingles;
    const std::int64_t maxBlocks = std::max<std::int64_t>(1, (m.maxContextLen + bs - 1) / bs);

    // int64 part: ids | positions | slots | promptRows | sampleRows.
    const std::int64_t n = m.numRows, P = static_cast<std::int64_t>(promptRows.size()),
                       S = static_cast<std::int64_t>(sampleRows.size());
    at::Tensor h64 = at::empty({n * (2 + numAxes) + P + S}, hostOptions(at::kLong, device));
    std::int64_t* p = h64.data_ptr<std::int64_t>();
    p = std::copy(step.tokenIds.begin(), step.tokenIds.end(), p);
    p = std::copy(step.positions.begin(), step.positions.end(), p);
    p = std::copy(slots.begin(), slots.end(), p);
    p = std::copy(promptRows.begin(), promptRows.end(), p);
    std::copy(sampleRows.begin(), sampleRows.end(), p);
    // int32 part: blockTable | cuSeqlensQ | contextLens | restCuSeqlensQ (mixed steps with leading singles).
    const std::int64_t nd = m.numLeadingSingles, rest = nd > 0 ? m.numSeqs - nd + 1 : 0;
    at::Tensor h32 = at::zeros({m.numSeqs * maxBlocks + 2 * m.numSeqs + 1 + rest}, hostOptions(at::kInt, device));
    std::int32_t* q = h32.data_ptr<std::int32_t>();
    std::int32_t* cu = q + m.numSeqs * maxBlocks;
    std::int32_t* lens = cu + m.numSeqs + 1;
    cu[0] = 0;
    for (std::int64_t i = 0; i < m.numSeqs; ++i) {
        const RunnerSequence& s = step.seqs[static_cast<size_t>(i)];
        const std::int64_t used = (s.past + s.numNew + bs - 1) / bs;
        std::copy(s.blocks.begin(), s.blocks.begin() + used, q + i * maxBlocks);
        cu[i + 1] = cu[i] + static_cast<std::int32_t>(s.numNew);
        lens[i] = static_cast<std::int32_t>(s.past + s.numNew);
    }
    std::int32_t* restCu = lens + m.numSeqs;
    for (std::int64_t i = 0; i < rest; ++i) restCu[i] = cu[nd + i] - cu[nd];
    const at::Tensor d64 = h64.to(device, /*non_blocking=*/true);
    const at::Tensor d32 = h32.to(device, /*non_blocking=*/true);
    m.ids = d64.narrow(0, 0, n);
    m.positions = d64.narrow(0, n, numAxes * n).view({numAxes, n});
    m.slots = d64.narrow(0, n * (1 + numAxes), n);
    if (P > 0) m.promptRows = d64.narrow(0, n * (2 + numAxes), P);
    if (!(allSample && m.decodeOnly)) m.sampleRows = d64.narrow(0, n * (2 + numAxes) + P, S);
    m.blockTable = d32.narrow(0, 0, m.numSeqs * maxBlocks).view({m.numSeqs, maxBlocks});
    m.cuSeqlensQ = d32.narrow(0, m.numSeqs * maxBlocks, m.numSeqs + 1);
    m.contextLens = d32.narrow(0, m.numSeqs * maxBlocks + m.numSeqs + 1, m.numSeqs);
    if (rest > 0) m.restCuSeqlensQ = d32.narrow(0, m.numSeqs * maxBlocks + 2 * m.numSeqs + 1, rest);
    if (step.deviceTokenIds.defined()) {
        LECTOR_ASSERT(m.decodeOnly && m.numRows == m.numSeqs && step.deviceTokenIds.numel() == n);
        m.ids.copy_(step.deviceTokenIds, /*non_blocking=*/true);  // stream-ordered after the upload
    }
    return m;
}

at::Tensor ModelRunner::embedRows(const Metadata& meta, const at::Tensor& promptEmbeds) const
{
    // Prompt rows carry id -1 (their rows come from promptEmbeds); without them every id is a real token,
    // and a decode step skips the clamp kernel.
    const at::Tensor ids = meta.promptRows.defined() ? meta.ids.clamp_min(0) : meta.ids;
    at::Tensor x = at::embedding(m_decoder.embedTokens(), ids);  // [n, hidden]
    if (meta.promptRows.defined()) {
        LECTOR_ASSERT(promptEmbeds.defined() && promptEmbeds.size(0) == meta.promptRows.size(0));
        x.index_copy_(0, meta.promptRows, promptEmbeds.to(x.scalar_type()));
    }
    return x;
}

// --- the decoder on fused ops ---

at::Tensor ModelRunner::forward(at::Tensor x, const Metadata& meta) const
{
    const hy::TextConfig& c = m_decoder.config();
    const auto& layers = m_decoder.layers();
    const std::int64_t n = x.size(0), d = c.headDim, hq = c.numHeads, hk = c.numKvHeads;
    const double eps = c.rmsNormEps;
    const int bs = m_kv.blockSize();
    at::Tensor residual = x;             // [n, hidden], the residual stream
    at::Tensor spare;                    // [n, hidden], the other residual buffer of the fused prologue
    at::Tensor h = at::empty_like(x);    // [n, hidden], normed input of the next matmul
    at::Tensor attn = at::empty({n, hq, d}, x.options());
    const std::optional<gpu::SkinnyEngine> downEngine = skinnyEngine(n, kDown);
    const bool siluInside = downEngine && prologueInside(n, kDown);
    at::Tensor act = siluInside ? at::Tensor() : at::empty({n, c.intermediateSize}, x.options());
    // The output of the last o / down projection, not yet added to the residual: the add + RMSNorm in
    // front of the next projection does it, inside the skinny GEMM where that one runs (it reads the
    // residual and writes the sum to the other buffer, then the two swap), else as its own kernel.
    at::Tensor pending;
    auto addNormProject = [&](const at::Tensor& normWeight, Projection p, size_t l) -> at::Tensor {
        if (!pending.defined()) {
            gpu::rmsNorm(h, residual, normWeight, eps);
            return project(h, p, l);
        }
        if (const auto engine = skinnyEngine(n, p); engine && prologueInside(n, p)) {
            if (!spare.defined()) spare = at::empty_like(x);
            const at::Tensor& weight = weightOf(p, l);
            at::Tensor out = at::empty({n, weight.size(0)}, x.options());
            gpu::skinnyLinearAddRmsNorm(out, pending, residual, spare, normWeight, eps, weight, *engine);
            std::swap(residual, spare);
            return out;
        }
        gpu::fusedAddRmsNorm(h, residual, pending, normWeight, eps);
        return project(h, p, l);
    };
    // Rows [from, from + len) of t; t itself when that is all of it (no view built on the decode path).
    auto rowsOf = [](const at::Tensor& t, std::int64_t from, std::int64_t len) {
        return from == 0 && len == t.size(0) ? t : t.narrow(0, from, len);
    };
    const std::int64_t singles = meta.decodeOnly ? meta.numSeqs : meta.numLeadingSingles;  // one row each
    const bool fusedRope = meta.decodeOnly && m_decodeRowParts > 0 && rotationInside(meta.numSeqs);
    for (size_t l = 0; l < layers.size(); ++l) {
        const hy::TextDecoder::Layer& w = layers[l];
        const at::Tensor qkv = addNormProject(w.inputNorm, kQkv, l);  // [n, (hq + 2 hk) d]
        const at::Tensor q = qkv.narrow(1, 0, hq * d).view({n, hq, d});
        const at::Tensor k = qkv.narrow(1, hq * d, hk * d).view({n, hk, d});
        const at::Tensor v = qkv.narrow(1, (hq + hk) * d, hk * d).view({n, hk, d});
        const int layerIdx = static_cast<int>(l);
        const at::Tensor keyCache = m_kv.keys(layerIdx).view({-1, bs, hk, d});
        const at::Tensor valueCache = m_kv.values(layerIdx).view({-1, bs, hk, d});
        if (fusedRope) {
            // The rotation and the K/V write inside the attention kernel (graphs of row partitions).
            gpu::pagedDecodeAttentionRope(attn, q, k, v, keyCache, valueCache, meta.blockTable, meta.contextLens,
                                          meta.maxContextLen, m_scale, m_decodeRowParts, meta.positions, m_cosSin,
                                          w.queryNorm, w.keyNorm, m_sections, eps, meta.slots);
        } else {
            gpu::qkNormRopeWriteKv(q, k, v, meta.positions, m_cosSin, w.queryNorm, w.keyNorm, m_sections, eps,
                                   keyCache, valueCache, meta.slots);
            // Rows [0, singles) are sequences of one new token each, all of a decode-only step's and a mixed
            // step's leading decodes: decode attention, split over their contexts. The rest take prefill
            // attention, where a decode token's rows would sweep its whole context in one CTA (a prompt
            // beside 63 decodes: 161 against 117 us a layer split; perf.md, call 99).
            if (singles > 0)
                gpu::pagedDecodeAttention(rowsOf(attn, 0, singles), rowsOf(q, 0, singles), keyCache, valueCache,
                                          rowsOf(meta.blockTable, 0, singles), rowsOf(meta.contextLens, 0, singles),
                                          meta.maxContextLen, m_scale, m_decodePartition, m_decodeClusterParts,
                                          m_decodeRowParts);
            if (singles < meta.numSeqs)
                gpu::pagedPrefillAttention(rowsOf(attn, singles, n - singles), rowsOf(q, singles, n - singles),
                                           keyCache, valueCache, rowsOf(meta.blockTable, singles, meta.numSeqs - singles),
                                           singles > 0 ? meta.restCuSeqlensQ : meta.cuSeqlensQ,
                                           rowsOf(meta.contextLens, singles, meta.numSeqs - singles), meta.maxQueryLen,
                                           meta.maxContextLen, m_scale);
        }
        pending = project(attn.view({n, hq * d}), kO, l);   // [n, hidden]
        const at::Tensor gateUp = addNormProject(w.postNorm, kGateUp, l);  // [n, 2 * intermediate]
        if (siluInside) {  // the skinny GEMM applies SiLU-and-mul as it reads gate/up
            pending = at::empty_like(x);
            gpu::skinnyLinear(pending, gateUp, w.downProj, /*siluMulInput=*/true, *downEngine);
        } else {
            gpu::siluAndMul(act, gateUp);
            pending = project(act, kDown, l);
        }
    }
    gpu::fusedAddRmsNorm(h, residual, pending, m_decoder.finalNorm(), eps);
    return meta.sampleRows.defined() ? h.index_select(0, meta.sampleRows) : h;
}

at::Tensor ModelRunner::logits(const at::Tensor& hidden) const
{
    // float32 straight from the skinny GEMM, without a conversion pass
    if (at::Tensor skinny = skinnyOrNone(hidden, m_decoder.lmHead(), kNumProjections, at::kFloat); skinny.defined())
        return skinny;
    const at::Tensor l = m_lmHeadT.defined() ? at::mm(hidden, m_lmHeadT) : at::linear(hidden, m_decoder.lmHead());
    return l.to(at::kFloat);  // [rows, vocab]
}

const at::Tensor& ModelRunner::weightOf(Projection p, size_t l) const
{
    const hy::TextDecoder::Layer& w = m_decoder.layers()[l];
    return p == kQkv ? w.qkvProj : p == kO ? w.oProj : p == kGateUp ? w.gateUpProj : w.downProj;
}

std::vector<at::Tensor> ModelRunner::transposedCopies(Projection p) const
{
    std::vector<at::Tensor> out;
    for (size_t l = 0; l < m_decoder.layers().size(); ++l) out.push_back(weightOf(p, l).t().contiguous());
    return out;
}

at::Tensor ModelRunner::skinnyOrNone(const at::Tensor& x, const at::Tensor& weight, int which,
                                     std::optional<at::ScalarType> outType) const
{
    const std::optional<gpu::SkinnyEngine> engine = skinnyEngine(x.size(0), which);
    if (!engine) return at::Tensor();
    at::Tensor out = at::empty({x.size(0), weight.size(0)}, x.options().dtype(outType.value_or(x.scalar_type())));
    gpu::skinnyLinear(out, x, weight, /*siluMulInput=*/false, *engine);
    return out;
}

ModelRunner::Route ModelRunner::route(std::int64_t rows, int which) const
{
    if (which <= kNumProjections && rows >= kChainMinRows) {
        const auto it = m_chainRoutes.lower_bound(static_cast<int>(std::min<std::int64_t>(rows, INT32_MAX)));
        if (it != m_chainRoutes.end()) return it->second[static_cast<size_t>(which)];
    }
    if (which == kNumProjections && rows > m_skinnyRows[which])
        for (size_t i = 0; i < std::size(kLmHeadWarpGroupRows); ++i)
            if (rows <= kLmHeadWarpGroupRows[i]) {
                if (m_lmHeadWarpGroup >> i & 1u) return Route::WarpGroupApart;
                break;
            }
    if (rows <= m_skinnyRows[which]) return Route::Simt;
    if (rows <= m_tensorCoreRows[which]) return m_options.tensorCoreApart ? Route::TensorCoreApart : Route::TensorCore;
    return Route::Library;
}

bool ModelRunner::rotationInside(std::int64_t seqs) const
{
    if (!m_rotationForced) {
        const auto it = m_rotationInside.lower_bound(static_cast<int>(std::min<std::int64_t>(seqs, INT32_MAX)));
        if (it != m_rotationInside.end()) return it->second;
    }
    return seqs <= m_options.fusedDecodeRopeMaxBatch;
}

std::optional<gpu::SkinnyEngine> ModelRunner::skinnyEngine(std::int64_t rows, int which) const
{
    switch (route(rows, which)) {
    case Route::Simt: return gpu::SkinnyEngine::Simt;
    case Route::TensorCore:
    case Route::TensorCoreApart: return gpu::SkinnyEngine::TensorCore;
    case Route::WarpGroupApart: return gpu::SkinnyEngine::WarpGroup;
    case Route::Library: break;
    }
    return std::nullopt;
}

bool ModelRunner::prologueInside(std::int64_t rows, int which) const
{
    const Route r = route(rows, which);
    return r == Route::Simt || r == Route::TensorCore;
}

at::Tensor ModelRunner::project(const at::Tensor& x, Projection p, size_t l) const
{
    if (at::Tensor out = skinnyOrNone(x, weightOf(p, l), p); out.defined()) return out;
    if (!m_transposed[p].empty()) return at::mm(x, m_transposed[p][l]);
    return at::linear(x, weightOf(p, l));
}

// --- self check ---

double ModelRunner::selfCheck(int tokens)
{
    c10::InferenceMode inference;
    const int numAxes = m_decoder.rope().numAxes();
    const int bs = m_kv.blockSize();
    const std::int64_t vocab = m_decoder.config().vocabSize;
    std::vector<int> ids;
    for (int i = 0; i < tokens + 1; ++i) ids.push_back(static_cast<int>((1000 + 37 * i) % std::max<std::int64_t>(vocab, 1)));
    RunnerSequence seq;
    for (int b = 0; b * bs < tokens + 1; ++b) seq.blocks.push_back(b);
    seq.sample = true;
    double worst = 0;
    auto cache = m_decoder.makeCache(tokens + 1);
    for (int phase = 0; phase < 2; ++phase) {
        // Phase 0: prefill of the first `tokens` ids (given as embeddings); phase 1: one decode step.
        const int from = phase == 0 ? 0 : tokens, count = phase == 0 ? tokens : 1;
        const std::vector<int> chunk(ids.begin() + from, ids.begin() + from + count);
        auto embeds = m_decoder.embed(chunk, at::Tensor(), -1);
        if (!embeds.ok()) return std::numeric_limits<double>::infinity();
        const at::Tensor positions = hy::sequentialPositionIds(from, count, numAxes);
        const at::Tensor want = m_decoder.logits(m_decoder.forward(*embeds, positions.to(m_decoder.device()), *cache))
                                    .select(0, count - 1);
        RunnerStep step;
        seq.numNew = count;
        seq.past = from;
        step.seqs.push_back(seq);
        if (phase == 0) {
            step.tokenIds.assign(static_cast<size_t>(count), -1);
            step.promptEmbeds = *embeds;
        } else {
            step.tokenIds.push_back(chunk[0]);
        }
        for (int a = 0; a < numAxes; ++a)
            for (int i = 0; i < count; ++i) step.positions.push_back(from + i);
        const at::Tensor got = run(step).select(0, 0).to(at::kFloat);
        const double err = (got - want).norm().item<double>() / std::max(want.norm().item<double>(), 1e-30);
        worst = std::max(worst, std::isfinite(err) ? err : std::numeric_limits<double>::infinity());
    }
    return worst;
}

// --- weight layouts ---

std::vector<std::string> ModelRunner::tuneLayouts()
{
    std::vector<std::string> report;
    const at::Device device = m_decoder.device();
    if (!device.is_cuda() || !gpu::cudaGraphsAvailable()) return report;
    c10::InferenceMode inference;
    const auto& layers = m_decoder.layers();
    const char* names[kNumProjections + 1] = {"qkv", "o", "gate/up", "down", "lm head"};
    auto fmt = [](double us) {
        return std::isfinite(us) ? std::to_string(static_cast<int>(us * 10 + 0.5) / 10.0).substr(0, 6) : std::string("-");
    };
    for (int p = 0; p <= kNumProjections; ++p) {
        const at::Tensor& w0 = p == kNumProjections ? m_decoder.lmHead() : weightOf(static_cast<Projection>(p), 0);
        const at::Tensor t0 = w0.t().contiguous();
        // Microseconds at 1, 8 and 32 rows: as stored (at::linear), transposed (at::mm); the skinny GEMM
        // at 1, 2, 4 and 8 rows.
        double stored[3] = {}, transposed[3] = {}, skinny[4] = {}, best[4] = {}, skinnyError = 0;
        const std::int64_t rowCounts[3] = {1, 8, 32}, skinnyRows[4] = {1, 2, 4, 8};
        for (int i = 0; i < 3; ++i) {
            const at::Tensor x = at::randn({rowCounts[i], w0.size(1)}, w0.options());
            stored[i] = gpu::graphMicros(device, [&] { (void)at::linear(x, w0); });
            transposed[i] = gpu::graphMicros(device, [&] { (void)at::mm(x, t0); });
        }
        const bool useT = transposed[0] + transposed[2] < 0.9 * (stored[0] + stored[2]);
        const at::Tensor& library = useT ? t0 : w0;
        for (int i = 0; i < 4; ++i) {
            const at::Tensor x = at::randn({skinnyRows[i], w0.size(1)}, w0.options());
            const at::Tensor out = at::empty({skinnyRows[i], w0.size(0)}, w0.options());
            skinny[i] = gpu::graphMicros(device, [&] { gpu::skinnyLinear(out, x, w0); });
            best[i] = gpu::graphMicros(device, [&] { (void)(useT ? at::mm(x, library) : at::linear(x, library)); });
            // Our kernel is only used where it agrees with the matmul library on this card (it was
            // tested on sm_90; a wrong result elsewhere must cost speed, not text).
            gpu::skinnyLinear(out, x, w0);
            const at::Tensor want = at::linear(x, w0).to(at::kFloat);
            skinnyError = std::max(skinnyError, (out.to(at::kFloat) - want).norm().item<double>() /
                                                    std::max(want.norm().item<double>(), 1e-30));
        }
        if (skinnyError > 1e-2)
            for (double& us : skinny) us = std::numeric_limits<double>::infinity();
        // The skinny GEMM serves steps up to the largest row count below which it is always >= 10% faster.
        int upTo = 0;
        for (int i = 0; i < 4 && skinny[i] < 0.9 * best[i]; ++i) upTo = static_cast<int>(skinnyRows[i]);
        // Its tensor-core engine, from there on, by the same rule (it throws where the card, dtype or
        // shape does not take it: then never). Timed as forward() would run it: qkv and gate/up with the
        // add + RMSNorm prologue against the norm kernel + the library, down with the SiLU-mul input
        // against the activation kernel + the library (on the H200 those variants lose where the plain
        // product wins: the down projection at 16 rows, 11 against 8.7 us).
        const std::int64_t tcRows[6] = {2, 4, 8, 16, 32, 64};
        double tc[6], tcLibrary[6], tcError = 0;
        constexpr gpu::SkinnyEngine kTc = gpu::SkinnyEngine::TensorCore;
        const bool withNorm = p == kQkv || p == kGateUp, withSilu = p == kDown;
        const at::Tensor& normWeight = p == kQkv ? layers[0].inputNorm : layers[0].postNorm;
        const double eps = m_decoder.config().rmsNormEps;
        for (int i = 0; i < 6; ++i) {
            tc[i] = tcLibrary[i] = std::numeric_limits<double>::infinity();
            if (tcRows[i] <= upTo) continue;
            const std::int64_t rows = tcRows[i], k = w0.size(1);
            const at::Tensor x = at::randn({rows, withSilu ? 2 * k : k}, w0.options());
            const at::Tensor res = at::randn({rows, k}, w0.options()), res2 = at::empty_like(res), h = at::empty_like(res);
            const at::Tensor out = at::empty({rows, w0.size(0)}, w0.options());
            auto ours = [&] {
                if (withNorm) gpu::skinnyLinearAddRmsNorm(out, x, res, res2, normWeight, eps, w0, kTc);
                else gpu::skinnyLinear(out, x, w0, withSilu, kTc);
            };
            auto theirs = [&] {  // the same through our element-wise kernels and the library's product
                if (withNorm) gpu::fusedAddRmsNorm(h, res2, x, normWeight, eps);
                if (withSilu) gpu::siluAndMul(h, x);
                const at::Tensor& in = withNorm || withSilu ? h : x;
                return useT ? at::mm(in, library) : at::linear(in, library);
            };
            try {
                ours();
            } catch (const std::exception&) {
                tcError = std::numeric_limits<double>::infinity();
                break;
            }
            res2.copy_(res);
            const at::Tensor want = theirs().to(at::kFloat);
            tcError = std::max(tcError, (out.to(at::kFloat) - want).norm().item<double>() /
                                            std::max(want.norm().item<double>(), 1e-30));
            tc[i] = gpu::graphMicros(device, ours);
            tcLibrary[i] = gpu::graphMicros(device, [&] { (void)theirs(); });
        }
        int tcUpTo = 0;
        if (tcError <= 1e-2)
            for (int i = 0; i < 6; ++i) {
                if (tcRows[i] <= upTo) continue;
                if (!(tc[i] < 0.9 * tcLibrary[i])) break;
                tcUpTo = static_cast<int>(tcRows[i]);
            }
        std::string tcLine = "; tensor cores at 2 / 4 / 8 / 16 / 32 / 64 rows";
        for (int i = 0; i < 6; ++i) tcLine += (i ? " / " : " ") + fmt(tc[i]);
        tcLine += " vs";
        for (int i = 0; i < 6; ++i) tcLine += (i ? " / " : " ") + fmt(tcLibrary[i]);
        report.push_back(std::string(names[p]) + ": us at 1 / 8 / 32 rows: as stored " + fmt(stored[0]) + " / " +
                         fmt(stored[1]) + " / " + fmt(stored[2]) + ", transposed " + fmt(transposed[0]) + " / " +
                         fmt(transposed[1]) + " / " + fmt(transposed[2]) + "; at 1 / 2 / 4 / 8 rows skinny GEMM " +
                         fmt(skinny[0]) + " / " + fmt(skinny[1]) + " / " + fmt(skinny[2]) + " / " + fmt(skinny[3]) +
                         " vs " + fmt(best[0]) + " / " + fmt(best[1]) + " / " + fmt(best[2]) + " / " + fmt(best[3]) +
                         " (rel. error " + std::to_string(skinnyError) + ")" + tcLine + " -> " +
                         (useT ? "transposed" : "as stored") +
                         (upTo > 0 ? ", skinny GEMM up to " + std::to_string(upTo) + " rows" : "") +
                         (tcUpTo > 0 ? ", tensor cores up to " + std::to_string(tcUpTo) + " rows" : ""));
        m_skinnyRows[p] = upTo;
        m_tensorCoreRows[p] = tcUpTo;
        m_tensorCoresAgree[p] = tcError <= 1e-2;
        if (p == kNumProjections) chooseLmHeadWarpGroup(w0, useT ? &library : nullptr, upTo, tcUpTo, report);
        if (!useT) continue;
        if (p == kNumProjections) {
            m_lmHeadT = t0;
            continue;
        }
        m_transposed[p] = transposedCopies(static_cast<Projection>(p));
    }
    chooseChainRoutes(report);
    choosePersistent(report);
    m_layoutReport = report;
    return report;
}

RunnerTuning ModelRunner::tuning() const
{
    // The kept tuning holds a value for each of the four projections and the LM head, as the runner does.
    static_assert(std::tuple_size_v<Routes> == RunnerTuning::kProjections);
    RunnerTuning t;
    for (int p = 0; p <= kNumProjections; ++p) {
        t.transposed[static_cast<size_t>(p)] = p == kNumProjections ? m_lmHeadT.defined() : !m_transposed[p].empty();
        t.skinnyRows[static_cast<size_t>(p)] = m_skinnyRows[p];
        t.tensorCoreRows[static_cast<size_t>(p)] = m_tensorCoreRows[p];
        t.tensorCoresAgree[static_cast<size_t>(p)] = m_tensorCoresAgree[p];
    }
    t.lmHeadWarpGroup = m_lmHeadWarpGroup;
    for (const auto& [b, routes] : m_chainRoutes)
        for (int p = 0; p <= kNumProjections; ++p)
            t.chainRoutes[b][static_cast<size_t>(p)] = static_cast<int>(routes[static_cast<size_t>(p)]);
    t.rotationInside = m_rotationInside;
    using Kind = gpu::PersistentDecoder::Kind;
    t.singleSequence = !m_persistent                              ? RunnerTuning::kChain
                       : m_persistent->kind() == Kind::HeadParallel ? RunnerTuning::kHeadParallel
                                                                    : RunnerTuning::kPersistentKernel;
    t.longContextFrom = m_persistent ? m_longContextFrom : -1;
    t.report = m_layoutReport;
    t.persistentReport = m_persistentReport;
    return t;
}

std::string ModelRunner::tuningKey() const
{
    const at::Device device = m_decoder.device();
    if (!device.is_cuda()) return {};
    // This executable: our kernels and the runner's choices live in it (static libraries).
    const std::filesystem::path exe = executablePath();
    if (exe.empty()) return {};
    std::error_code ec;
    const auto size = std::filesystem::file_size(exe, ec);
    if (ec) return {};
    const auto time = std::filesystem::last_write_time(exe, ec);
    if (ec) return {};
    const model::hunyuan::TextConfig& c = m_decoder.config();
    const int bs = m_kv.blockSize();
    const std::int64_t perSeq = (kTuningContext + bs - 1) / bs * bs;
    const RunnerOptions& o = m_options;
    std::ostringstream key;
    key << "device: " << gpu::deviceFingerprint(device) << "\n"
        << "libtorch: " << TORCH_VERSION << "\n"
        << "executable: " << exe.string() << ", " << size << " bytes, " << time.time_since_epoch().count() << "\n"
        << "model: " << c.numLayers << " layers, hidden " << c.hiddenSize << ", heads " << c.numHeads << " / "
        << c.numKvHeads << " of " << c.headDim << ", intermediate " << c.intermediateSize << ", vocabulary "
        << c.vocabSize << ", " << c10::toString(m_decoder.dtype()) << "\n"
        // (the step timings stop at the first graph size the pool cannot hold, 64 at most; the exact pool
        // size moves with the free memory at each start)
        << "pool: room for " << std::min<std::int64_t>(m_kv.numSlots() / perSeq, gpu::kSkinnyTcMaxRows)
        << " sequences of " << kTuningContext << " tokens (counted up to " << gpu::kSkinnyTcMaxRows << ")\n"
        << "options: graphs " << o.cudaGraphs << ", max graph batch " << o.maxGraphBatch << ", graph context "
        << o.graphContextTokens << ", skinny " << o.skinnyRows << ", tensor cores " << o.tensorCoreRows << ", apart "
        << o.tensorCoreApart << ", persistent " << static_cast<int>(o.persistentDecode) << ", cluster attention up to "
        << o.attentionClusterMaxBatch << ", fused decode rope up to " << o.fusedDecodeRopeMaxBatch << ", chain tuning "
        << (envOff("LECTOR_CHAIN_TUNING") ? "off" : "on")
        // (programmatic dependent launch changes every timing: a comparison without it tunes for itself)
        << ", PDL " << (envOff("LECTOR_PDL") ? "off" : "on") << "\n";
    return key.str();
}

bool ModelRunner::applyTuning(const RunnerTuning& t)
{
    c10::InferenceMode inference;
    // Check everything before changing anything.
    for (int p = 0; p <= kNumProjections; ++p) {
        const auto i = static_cast<size_t>(p);
        if (t.skinnyRows[i] < 0 || t.skinnyRows[i] > 64 || t.tensorCoreRows[i] < 0 || t.tensorCoreRows[i] > gpu::kSkinnyTcMaxRows)
            return false;
    }
    if (t.lmHeadWarpGroup >> std::size(kLmHeadWarpGroupRows)) return false;
    for (const auto& [b, inside] : t.rotationInside)
        if (b < 1) return false;
    for (const auto& [b, routes] : t.chainRoutes) {
        if (b < 1) return false;
        for (int r : routes)
            if (r < static_cast<int>(Route::Library) || r > static_cast<int>(Route::WarpGroupApart)) return false;
    }
    using Kind = gpu::PersistentDecoder::Kind;
    std::unique_ptr<gpu::PersistentDecoder>* keep = nullptr;
    if (t.singleSequence != RunnerTuning::kChain) {
        const Kind want = t.singleSequence == RunnerTuning::kHeadParallel ? Kind::HeadParallel : Kind::Persistent;
        for (std::unique_ptr<gpu::PersistentDecoder>* candidate : {&m_persistent, &m_headParallel})
            if (*candidate && (*candidate)->kind() == want) keep = candidate;
        if (!keep) return false;
    }

    for (int p = 0; p <= kNumProjections; ++p) {
        const auto i = static_cast<size_t>(p);
        m_skinnyRows[p] = t.skinnyRows[i];
        m_tensorCoreRows[p] = t.tensorCoreRows[i];
        m_tensorCoresAgree[p] = t.tensorCoresAgree[i];
        if (p == kNumProjections) {
            m_lmHeadT = t.transposed[i] ? m_decoder.lmHead().t().contiguous() : at::Tensor();
            continue;
        }
        m_transposed[p] = t.transposed[i] ? transposedCopies(static_cast<Projection>(p)) : std::vector<at::Tensor>();
    }
    m_lmHeadWarpGroup = t.lmHeadWarpGroup;
    m_chainRoutes.clear();
    for (const auto& [b, routes] : t.chainRoutes)
        for (int p = 0; p <= kNumProjections; ++p)
            m_chainRoutes[b][static_cast<size_t>(p)] = static_cast<Route>(routes[static_cast<size_t>(p)]);
    m_rotationInside = t.rotationInside;
    std::unique_ptr<gpu::PersistentDecoder> kept = keep ? std::move(*keep) : nullptr;
    m_persistent = std::move(kept);
    m_headParallel.reset();
    m_longContextFrom = keep ? t.longContextFrom : -1;
    m_layoutReport = t.report;
    m_persistentReport = t.persistentReport;
    return true;
}

ModelRunner::Metadata ModelRunner::tuningStep(int batch, std::int64_t context) const
{
    const int bs = m_kv.blockSize();
    const std::int64_t blocksPerSeq = (context + bs - 1) / bs;
    RunnerStep step;
    for (int i = 0; i < batch; ++i) {
        RunnerSequence seq;
        seq.numNew = 1;
        seq.past = context - 1;
        for (std::int64_t b = 0; b < blocksPerSeq; ++b) seq.blocks.push_back(static_cast<int>(i * blocksPerSeq + b));
        seq.sample = true;
        step.seqs.push_back(std::move(seq));
        step.tokenIds.push_back(0);
    }
    step.positions.assign(static_cast<size_t>(m_decoder.rope().numAxes()) * static_cast<size_t>(batch), context - 1);
    return upload(step);
}

// Why the step and not the projections alone: our tensor-core GEMM loads its weights before its PDL
// wait, so in the step it overlaps the kernel before it, which the per-projection timings (one weight,
// repeated) cannot show; cuBLAS launches without PDL. On an H200 (perf.md, call 87) the tensor cores
// behind the norm kernels took 60 to 94 us off the step at 4 and 8 sequences although cuBLAS wins most
// of those projections alone, and the best choice differs per projection and batch (gate/up through
// cuBLAS from 16 rows, o on the tensor cores at 24 and 32). So for each graph size of kChainMinRows to
// 64 sequences that the pool can hold at a page's context, each projection and the LM head in turn tries
// the routes it does not take yet (the library, the tensor cores behind the norm kernels, the warp
// groups), and keeps one that makes the step at least 2 % faster with logits that agree with the
// per-projection choice's; the changes that gained less are then tried together once. About 6 to 12
// timings of a few decode steps per size.
void ModelRunner::chooseChainRoutes(std::vector<std::string>& report)
{
    const at::Device device = m_decoder.device();
    if (!device.is_cuda() || !gpu::cudaGraphsAvailable()) return;
    if (envOff("LECTOR_CHAIN_TUNING")) {
        report.push_back("decode step routes: not timed (LECTOR_CHAIN_TUNING=0)");
        return;
    }
    bool anyTensorCores = false;
    for (int p = 0; p < kNumProjections; ++p) anyTensorCores = anyTensorCores || m_tensorCoresAgree[p];
    if (!anyTensorCores) return;  // nothing but the library to choose from
    const int bs = m_kv.blockSize();
    const std::int64_t blocksPerSeq = (kTuningContext + bs - 1) / bs;
    const char* names[kNumProjections + 1] = {"qkv", "o", "gate/up", "down", "lm head"};
    const char* routeNames[] = {"library", "simt", "tensor cores", "tensor cores apart", "warp groups apart"};
    m_chainRoutes.clear();
    m_rotationInside.clear();
    const auto t0 = std::chrono::steady_clock::now();
    for (const int b : graphBatchSizes(std::min(m_options.maxGraphBatch, gpu::kSkinnyTcMaxRows))) {
        if (b < kChainMinRows) continue;
        if (b * blocksPerSeq * bs > m_kv.numSlots()) break;  // the pool is too small for this batch at a page's context
        const Metadata meta = tuningStep(b, kTuningContext);
        useGraphAttention(b);
        // The routes are timed with the rotation where the option puts it; then the other way once.
        const bool rotatable = !m_rotationForced && m_decodeRowParts > 0;
        const bool rotationByDefault = b <= m_options.fusedDecodeRopeMaxBatch;
        if (rotatable) m_rotationInside[b] = rotationByDefault;
        auto step = [&] { return logits(forward(embedRows(meta, at::Tensor()), meta)); };
        Routes routes;
        for (int p = 0; p <= kNumProjections; ++p) routes[static_cast<size_t>(p)] = route(b, p);  // per projection
        m_chainRoutes[b] = routes;
        at::Tensor want;
        double wantNorm = 0, perProjectionUs = 0;
        try {
            want = step().to(at::kFloat);
            wantNorm = std::max(want.norm().item<double>(), 1e-30);
            perProjectionUs = gpu::graphMicros(device, [&] { (void)step(); }, 3);
        } catch (const std::exception& e) {  // what the graphs would run fails: leave this size to them
            m_chainRoutes.erase(b);
            m_rotationInside.erase(b);
            report.push_back("decode step of " + std::to_string(b) + " sequences: not timed (" + e.what() + ")");
            break;
        }
        // The step with these routes, or infinity where its logits do not match the per-projection choice's
        // or it fails (a route this card or shape does not take: never).
        auto timeRoutes = [&](const Routes& trial) {
            m_chainRoutes[b] = trial;
            try {
                const at::Tensor got = step().to(at::kFloat);
                if ((got - want).norm().item<double>() / wantNorm <= 1e-2)
                    return gpu::graphMicros(device, [&] { (void)step(); }, 3);
            } catch (const std::exception&) {
            }
            return std::numeric_limits<double>::infinity();
        };
        double bestUs = perProjectionUs;
        // Per projection, the fastest alternative that beat the routes it was tried on by less than the
        // 2 % bar (kNone: none), for the joint trial below.
        constexpr Route kNone = static_cast<Route>(0xff);
        Routes nearMiss;
        nearMiss.fill(kNone);
        std::array<double, kNumProjections + 1> nearMissUs{};
        // The LM head is timed here too, in the step: alone (chooseLmHeadWarpGroup) the warp-group engine
        // must win by 5 %, but in the step it also loads its weights before its PDL wait, under the final
        // norm.
        for (int p = 0; p <= kNumProjections; ++p) {
            // The warp-group engine (sm_90a) has no load-time check of its own: the step's logits must
            // match, and a card without it fails the launch (never taken).
            for (const Route alt : {Route::Library, Route::TensorCoreApart, Route::WarpGroupApart}) {
                const Route now = routes[static_cast<size_t>(p)];
                // (o and the LM head have no prologue: both tensor-core routes are one)
                const bool noPrologue = p == kO || p == kNumProjections;
                if (alt == now || (alt == Route::TensorCoreApart && (!m_tensorCoresAgree[p] || (noPrologue && now == Route::TensorCore))))
                    continue;
                Routes trial = routes;
                trial[static_cast<size_t>(p)] = alt;
                const double us = timeRoutes(trial);
                if (us < 0.98 * bestUs) {
                    bestUs = us;
                    routes = trial;
                    nearMiss[static_cast<size_t>(p)] = kNone;
                } else if (us < bestUs && (nearMiss[static_cast<size_t>(p)] == kNone || us < nearMissUs[static_cast<size_t>(p)])) {
                    nearMiss[static_cast<size_t>(p)] = alt;
                    nearMissUs[static_cast<size_t>(p)] = us;
                }
            }
        }
        // Gains under the bar can add up: on an H100 (docs/perf.md, call 211) o, down and the LM head on
        // the warp groups each took 1-1.3 % off the step of 32 sequences and 3.1 % together. So where two
        // or more projections missed the bar, they are timed together once and kept at 2 % faster.
        std::string together;
        Routes joint = routes;
        int misses = 0;
        for (int p = 0; p <= kNumProjections; ++p)
            if (nearMiss[static_cast<size_t>(p)] != kNone) {
                joint[static_cast<size_t>(p)] = nearMiss[static_cast<size_t>(p)];
                ++misses;
            }
        if (misses >= 2) {
            const double us = timeRoutes(joint);
            const bool taken = us < 0.98 * bestUs;
            together = std::string("; ") + std::to_string(misses) + " changes under 2 % together " + roundedUs(us) + " us" +
                       (taken ? " (taken)" : "");
            if (taken) {
                bestUs = us;
                routes = joint;
            }
        }
        m_chainRoutes[b] = routes;
        std::string rotation;
        if (rotatable) {
            // The QK-norm/RoPE kernel against the rotation inside decode attention, on these routes: one
            // kernel less a layer, but on an H100 the fusion lost at 56 and 64 sequences (docs/perf.md,
            // call 206), so each card says where. The other way is kept only at 1 % faster (noise).
            m_rotationInside[b] = !rotationByDefault;
            const double us = timeRoutes(routes);  // infinity where this card does not run it: never
            const bool flip = us < 0.99 * bestUs;
            m_rotationInside[b] = flip != rotationByDefault;
            const double insideUs = rotationByDefault ? bestUs : us, apartUs = rotationByDefault ? us : bestUs;
            rotation = std::string("; rotation inside attention ") + roundedUs(insideUs) + " us, apart " + roundedUs(apartUs) +
                       " us (" + (m_rotationInside[b] ? "inside" : "apart") + " taken)";
        }
        std::string line = "decode step of " + std::to_string(b) + " sequences:";
        for (int p = 0; p <= kNumProjections; ++p)
            line += std::string(p ? "," : "") + " " + names[p] + " " + routeNames[static_cast<int>(routes[static_cast<size_t>(p)])];
        report.push_back(line + " (" + roundedUs(bestUs) + " us, against " + roundedUs(perProjectionUs) +
                         " with the per-projection choice" + together + rotation + ")");
    }
    useEagerAttention();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    report.push_back("decode step routes: " + std::to_string(m_chainRoutes.size()) + " graph sizes timed in " +
                     std::to_string(ms) + " ms");
}

void ModelRunner::chooseLmHeadWarpGroup(const at::Tensor& weight, const at::Tensor* transposed, int skinnyUpTo,
                                        int tensorCoresUpTo, std::vector<std::string>& report)
{
    // The logits as logits() makes them, float32, by each way it could take at these rows: the warp-group
    // engine where it is at least 5 % faster than the faster of the others and matches the library.
    const at::Device device = weight.device();
    m_lmHeadWarpGroup = 0;
    std::string line = "lm head, warp-group engine at";
    for (size_t i = 0; i < std::size(kLmHeadWarpGroupRows); ++i) {
        const std::int64_t rows = kLmHeadWarpGroupRows[i];
        if (rows <= skinnyUpTo) continue;
        const at::Tensor x = at::randn({rows, weight.size(1)}, weight.options());
        const at::Tensor out = at::empty({rows, weight.size(0)}, weight.options().dtype(at::kFloat));
        auto library = [&] { return (transposed ? at::mm(x, *transposed) : at::linear(x, weight)).to(at::kFloat); };
        double wg = std::numeric_limits<double>::infinity(), other = gpu::graphMicros(device, [&] { (void)library(); });
        try {
            gpu::skinnyLinear(out, x, weight, false, gpu::SkinnyEngine::WarpGroup);
            const at::Tensor want = library();
            if ((out - want).norm().item<double>() <= 1e-2 * std::max(want.norm().item<double>(), 1e-30))
                wg = gpu::graphMicros(device, [&] { gpu::skinnyLinear(out, x, weight, false, gpu::SkinnyEngine::WarpGroup); });
        } catch (const std::exception&) {  // not this card: never
        }
        if (rows <= tensorCoresUpTo)
            other = std::min(other, gpu::graphMicros(device, [&] { gpu::skinnyLinear(out, x, weight, false, gpu::SkinnyEngine::TensorCore); }));
        if (wg < 0.95 * other) m_lmHeadWarpGroup |= 1u << i;
        line += " " + std::to_string(rows) + " rows " + roundedUs(wg) + " us vs " +
                roundedUs(other) + (m_lmHeadWarpGroup >> i & 1u ? " (taken);" : ";");
    }
    report.push_back(line);
}

void ModelRunner::choosePersistent(std::vector<std::string>& report)
{
    if (!m_persistent || m_options.persistentDecode == RunnerOptions::Persistent::Always) return;
    // One decode step of one sequence at a page's context, every way, on the empty pool's first blocks
    // (their contents do not matter for timing): the kernel chain with the layouts just chosen and the
    // graphs' partition for a single sequence, and each gpu::PersistentDecoder kind built at load.
    const std::int64_t context = std::min<std::int64_t>(kTuningContext, std::int64_t(m_kv.numSlots()));
    const Metadata meta = tuningStep(1, context);
    const at::Device device = m_decoder.device();
    const double chainUs = chainStepMicros(meta);
    auto name = [](const gpu::PersistentDecoder& d) {
        return d.kind() == gpu::PersistentDecoder::Kind::HeadParallel ? std::string("head-parallel decode kernels")
                                                                      : std::string("persistent decode kernel");
    };
    std::string line = "single-sequence steps at context " + std::to_string(context) + ": kernel chain " + roundedUs(chainUs) + " us";
    double best = chainUs;
    std::unique_ptr<gpu::PersistentDecoder>* winner = nullptr;
    for (std::unique_ptr<gpu::PersistentDecoder>* candidate : {&m_persistent, &m_headParallel}) {
        if (!*candidate) continue;
        double t = 0;
        try {
            t = gpu::graphMicros(device, [&] { (void)runDecoder(**candidate, meta); }, 5);
        } catch (const std::exception& e) {  // e.g. no room for its clusters on this part: not a candidate
            line += "; " + name(**candidate) + " failed (" + e.what() + ")";
            continue;
        }
        line += "; " + name(**candidate) + " " + roundedUs(t) + " us";
        if (t < best) best = t, winner = candidate;
    }
    line += winner ? " (" + name(**winner) + " taken)" : " (the chain taken)";
    std::unique_ptr<gpu::PersistentDecoder> kept = winner ? std::move(*winner) : nullptr;
    m_persistent = std::move(kept);
    m_headParallel.reset();
    m_persistentReport = line;
    report.push_back(line);
    m_longContextFrom = -1;
    if (m_persistent) chooseLongContext(report);
}

double ModelRunner::chainStepMicros(const Metadata& meta)
{
    // With the graphs' attention partition for a single sequence, as graph 1 and the chain's long-context graph run it.
    useGraphAttention(1);
    const double us = gpu::graphMicros(m_decoder.device(), [&] { (void)logits(forward(embedRows(meta, at::Tensor()), meta)); }, 5);
    useEagerAttention();
    return us;
}

void ModelRunner::chooseLongContext(std::vector<std::string>& report)
{
    // Past their prefetched context the single-sequence kernels read the rest of the keys one group at a time:
    // 0.75 ms a step at 2100 keys against the chain's ~0.65 when this handover was made (docs/perf.md calls
    // 151-154); since the prefetch fix, the quads and the balanced clusters the head-parallel kernels were the
    // faster to 2076 keys (call 194: a page's 1000 tokens 34 ms sooner). So both are timed at longer contexts
    // within the graphs' reach, and the chain's graph takes over past the last context the kernels won.
    const std::int64_t prefetched = m_persistent->prefetchedContext();
    const std::int64_t limit = std::min<std::int64_t>(graphMaxBlocks() * m_kv.blockSize(), m_kv.numSlots());
    const at::Device device = m_decoder.device();
    std::string line = "single-sequence steps past the kernels' prefetch (" + std::to_string(prefetched) +
                       " keys), kernel chain against the kernels, us:";
    std::int64_t lastWon = prefetched;
    bool measured = false, chainWon = false;
    for (const std::int64_t context : {1536, 2048, 3072, 4096, 6144, 8192}) {
        if (context <= prefetched || context > limit) continue;
        const Metadata meta = tuningStep(1, context);
        const double chainUs = chainStepMicros(meta);
        const double kernelsUs = gpu::graphMicros(device, [&] { (void)runDecoder(*m_persistent, meta); }, 5);
        line += " at " + std::to_string(context) + " " + roundedUs(chainUs) + " / " + roundedUs(kernelsUs) + ";";
        measured = true;
        if (chainUs < kernelsUs) {
            chainWon = true;
            break;
        }
        lastWon = context;
    }
    if (!measured) return;  // no context to measure in the pool or the graphs: from the prefetch, as before
    m_longContextFrom = chainWon ? lastWon : 0;
    report.push_back(line + (chainWon ? " the chain's graph past " + std::to_string(lastWon) + " keys"
                                      : " the kernels throughout"));
}

// --- steps ---

at::Tensor ModelRunner::run(const RunnerStep& step)
{
    c10::InferenceMode inference;
    if (graphable(step)) return runGraph(step, nullptr);
    useEagerAttention();
    const Metadata meta = upload(step);
    if (persistentStep(meta)) return runPersistent(meta);
    return logits(forward(embedRows(meta, step.promptEmbeds), meta));
}

void ModelRunner::useGraphAttention(int batch)
{
    const model::hunyuan::TextConfig& c = m_decoder.config();
    m_decodePartition = kGraphPartitionSmall;
    m_decodeRowParts =
        batch <= kGraphSmallBatch ? 0 : gpu::pagedDecodeRowPartitions(batch, c.numKvHeads, m_decoder.device());
    m_decodeClusterParts = 0;
    if (batch > m_options.attentionClusterMaxBatch) return;
    if (m_graphClusterParts < 0) {
        const at::Tensor keyCache = m_kv.keys(0).view({-1, m_kv.blockSize(), c.numKvHeads, c.headDim});
        m_graphClusterParts = gpu::pagedDecodeClusterPartitions(keyCache, c.numHeads, graphMaxBlocks() * m_kv.blockSize(),
                                                                kGraphClusterPartitions);
    }
    m_decodeClusterParts = m_graphClusterParts;
}

void ModelRunner::useEagerAttention()
{
    m_decodePartition = -1;
    m_decodeRowParts = 0;
    m_decodeClusterParts = 0;
}

bool ModelRunner::persistentStep(const Metadata& meta) const
{
    return m_persistent && meta.decodeOnly && meta.numSeqs == 1 && meta.numRows == 1 && !meta.promptRows.defined() &&
           !meta.sampleRows.defined();
}

at::Tensor ModelRunner::runPersistent(const Metadata& meta) const
{
    return runDecoder(*m_persistent, meta);
}

at::Tensor ModelRunner::runDecoder(const gpu::PersistentDecoder& decoder, const Metadata& meta) const
{
    at::Tensor logits = at::empty({1, m_decoder.config().vocabSize},
                                  at::TensorOptions().dtype(at::kFloat).device(m_decoder.device()));
    decoder.step(logits, meta.ids, meta.positions, meta.slots, meta.contextLens, meta.blockTable.view({-1}));
    return logits;
}

bool ModelRunner::graphable(const RunnerStep& step) const
{
    if (m_graphs.empty() || step.seqs.empty() || step.promptEmbeds.defined()) return false;
    const auto batch = static_cast<int>(step.seqs.size());
    if (batch > m_graphs.rbegin()->first) return false;
    for (const RunnerSequence& s : step.seqs)
        if (s.numNew != 1 || !s.sample || s.past + 1 > m_options.graphContextTokens) return false;
    return true;
}

int ModelRunner::captureGraphs()
{
    const at::Device device = m_decoder.device();
    if (!m_options.cudaGraphs || !device.is_cuda() || !gpu::cudaGraphsAvailable() || !m_graphs.empty()) return 0;
    c10::InferenceMode inference;
    const std::vector<int> sizes = graphBatchSizes(m_options.maxGraphBatch);
    if (sizes.empty()) return 0;
    const int maxBatch = sizes.back();
    const int numAxes = m_decoder.rope().numAxes();
    const int bs = m_kv.blockSize();
    const std::int64_t maxBlocks = graphMaxBlocks();
    // Dummy step for warm-up and capture: every row attends to one token of block 0, writes nowhere.
    m_graphInputs = at::zeros({graphInputs(maxBatch).end}, at::TensorOptions().dtype(at::kByte).device(device));
    if (m_sampler) m_graphScratch = at::zeros({std::max<std::int64_t>(1, m_sampler->scratchWords(maxBatch))},
                                              at::TensorOptions().dtype(at::kLong).device(device));
    const gpu::CudaGraph* pool = nullptr;
    // Largest first, so the smaller graphs reuse the pool memory the largest one needed.
    for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
        const int b = *it;
        const GraphInputs g = graphInputs(b);
        Metadata meta;
        meta.numRows = meta.numSeqs = b;
        meta.maxQueryLen = 1;
        meta.maxContextLen = maxBlocks * bs;
        meta.decodeOnly = true;
        meta.ids = graphInput(g.ids, b, at::kLong);
        meta.positions = graphInput(g.positions, numAxes * b, at::kLong).view({numAxes, b});
        meta.slots = graphInput(g.slots, b, at::kLong);
        meta.contextLens = graphInput(g.contextLens, b, at::kInt);
        meta.blockTable = graphInput(g.blockTable, b * maxBlocks, at::kInt).view({b, maxBlocks});
        // The dummy rows of this size: slot -1 (no KV write), one key in block 0, greedy draws into the
        // sampler's spare row (the inputs are shared, so re-set them; the real steps overwrite all of it).
        meta.slots.fill_(-1);
        meta.contextLens.fill_(1);
        meta.blockTable.zero_();
        const at::Tensor packed = m_graphInputs.narrow(0, g.sampling, DeviceSampler::packedBytes(b));
        if (m_sampler) {
            at::Tensor h = at::empty({packed.numel()}, hostOptions(at::kByte, device));
            m_sampler->pack({}, b, h.data_ptr<std::uint8_t>());
            packed.copy_(h);
        }
        useGraphAttention(b);
        // A graph of this size through m_persistent's decoder or the kernel chain: one step, or `steps` of one
        // sequence back to back. Between those the sampler moves the inputs on, and the next step reads them
        // only after it is done: the head-parallel decoder's first kernel reads them after its wait (and lets
        // the rest of the step launch only then), the persistent kernel starts without PDL, and the chain's
        // step starts with libtorch's embedding kernel, also without PDL, ahead of our kernels that read the
        // inputs before their wait. The dummy row's slot -1 keeps it from moving in the warm-up.
        // screened: the greedy screen instead of the LM head and the sampler (one sequence, a sampler attached).
        auto captured = [&](bool persistent, int steps, bool screened = false) {
            auto graph = std::make_unique<DecodeGraph>();
            gpu::SampleAdvance advance{meta.contextLens, meta.positions, meta.slots, meta.blockTable, at::Tensor()};
            auto body = [&] {
                for (int k = 0; k < steps; ++k) {
                    if (steps > 1) advance.history = m_stepTokens.narrow(0, k, 1);
                    if (screened) {
                        at::Tensor hidden = m_screenHidden;
                        if (persistent)
                            m_persistent->stepHidden(hidden, meta.ids, meta.positions, meta.slots, meta.contextLens,
                                                     meta.blockTable.view({-1}));
                        else
                            hidden = forward(embedRows(meta, at::Tensor()), meta);
                        m_sampler->launchGreedy(meta.ids, hidden, m_decoder.lmHead(), *m_screenHead, packed, m_screenScratch,
                                                steps > 1 ? &advance : nullptr);
                        continue;
                    }
                    graph->logits = persistent ? runPersistent(meta) : logits(forward(embedRows(meta, at::Tensor()), meta));
                    if (!m_sampler) continue;
                    // The next step's ids: drawn into this graph's own input, where the next replay (or step) reads them.
                    m_sampler->launch(meta.ids, graph->logits, packed, m_graphScratch.narrow(0, 0, m_sampler->scratchWords(b)),
                                      steps > 1 ? &advance : nullptr);
                }
            };
            body();  // warm-up: cuBLAS handles and workspaces exist before capture
            graph->graph.capture(device, body, pool);
            pool = &graph->graph;
            return graph;
        };
        const bool persistent = persistentStep(meta);
        m_graphs.emplace(b, captured(persistent, 1));
        // The head-parallel kernels read keys past their prefetch one group at a time (0.75 ms a step at
        // 2100 keys against the chain's ~0.65, docs/perf.md calls 151-154): long single-sequence contexts
        // (a dense page's long output) replay the chain's graph instead, captured on the same inputs.
        // LECTOR_LONG_CONTEXT_GRAPH=0 keeps the head-parallel graph at every context (for comparison).
        // (From where chooseLongContext() measured the chain to be faster, or else the kernels' prefetch.)
        const std::int64_t longFrom =
            !persistent ? 0 : m_longContextFrom >= 0 ? m_longContextFrom : m_persistent->prefetchedContext();
        if (b == 1 && longFrom > 0 && longFrom < maxBlocks * bs && !envOff("LECTOR_LONG_CONTEXT_GRAPH")) {
            m_longContextGraph = captured(false, 1);
            m_longContextFrom = longFrom;
        }
        // Several steps of one sequence a replay (the chain's for the contexts m_longContextGraph serves),
        // each replayed once with the dummy now: the load's warm-up pages are too short to take these
        // graphs, and a graph's first launch also uploads it, which the first request would pay.
        const int steps = m_options.decodeGraphSteps;
        if (b == 1 && persistent && m_sampler && steps > 1) {
            m_stepTokens = at::zeros({steps}, at::TensorOptions().dtype(at::kLong).device(device));
            m_stepsGraph = captured(true, steps);
            m_stepsGraph->graph.replay();
            if (m_longContextGraph) {
                m_longContextStepsGraph = captured(false, steps);
                m_longContextStepsGraph->graph.replay();
            }
        }
        // The same graphs of one sequence with the greedy screen (RunnerOptions::greedyScreen).
        using Screen = RunnerOptions::GreedyScreen;
        const Screen screen = m_options.greedyScreen;
        if (b != 1 || !m_sampler || screen == Screen::Off) continue;
        const std::string why = persistent && !m_persistent->hasStepHidden()
                                    ? "the persistent kernel computes its logits itself"
                                    : gpu::greedyScreenUnsupported(m_decoder.lmHead());
        if (!why.empty()) {
            m_screenReport = "greedy screen: not used (" + why + ")";
        } else {
            // An optional path: whatever fails here leaves the plain graphs serving, and says why.
            try {
                m_screenHead = std::make_unique<gpu::GreedyScreenHead>(gpu::quantizeGreedyScreen(m_decoder.lmHead()));
                const auto on = at::TensorOptions().device(device);
                m_screenScratch =
                    at::zeros({gpu::greedyScreenScratchWords(m_decoder.config().vocabSize, device)}, on.dtype(at::kLong));
                m_screenHidden = at::empty({1, m_decoder.config().hiddenSize}, on.dtype(m_decoder.dtype()));
                m_screened.one = captured(persistent, 1, true);
                if (m_longContextGraph) m_screened.longContext = captured(false, 1, true);
                if (m_stepsGraph) m_screened.steps = captured(true, steps, true);
                if (m_longContextStepsGraph) m_screened.longContextSteps = captured(false, steps, true);
                keepScreenedGraphsIfBetter(/*timed=*/screen == Screen::Auto);
            } catch (const std::exception& e) {
                dropScreenedGraphs();
                const std::string what = e.what();
                m_screenReport = "greedy screen: not used (" + what.substr(0, what.find('\n')) + ")";
            }
        }
    }
    useEagerAttention();
    return static_cast<int>(m_graphs.size());
}

void ModelRunner::keepScreenedGraphsIfBetter(bool timed)
{
    const at::Device device = m_decoder.device();
    // Graph 1's inputs hold the dummy step (one key of block 0, no K/V written, a greedy draw into the
    // spare presence row at penalty 1; its slot -1 keeps the draws from moving it on): each graph from id 0,
    // the tokens it draws. Each run starts from a copy of those inputs, whatever a replay left there.
    const at::Tensor ids = graphInput(0, 1, at::kLong);
    const at::Tensor inputs = m_graphInputs.narrow(0, 0, graphInputs(1).end);
    const at::Tensor dummy = inputs.clone();
    auto restore = [&] {
        inputs.copy_(dummy);
        ids.zero_();
    };
    using Tokens = std::vector<std::int64_t>;
    auto idsText = [](const Tokens& t) {
        std::string text;
        for (const std::int64_t id : t) {
            if (!text.empty()) text += ' ';
            text += std::to_string(id);
        }
        return text;
    };
    // A graph of one step replayed n times from the dummy, each replay's token the next one's input: the
    // tokens, and where asked each step's logits (on the device).
    auto replayOne = [&](DecodeGraph& g, std::int64_t n, std::vector<at::Tensor>* logits) {
        restore();
        Tokens tokens;
        for (std::int64_t k = 0; k < n; ++k) {
            g.graph.replay();
            tokens.push_back(ids.item<std::int64_t>());
            if (logits) logits->push_back(g.logits[0].clone());
        }
        return tokens;
    };
    // A set of screened graphs against the plain graph of one step (as many steps as a graph of several
    // holds): the screened graph of one step draws the plain one's tokens up to an exact tie that float32
    // summation order decides (within 1e-5 of the largest logit: the steps after it then start from other
    // inputs, so the comparison ends there), and the screened graph of several steps draws what its graph of
    // one step draws replayed as often (the same kernels: this checks the advance between its steps).
    auto compareSet = [&](DecodeGraph* plainOne, DecodeGraph* screenedOne, DecodeGraph* screenedSteps,
                          const char* name) -> std::string {
        if (!plainOne || !screenedOne) return "";
        const std::int64_t n = screenedSteps ? m_stepTokens.numel() : 1;
        std::vector<at::Tensor> logits;
        const Tokens want = replayOne(*plainOne, n, &logits), got = replayOne(*screenedOne, n, nullptr);
        for (size_t k = 0; k < want.size(); ++k) {
            const std::int64_t w = want[k], g = got[k];
            if (w == g) continue;
            const at::Tensor l = logits[k].to(at::kCPU);
            const double gap = std::fabs(l[w].item<double>() - l[g].item<double>()), top = l.abs().max().item<double>();
            if (gap <= 1e-5 * top) break;
            return std::string(name) + " drew " + idsText(got) + " against " + idsText(want) + " (step " +
                   std::to_string(k + 1) + ": logits " + std::to_string(gap / top) + " of the largest apart)";
        }
        if (!screenedSteps) return "";
        restore();
        screenedSteps->graph.replay();
        const at::Tensor drawn = m_stepTokens.to(at::kCPU);
        const Tokens steps(drawn.data_ptr<std::int64_t>(), drawn.data_ptr<std::int64_t>() + drawn.numel());
        if (steps == got) return "";
        return std::string(name) + "'s launch of several steps drew " + idsText(steps) + " against " + idsText(got) +
               " one step a replay";
    };
    const std::string mismatch = compareSet(m_graphs.at(1).get(), m_screened.one.get(), m_screened.steps.get(), "graph 1");
    // The chain's graphs for long contexts: where they disagree, those two go without the screen, the rest keep it.
    const std::string chainMismatch = compareSet(m_longContextGraph.get(), m_screened.longContext.get(),
                                                 m_screened.longContextSteps.get(), "the chain's graph 1");
    if (!chainMismatch.empty()) m_screened.longContext.reset(), m_screened.longContextSteps.reset();
    restore();
    std::string line;
    bool keep = mismatch.empty();
    if (!keep) {
        line = "greedy screen: not used (" + mismatch + ")";
    } else if (timed) {
        // Alternating rounds; the best of each (the card's noise only ever adds).
        double plainUs = 1e30, screenedUs = 1e30;
        for (int round = 0; round < 3; ++round) {
            plainUs = std::min(plainUs, gpu::replayMicros(device, m_graphs.at(1)->graph));
            screenedUs = std::min(screenedUs, gpu::replayMicros(device, m_screened.one->graph));
        }
        restore();
        keep = screenedUs < plainUs;
        line = "greedy screen: graph 1 " + roundedUs(screenedUs) + " us a replay against " +
               roundedUs(plainUs) + " with the LM head and the sampler" +
               (keep ? " (taken)" : " (not taken)");
    } else {
        line = "greedy screen: on (draws the same tokens on the dummy step)";
    }
    if (keep && !chainMismatch.empty()) line += "; not in the chain's long-context graphs (" + chainMismatch + ")";
    if (!keep) dropScreenedGraphs();
    m_screenReport = line;
}

void ModelRunner::dropScreenedGraphs()
{
    m_screened = ScreenedGraphs();
    m_screenHead.reset();
    m_screenHidden = m_screenScratch = at::Tensor();
}

std::int64_t ModelRunner::graphMaxBlocks() const
{
    const int bs = m_kv.blockSize();
    return (m_options.graphContextTokens + bs - 1) / bs;
}

ModelRunner::GraphInputs ModelRunner::graphInputs(int b) const
{
    const std::int64_t rows = b, axes = m_decoder.rope().numAxes();
    GraphInputs g;
    g.ids = 0;
    g.positions = 8 * rows;
    g.slots = g.positions + 8 * axes * rows;
    g.sampling = g.slots + 8 * rows;
    g.contextLens = g.sampling + (DeviceSampler::packedBytes(rows) + 7) / 8 * 8;
    g.blockTable = g.contextLens + 4 * rows;
    g.end = g.blockTable + 4 * rows * graphMaxBlocks();
    return g;
}

at::Tensor ModelRunner::graphInput(std::int64_t offset, std::int64_t count, at::ScalarType type) const
{
    return m_graphInputs.narrow(0, offset, count * static_cast<std::int64_t>(at::elementSize(type))).view(type);
}

void ModelRunner::attachSampler(DeviceSampler& sampler)
{
    LECTOR_ASSERT(m_graphs.empty());  // the graphs capture it
    m_sampler = &sampler;
}

bool ModelRunner::samplesInGraph(const RunnerStep& step) const { return m_sampler && graphable(step); }

PendingTokens ModelRunner::runSampled(const RunnerStep& step, const std::vector<DeviceSampling>& sampling)
{
    c10::InferenceMode inference;
    LECTOR_ASSERT(samplesInGraph(step) && sampling.size() == step.seqs.size());
    (void)runGraph(step, &sampling);
    return DeviceSampler::copyToHost(graphInput(0, static_cast<std::int64_t>(step.seqs.size()), at::kLong));
}

int ModelRunner::decodeStepsFor(const RunnerStep& step) const
{
    const int steps = m_options.decodeGraphSteps;
    if (steps <= 1 || !m_sampler || step.seqs.size() != 1 || step.promptEmbeds.defined()) return 1;
    const RunnerSequence& s = step.seqs[0];
    if (s.numNew != 1 || !s.sample) return 1;
    if (m_decoder.device().is_cpu()) return steps;  // runSampledSteps runs them one by one
    if (!m_stepsGraph || !graphable(step)) return 1;
    // Every step inside the graphs' contexts, and all of them on one side of where graph 1 hands over to
    // the chain's graph (runGraph).
    const std::int64_t first = s.past + 1, last = s.past + steps;  // the first and last step's contexts
    if (last > m_options.graphContextTokens) return 1;
    if (m_longContextGraph && last > m_longContextFrom && (first <= m_longContextFrom || !m_longContextStepsGraph)) return 1;
    return steps;
}

PendingTokens ModelRunner::runSampledSteps(const RunnerStep& step, const std::vector<DeviceSampling>& sampling)
{
    c10::InferenceMode inference;
    const int steps = decodeStepsFor(step);
    LECTOR_ASSERT(steps > 1 && sampling.size() == 1);
    const RunnerSequence& seq = step.seqs[0];
    LECTOR_ASSERT(static_cast<std::int64_t>(seq.blocks.size()) * m_kv.blockSize() >= seq.past + steps);
    if (m_stepsGraph) {
        (void)runGraph(step, &sampling, steps);
        return DeviceSampler::copyToHost(m_stepTokens, graphInput(0, 1, at::kLong));
    }
    // The CPU: the same steps one after another, each fed the token the one before drew.
    LECTOR_ASSERT(m_decoder.device().is_cpu());
    at::Tensor tokens = at::empty({steps}, at::TensorOptions().dtype(at::kLong));
    RunnerStep one = step;
    std::vector<DeviceSampling> draw = sampling;
    for (int k = 0; k < steps; ++k) {
        std::int64_t t = -1;
        if (m_screenHead && draw[0].greedy()) {  // the screen's reference, as the screened graphs draw
            const Metadata meta = upload(one);
            t = m_sampler->sampleGreedy(forward(embedRows(meta, at::Tensor()), meta), m_decoder.lmHead(), *m_screenHead, draw[0]);
        } else {
            t = m_sampler->sample(run(one), draw).at(0);
        }
        tokens[k] = t;
        one.tokenIds = {t};
        one.deviceTokenIds = at::Tensor();
        for (std::int64_t& p : one.positions) ++p;
        ++one.seqs[0].past;
        ++draw[0].offset;
    }
    return DeviceSampler::copyToHost(tokens, tokens.narrow(0, steps - 1, 1));
}

at::Tensor ModelRunner::runGraph(const RunnerStep& step, const std::vector<DeviceSampling>* sampling, int steps)
{
    const auto batch = static_cast<int>(step.seqs.size());
    auto it = m_graphs.lower_bound(batch);
    LECTOR_ASSERT(it != m_graphs.end());
    const int b = it->first;
    const at::Device device = m_decoder.device();
    const int numAxes = m_decoder.rope().numAxes();
    const int bs = m_kv.blockSize();
    const std::int64_t maxBlocks = graphMaxBlocks();
    // The host image of graph b's static inputs (graphInputs()), one copy. Rows past the real batch are
    // the dummy decode: slot -1, one key in block 0, a greedy draw into the sampler's spare row.
    // Block-table entries past a row's context are never read, so they are left as they are.
    const GraphInputs g = graphInputs(b);
    at::Tensor h = at::empty({g.end}, hostOptions(at::kByte, device));
    std::uint8_t* base = h.data_ptr<std::uint8_t>();
    auto* ids = reinterpret_cast<std::int64_t*>(base + g.ids);
    auto* pos = reinterpret_cast<std::int64_t*>(base + g.positions);
    auto* slots = reinterpret_cast<std::int64_t*>(base + g.slots);
    auto* lens = reinterpret_cast<std::int32_t*>(base + g.contextLens);
    auto* table = reinterpret_cast<std::int32_t*>(base + g.blockTable);
    for (int i = 0; i < b; ++i) {
        const bool real = i < batch;
        const RunnerSequence* s = real ? &step.seqs[static_cast<size_t>(i)] : nullptr;
        ids[i] = real ? step.tokenIds[static_cast<size_t>(i)] : 0;
        for (int a = 0; a < numAxes; ++a) pos[a * b + i] = real ? step.positions[static_cast<size_t>(a * batch + i)] : 0;
        slots[i] = real ? static_cast<std::int64_t>(s->blocks[static_cast<size_t>(s->past / bs)]) * bs + s->past % bs : -1;
        lens[i] = real ? static_cast<std::int32_t>(s->past + 1) : 1;
        if (real) {
            // Through the last step's token: a graph of several steps finds its slots here.
            const std::int64_t last = s->past + steps - 1;
            LECTOR_ASSERT(static_cast<std::int64_t>(s->blocks.size()) * bs > last);
            std::copy(s->blocks.begin(), s->blocks.begin() + last / bs + 1, table + i * maxBlocks);
        } else {
            table[i * maxBlocks] = 0;
        }
    }
    if (m_sampler) m_sampler->pack(sampling ? *sampling : std::vector<DeviceSampling>{}, b, base + g.sampling);
    // Ids the previous replay drew into this very input stay where they are: the copy starts after them.
    const bool idsInPlace = step.deviceTokenIds.defined() && step.deviceTokenIds.data_ptr() == m_graphInputs.data_ptr();
    const std::int64_t from = idsInPlace ? g.positions : 0;
    m_graphInputs.narrow(0, from, g.end - from).copy_(h.narrow(0, from, g.end - from), /*non_blocking=*/true);
    if (step.deviceTokenIds.defined() && !idsInPlace) {
        LECTOR_ASSERT(step.deviceTokenIds.numel() == batch);
        graphInput(g.ids, batch, at::kLong).copy_(step.deviceTokenIds, /*non_blocking=*/true);
    }
    // Graph b; for one sequence, the graph of its context (the chain's past the head-parallel prefetch) and
    // of the launch's length, and for a greedy draw the screened twin where captured (RunnerOptions::greedyScreen).
    const bool longContext = b == 1 && m_longContextGraph && step.seqs[0].past + 1 > m_longContextFrom;
    const bool screened = b == 1 && sampling && m_screened.one && (*sampling)[0].greedy();
    auto pick = [&](DecodeGraph* one, DecodeGraph* several, DecodeGraph* longOne, DecodeGraph* longSeveral) {
        if (steps > 1) return longContext ? longSeveral : several;
        return longContext ? longOne : one;
    };
    const ScreenedGraphs& s = m_screened;
    DecodeGraph* graph = pick(it->second.get(), m_stepsGraph.get(), m_longContextGraph.get(), m_longContextStepsGraph.get());
    // (the chain's long-context graphs may have no screened twin: keepScreenedGraphsIfBetter)
    if (DecodeGraph* twin = screened ? pick(s.one.get(), s.steps.get(), s.longContext.get(), s.longContextSteps.get()) : nullptr)
        graph = twin;
    graph->graph.replay();
    return graph->logits.defined() ? graph->logits.narrow(0, 0, batch) : at::Tensor();
}

}  // namespace lector::runner
