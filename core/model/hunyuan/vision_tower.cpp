#include "core/model/hunyuan/vision_tower.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/common/env.h"
#include "core/common/upload.h"
#include "gpu/ops.h"

// libtorch 2.x has a fused attention (flash / memory-efficient kernels on CUDA); 1.13 does not.
#if __has_include(<ATen/ops/scaled_dot_product_attention.h>)
#include <ATen/ops/scaled_dot_product_attention.h>
#define LECTOR_HAVE_SDPA 1
#endif

namespace lector::model::hunyuan {
namespace {

// Source indices and weights of PyTorch's bilinear upsampling (align_corners=False) along one axis
// for a given scale factor. Computed in float, like PyTorch's CPU kernel for float32 input.
struct AxisSampling {
    std::vector<int64_t> i0, i1;
    std::vector<float> l0, l1;
};

// ratio = input coordinate step per output pixel: 1 / scale_factor when a scale is given (1.0), else
// inSize / outSize (1.5's size=), each rounded to float as PyTorch does.
AxisSampling axisSampling(int64_t inSize, int64_t outSize, float ratio)
{
    AxisSampling s;
    for (int64_t d = 0; d < outSize; ++d) {
        float src = ratio * (static_cast<float>(d) + 0.5f) - 0.5f;
        if (src < 0.0f) src = 0.0f;
        const auto lo = std::min<int64_t>(static_cast<int64_t>(src), inSize - 1);
        const int64_t hi = lo < inSize - 1 ? lo + 1 : lo;
        const float l1 = std::min(std::max(src - static_cast<float>(lo), 0.0f), 1.0f);
        s.i0.push_back(lo);
        s.i1.push_back(hi);
        s.l0.push_back(1.0f - l1);
        s.l1.push_back(l1);
    }
    return s;
}

}  // namespace

at::Tensor interpolatePositionTable(const at::Tensor& table, int gridH, int gridW, bool plusTenth)
{
    if (table.dim() != 3 || table.size(0) != table.size(1) || gridH <= 0 || gridW <= 0)
        throw std::invalid_argument("interpolatePositionTable: need a square [G, G, C] table and a positive grid");
    const int64_t g = table.size(0), c = table.size(2);
    // HunyuanOCR 1.0 passes scale_factor = (grid + 0.1) / G; the output size floor(G * scale) is grid.
    const double sh = (gridH + 0.1) / static_cast<double>(g), sw = (gridW + 0.1) / static_cast<double>(g);
    if (static_cast<int64_t>(std::floor(g * sh)) != gridH || static_cast<int64_t>(std::floor(g * sw)) != gridW)
        throw std::logic_error("interpolatePositionTable: scale factor does not reproduce the grid");
    const auto ratio = [&](int grid, double scale) {
        return plusTenth ? static_cast<float>(1.0 / scale) : static_cast<float>(g) / static_cast<float>(grid);
    };
    const auto ay = axisSampling(g, gridH, ratio(gridH, sh)), ax = axisSampling(g, gridW, ratio(gridW, sw));
    const auto device = table.device();
    // (uploaded without the host waiting for the tower's work queued before, when it has a stream of its own)
    auto idx = [&](const std::vector<int64_t>& v) { return uploadAsync(at::tensor(v, at::kLong), device); };
    auto wts = [&](const std::vector<float>& v, std::vector<int64_t> shape) {
        return uploadAsync(at::tensor(v, at::kFloat), device).view(shape).to(table.scalar_type());
    };
    // Rows first ([gh, G, C]), then columns ([gh, gw, C]); bilinear is separable, so this equals the
    // 2-D lerp up to float rounding.
    const auto rows = table.index_select(0, idx(ay.i0)) * wts(ay.l0, {gridH, 1, 1}) +
                      table.index_select(0, idx(ay.i1)) * wts(ay.l1, {gridH, 1, 1});
    const auto out = rows.index_select(1, idx(ax.i0)) * wts(ax.l0, {1, gridW, 1}) +
                     rows.index_select(1, idx(ax.i1)) * wts(ax.l1, {1, gridW, 1});
    return out.reshape({int64_t{gridH} * gridW, c});
}

Result<VisionEncoder> VisionEncoder::load(const WeightStore& weights, const HunyuanConfig& config,
                                          at::ScalarType dtype, at::Device device)
{
    const VisionConfig& vc = config.vision;
    VisionEncoder enc;
    enc.m_ownAttention = envValue("LECTOR_VISION_ATTENTION") != "sdpa";
    enc.m_config = vc;
    enc.m_normalisation = config.preprocess;
    enc.m_dtype = dtype;
    enc.m_device = device;
    const int64_t c = vc.hiddenSize, p = vc.patchSize, ch = vc.numChannels, inter = vc.intermediateSize;
    const int64_t g = vc.posGridSize(), extra = vc.catExtraToken;

    auto pw = weights.load("vit.embeddings.patch_embedding.weight", {c, ch, p, p}, dtype, device);
    if (!pw) return pw.error();
    enc.m_patchW = pw->reshape({c, ch * p * p}).contiguous();  // conv over (c, y, x) = linear
    if (vc.addPatchEmbedBias) {
        auto pb = weights.load("vit.embeddings.patch_embedding.bias", {c}, dtype, device);
        if (!pb) return pb.error();
        enc.m_patchB = *pb;
    } else {
        enc.m_patchB = at::zeros({c}, at::TensorOptions().dtype(dtype).device(device));
    }
    auto pos = weights.load("vit.embeddings.position_embedding.weight", {g * g + extra, c}, at::kFloat, device);
    if (!pos) return pos.error();
    enc.m_posTable = pos->slice(0, extra).reshape({g, g, c}).contiguous();  // row 1 + r*G + col

    for (int i = 0; i < vc.numLayers; ++i) {
        const std::string pre = "vit.layers." + std::to_string(i) + ".";
        Block b;
        at::Tensor q, k, v, qb, kb, vb;
        struct Want {
            at::Tensor* dst;
            std::string name;
            std::vector<int64_t> shape;
        };
        const Want wants[] = {
            {&b.ln1W, pre + "input_layernorm.weight", {c}},
            {&b.ln1B, pre + "input_layernorm.bias", {c}},
            {&b.ln2W, pre + "post_attention_layernorm.weight", {c}},
            {&b.ln2B, pre + "post_attention_layernorm.bias", {c}},
            {&q, pre + "self_attn.q_proj.weight", {c, c}},
            {&k, pre + "self_attn.k_proj.weight", {c, c}},
            {&v, pre + "self_attn.v_proj.weight", {c, c}},
            {&qb, pre + "self_attn.q_proj.bias", {c}},
            {&kb, pre + "self_attn.k_proj.bias", {c}},
            {&vb, pre + "self_attn.v_proj.bias", {c}},
            {&b.oW, pre + "self_attn.o_proj.weight", {c, c}},
            {&b.oB, pre + "self_attn.o_proj.bias", {c}},
            {&b.fc1W, pre + "mlp.dense_h_to_4h.weight", {inter, c}},
            {&b.fc1B, pre + "mlp.dense_h_to_4h.bias", {inter}},
            {&b.fc2W, pre + "mlp.dense_4h_to_h.weight", {c, inter}},
            {&b.fc2B, pre + "mlp.dense_4h_to_h.bias", {c}},
        };
        for (const auto& w : wants) {
            auto t = weights.load(w.name, w.shape, dtype, device);
            if (!t) return t.error();
            *w.dst = std::move(*t);
        }
        // One matmul for q, k and v.
        b.qkvW = at::cat({q, k, v}, 0).contiguous();
        b.qkvB = at::cat({qb, kb, vb}, 0).contiguous();
        enc.m_blocks.push_back(std::move(b));
    }
    auto merger = PerceiveMerger::load(weights, vc, dtype, device);
    if (!merger) return merger.error();
    enc.m_merger = std::move(*merger);
    return enc;
}

at::Tensor VisionEncoder::embed(const at::Tensor& pixelValues, int gridH, int gridW) const
{
    const int64_t p = m_config.patchSize;
    if (pixelValues.dim() != 2 || pixelValues.size(0) != int64_t{gridH} * gridW ||
        pixelValues.size(1) != m_config.numChannels * p * p)
        throw std::invalid_argument("VisionEncoder: pixel values do not match grid " + std::to_string(gridH) + "x" +
                                    std::to_string(gridW));
    // Values prepared in the model dtype (pixelOutput() without bytes) are staged by a plain copy, which
    // costs about what the conversion from float32 did (~0.9 ms a page on one core: the memory bound is the
    // bytes written).
    const at::Tensor pv = uploadAsync(pixelValues, m_device, m_dtype);
    const auto e = at::linear(pv, m_patchW, m_patchB);  // [N, hidden]
    return e + positionEmbedding(gridH, gridW);
}

PixelOutput VisionEncoder::pixelOutput() const
{
    if (!m_device.is_cuda()) return {};
    return {m_dtype, /*bytes=*/gpu::kernelsBuiltIn()};
}

at::Tensor VisionEncoder::patchPixels(const PreprocessedImage& image) const
{
    if (image.pixelValues.defined()) return image.pixelValues;
    if (!image.rgb.defined())
        throw std::invalid_argument("VisionEncoder: the image has neither pixel values nor bytes");
    const int p = m_config.patchSize;
    if (image.rgb.dim() != 3 || image.rgb.size(0) != int64_t{image.gridH} * p || image.rgb.size(1) != int64_t{image.gridW} * p)
        throw std::invalid_argument("VisionEncoder: image bytes do not match grid " + std::to_string(image.gridH) + "x" +
                                    std::to_string(image.gridW));
    // The bytes staged and copied to the device, then normalised and cut into patches where the tower runs:
    // the CUDA kernel, or its CPU reference on the CPU.
    const at::Tensor rgb = uploadAsync(image.rgb, m_device).contiguous();
    const at::Tensor out = at::empty({image.numPatches(), 3 * int64_t{p} * p}, rgb.options().dtype(m_dtype));
    gpu::patchify(out, rgb, p, m_normalisation.mean, m_normalisation.std);
    return out;
}

at::Tensor VisionEncoder::positionEmbedding(int gridH, int gridW) const
{
    // Pages of a batch mostly share a grid (a 1024x1024 page is always 64x64), and the interpolation
    // is a dozen small operations with host-to-device copies of its indices and weights: keep the last
    // few grids' results.
    constexpr size_t kCachedGrids = 4;
    const std::lock_guard<std::mutex> lock(m_positions->mutex);
    auto& grids = m_positions->grids;
    for (const auto& [grid, table] : grids)
        if (grid == std::make_pair(gridH, gridW)) return table;
    // Interpolated in float32, then cast to the model dtype (spec §3.2).
    at::Tensor table = interpolatePositionTable(m_posTable, gridH, gridW, m_config.posEmbedPlusTenth).to(m_dtype);
    if (grids.size() == kCachedGrids) grids.erase(grids.begin());
    grids.emplace_back(std::make_pair(gridH, gridW), table);
    return table;
}

at::Tensor VisionEncoder::attention(const at::Tensor& h, const Block& b, const ImageRows& rows) const
{
    const int64_t c = m_config.hiddenSize;
    const at::Tensor qkv = at::linear(h, b.qkvW, b.qkvB);  // [sum N, 3C]: one matmul for every image
    if (rows.cuSeqlens.defined()) {
        // Every image in one launch, written straight in the layout o_proj takes.
        at::Tensor out = at::empty({h.size(0), c}, h.options());
        gpu::visionAttention(out, qkv, rows.cuSeqlens, rows.maxLength, m_config.numHeads,
                             1.0 / std::sqrt(static_cast<double>(m_config.headDim())));
        return at::linear(out, b.oW, b.oB);
    }
    // Full attention inside each image only: the images' rows sit back to back. Runs of images of one
    // size go through together.
    std::vector<std::pair<int64_t, int64_t>> runs;  // (images, rows each)
    for (int64_t n : rows.lengths) {
        if (!runs.empty() && runs.back().second == n) ++runs.back().first;
        else runs.emplace_back(1, n);
    }
    if (runs.size() == 1) return at::linear(attendEqualImages(qkv, runs[0].first, runs[0].second), b.oW, b.oB);
    at::Tensor out = at::empty({h.size(0), c}, h.options());
    int64_t offset = 0;
    for (const auto& [count, n] : runs) {
        out.narrow(0, offset, count * n).copy_(attendEqualImages(qkv.narrow(0, offset, count * n), count, n));
        offset += count * n;
    }
    return at::linear(out, b.oW, b.oB);
}

at::Tensor VisionEncoder::attendEqualImages(const at::Tensor& qkvRows, int64_t count, int64_t n) const
{
    const int64_t c = m_config.hiddenSize;
#if defined(LECTOR_HAVE_SDPA)
    // On GPUs the fused kernel never materialises the [heads, N, N] scores. The CPU keeps the explicit
    // path of attendOneImage(), so the float32 reference is the same code on every libtorch version.
    if (!qkvRows.is_cpu()) {
        // [count * n, 3C] -> [3, count, heads, n, d]; one call for the run instead of one per image plus a
        // copy each (docs/perf.md, call 107: 5.75 against 6.29 ms a page at 8 pages).
        const auto qkv = qkvRows.view({count, n, 3, m_config.numHeads, m_config.headDim()}).permute({2, 0, 3, 1, 4});
        const auto o = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2]);  // [count, heads, n, d]
        return o.permute({0, 2, 1, 3}).reshape({count * n, c});
    }
#endif
    if (count == 1) return attendOneImage(qkvRows);
    at::Tensor out = at::empty({count * n, c}, qkvRows.options());
    for (int64_t i = 0; i < count; ++i) out.narrow(0, i * n, n).copy_(attendOneImage(qkvRows.narrow(0, i * n, n)));
    return out;
}

at::Tensor VisionEncoder::attendOneImage(const at::Tensor& qkvRows) const
{
    const int64_t n = qkvRows.size(0), c = m_config.hiddenSize, heads = m_config.numHeads, d = m_config.headDim();
    // [N, 3C] -> [3, heads, N, d]
    const auto qkv = qkvRows.view({n, 3, heads, d}).permute({1, 2, 0, 3});
    const auto q = (qkv[0] * (1.0 / std::sqrt(static_cast<double>(d)))).contiguous();  // [heads, N, d]
    const auto kT = qkv[1].contiguous().transpose(1, 2);  // [heads, d, N], a transposed view BLAS takes as is
    const auto v = qkv[2].contiguous();                   // [heads, N, d]
    // Full attention inside the image, queries in chunks so the [heads, rows, N] scores stay bounded
    // (16K patches would need 16 GB at once).
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(n, m_scoreBudget / std::max<int64_t>(1, heads * n)));
    auto out = at::empty({heads, n, d}, qkvRows.options());
    for (int64_t s = 0; s < n; s += chunk) {
        const int64_t e = std::min(n, s + chunk);
        auto scores = at::matmul(q.slice(1, s, e), kT);                 // [heads, rows, N]
        auto probs = at::softmax(scores, -1, at::kFloat).to(qkvRows.scalar_type());
        out.slice(1, s, e).copy_(at::matmul(probs, v));                  // [heads, rows, d]
    }
    return out.permute({1, 0, 2}).reshape({n, c});
}

at::Tensor VisionEncoder::runBlocks(at::Tensor x) const
{
    const std::vector<int64_t> lengths{x.size(0)};
    return runBlocks(std::move(x), lengths);
}

at::Tensor VisionEncoder::runBlocks(at::Tensor x, const std::vector<int64_t>& lengths) const
{
    const std::vector<int64_t> norm{m_config.hiddenSize};
    const double eps = m_config.layerNormEps;
    ImageRows rows{lengths, {}, 0};
    if (m_ownAttention && gpu::visionAttentionAvailable(x, m_config.headDim())) {
        std::vector<int32_t> cu{0};
        for (int64_t n : lengths) {
            if (cu.back() + n > std::numeric_limits<int32_t>::max())
                throw std::invalid_argument("VisionEncoder: more patches in one call than int32 offsets hold");
            cu.push_back(static_cast<int32_t>(cu.back() + n));
            rows.maxLength = std::max(rows.maxLength, n);
        }
        rows.cuSeqlens = uploadAsync(at::tensor(cu, at::kInt), x.device());
    }
    for (const Block& b : m_blocks) {
        x = x + attention(at::layer_norm(x, norm, b.ln1W, b.ln1B, eps), b, rows);
        auto h = at::gelu(at::linear(at::layer_norm(x, norm, b.ln2W, b.ln2B, eps), b.fc1W, b.fc1B));  // exact erf
        x = x + at::linear(h, b.fc2W, b.fc2B);
    }
    return x;
}

at::Tensor VisionEncoder::encode(const PreprocessedImage& image) const { return encodeBatch({&image})[0]; }

std::vector<at::Tensor> VisionEncoder::encodeBatch(const std::vector<const PreprocessedImage*>& images) const
{
    const int m = m_config.spatialMergeSize;
    std::vector<at::Tensor> embeds;
    std::vector<int64_t> lengths;
    for (const PreprocessedImage* image : images) {
        if (image->gridH <= 0 || image->gridW <= 0 || image->gridH % m != 0 || image->gridW % m != 0)
            throw std::invalid_argument("VisionEncoder: grid " + std::to_string(image->gridH) + "x" +
                                        std::to_string(image->gridW) + " is not a positive multiple of the merge size");
        embeds.push_back(embed(patchPixels(*image), image->gridH, image->gridW));
        lengths.push_back(image->numPatches());
    }
    if (images.empty()) return {};
    // Token-wise work (norms, matmuls, GELU) runs once over every image's patches; attention per image.
    const at::Tensor x = runBlocks(embeds.size() == 1 ? embeds[0] : at::cat(embeds), lengths);
    std::vector<at::Tensor> out;
    int64_t offset = 0;
    for (size_t i = 0; i < images.size(); ++i) {
        out.push_back(merge(x.narrow(0, offset, lengths[i]), images[i]->gridH, images[i]->gridW));
        offset += lengths[i];
    }
    return out;
}

}  // namespace lector::model::hunyuan
