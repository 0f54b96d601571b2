// GPU-machine benchmark of gpu/ kernels (issue 4, table 3 and the kernel rows of docs/perf.md):
// measured device-to-device copy bandwidth; paged decode attention at batch 64, context 4096,
// 16 query / 8 KV heads of 128 (float16 and bfloat16; block ids shuffled) as achieved bandwidth
// against that copy, and against libtorch's scaled-dot-product attention on a contiguous cache; then
// decode at the HunyuanOCR page context (1076), decode at batch 16 to 128 under a graph's 8192-token
// bound by split (partition sizes, row partitions), prefill of 1076-token prompts, and the small
// kernels against naive libtorch; the vision tower's attention against SDPA. CUDA events around each
// call, warm-up first, median of 20. Usage: bench_paged_attention [--vision] [results.md] (--vision:
// only the vision table). Needs a CUDA build of libtorch (run by run_gpu.sh).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/ops.h"

namespace {

void cudaCheck(cudaError_t err, const char* what)
{
    TORCH_CHECK(err == cudaSuccess, what, ": ", cudaGetErrorString(err));
}

// Median milliseconds of fn over `reps` event-timed calls on the current stream, after warm-up.
double medianMs(const std::function<void()>& fn, int reps = 20, int warmup = 3)
{
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    for (int i = 0; i < warmup; ++i) fn();
    cudaCheck(cudaStreamSynchronize(stream), "warm-up");
    cudaEvent_t start, stop;
    cudaCheck(cudaEventCreate(&start), "event");
    cudaCheck(cudaEventCreate(&stop), "event");
    std::vector<double> times;
    for (int i = 0; i < reps; ++i) {
        cudaCheck(cudaEventRecord(start, stream), "record");
        fn();
        cudaCheck(cudaEventRecord(stop, stream), "record");
        cudaCheck(cudaEventSynchronize(stop), "sync");
        float ms = 0.0f;
        cudaCheck(cudaEventElapsedTime(&ms, start, stop), "elapsed");
        times.push_back(ms);
    }
    cudaCheck(cudaGetLastError(), "kernel");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

struct Report {
    std::ostringstream md;
    void line(const std::string& s)
    {
        std::printf("%s\n", s.c_str());
        std::fflush(stdout);
        md << s << "\n";
    }
};

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0, double e = 0)
{
    char buf[256];
    std::snprintf(buf, sizeof buf, f, a, b, c, d, e);
    return buf;
}

double copyBandwidth(Report& r)
{
    const int64_t bytes = int64_t(2) << 30;  // 2 GiB each way, far past the 60 MB L2
    const at::Tensor src = at::randn({bytes / 2}, at::TensorOptions().dtype(at::kHalf).device(at::kCUDA));
    const at::Tensor dst = at::empty_like(src);
    const double ms = medianMs([&] { dst.copy_(src); });
    const double bw = 2.0 * bytes / (ms * 1e-3);
    r.line(fmt("| device-to-device copy, 2 GiB | %.3f ms | %.0f GB/s (read + write) |", ms, bw / 1e9));
    return bw;
}

// Paged cache of numSeqs x context tokens with a shuffled block table, plus a contiguous copy for SDPA.
struct PagedCase {
    at::Tensor keyCache, valueCache, blockTable, contextLens, query;
    int numSeqs, context, numQHeads = 16, numKvHeads = 8, headDim = 128;

    PagedCase(int seqs, int ctx, at::ScalarType type) : numSeqs(seqs), context(ctx)
    {
        const auto opts = at::TensorOptions().dtype(type).device(at::kCUDA);
        const int blocksPerSeq = static_cast<int>(lector::gpu::ceilDiv(ctx, lector::gpu::kKvBlockSize));
        const int64_t numBlocks = int64_t(seqs) * blocksPerSeq;
        keyCache = at::randn({numBlocks, lector::gpu::kKvBlockSize, numKvHeads, headDim}, opts);
        valueCache = at::randn({numBlocks, lector::gpu::kKvBlockSize, numKvHeads, headDim}, opts);
        blockTable = at::randperm(numBlocks, opts.dtype(at::kLong)).to(at::kInt).view({seqs, blocksPerSeq});
        contextLens = at::full({seqs}, ctx, opts.dtype(at::kInt));
        query = at::randn({seqs, numQHeads, headDim}, opts);
    }
    // [numSeqs, numKvHeads, context, headDim]
    at::Tensor contiguous(const at::Tensor& cache) const
    {
        return cache.index_select(0, blockTable.view({-1}).to(at::kLong))
            .view({numSeqs, -1, numKvHeads, headDim})
            .slice(1, 0, context)
            .permute({0, 2, 1, 3})
            .contiguous();
    }
    double kvBytes() const { return 2.0 * numSeqs * context * numKvHeads * headDim * keyCache.element_size(); }
};

at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale, bool causal, bool gqa)
{
#if TORCH_VERSION_MAJOR >= 2
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal, scale, gqa);
#else
    (void)q, (void)k, (void)v, (void)scale, (void)causal, (void)gqa;
    TORCH_CHECK(false, "scaled_dot_product_attention needs libtorch 2");
#endif
}

void decodeTable(Report& r, double copyBw)
{
    r.line("");
    r.line("### Paged decode attention, batch 64, context 4096, 16 q / 8 KV heads of 128 (block ids shuffled)");
    r.line("");
    r.line("| dtype | version | ms | GB/s of K+V | of copy bw | vs SDPA (GQA) | max abs diff vs SDPA |");
    r.line("|---|---|---|---|---|---|---|");
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        const PagedCase c(64, 4096, type);
        const double scale = 1.0 / std::sqrt(128.0);
        const at::Tensor kC = c.contiguous(c.keyCache), vC = c.contiguous(c.valueCache);
        const at::Tensor q4 = c.query.view({64, 16, 1, 128});
        const at::Tensor ref = sdpa(q4, kC, vC, scale, false, true).view({64, 16, 128});
        const double sdpaMs = medianMs([&] { sdpa(q4, kC, vC, scale, false, true); });
        const char* name = type == at::kHalf ? "fp16" : "bf16";
        for (int64_t partition : {int64_t(-1), int64_t(256), int64_t(512), int64_t(1024), int64_t(4096)}) {
            const at::Tensor out = at::empty_like(c.query);
            auto run = [&] {
                lector::gpu::pagedDecodeAttention(out, c.query, c.keyCache, c.valueCache, c.blockTable, c.contextLens,
                                                  4096, scale, partition);
            };
            const double ms = medianMs(run);
            const double bw = c.kvBytes() / (ms * 1e-3);
            const double diff = (out.to(at::kFloat) - ref.to(at::kFloat)).abs().max().item<double>();
            const int64_t autoRows = lector::gpu::pagedDecodeAutoRowPartitions(64, 8, c.query.device());
            const std::string version =
                partition >= 0 ? "ours, partition " + std::to_string(partition)
                : autoRows > 0 ? "ours, auto split (row partitions: " + std::to_string(autoRows) + ")"
                               : "ours, auto split (" +
                                     std::to_string(lector::gpu::pagedAttentionPartitionSize(64, 8, 4096, c.query.device())) +
                                     ")";
            r.line(std::string("| ") + name + " | " + version + fmt(" | %.4f | %.0f | %.1f%% | %.2fx | %.2g |", ms,
                                                                      bw / 1e9, 100.0 * bw / copyBw, sdpaMs / ms, diff));
        }
        r.line(std::string("| ") + name +
               fmt(" | libtorch SDPA, contiguous cache, enable_gqa | %.4f | %.0f | %.1f%% | 1.00x | 0 |", sdpaMs,
                   c.kvBytes() / (sdpaMs * 1e-3) / 1e9, 100.0 * c.kvBytes() / (sdpaMs * 1e-3) / copyBw));
        {
            const at::Tensor kE = kC.repeat_interleave(2, 1), vE = vC.repeat_interleave(2, 1);
            const double ms = medianMs([&] { sdpa(q4, kE, vE, scale, false, false); });
            r.line(std::string("| ") + name +
                   fmt(" | libtorch SDPA, contiguous cache, heads expanded (2x bytes) | %.4f | %.0f | %.1f%% | %.2fx | |",
                       ms, 2 * c.kvBytes() / (ms * 1e-3) / 1e9, 200.0 * c.kvBytes() / (ms * 1e-3) / copyBw, sdpaMs / ms));
        }
        r.line(std::string("| ") + name + fmt(" | floor: K+V bytes / copy bandwidth | %.4f | | 100%% | | |",
                                             c.kvBytes() / copyBw * 1e3));
    }
}

void pageContextTable(Report& r)
{
    r.line("");
    r.line("### Attention at the page's context (1076 tokens), fp16, one layer");
    r.line("");
    r.line("| case | ours ms | libtorch SDPA ms (contiguous, GQA) | speedup |");
    r.line("|---|---|---|---|");
    const double scale = 1.0 / std::sqrt(128.0);
    for (int batch : {1, 32}) {
        const PagedCase c(batch, 1076, at::kHalf);
        const at::Tensor kC = c.contiguous(c.keyCache), vC = c.contiguous(c.valueCache);
        const at::Tensor out = at::empty_like(c.query);
        const double ours = medianMs([&] {
            lector::gpu::pagedDecodeAttention(out, c.query, c.keyCache, c.valueCache, c.blockTable, c.contextLens,
                                              1076, scale);
        });
        const at::Tensor q4 = c.query.view({batch, 16, 1, 128});
        const double ref = medianMs([&] { sdpa(q4, kC, vC, scale, false, true); });
        r.line(fmt("| decode, batch %.0f | %.4f | %.4f | %.2fx |", batch, ours, ref, ref / ours));
    }
    for (int batch : {1, 8}) {
        const PagedCase c(batch, 1076, at::kHalf);
        const auto opts = c.query.options();
        const at::Tensor q = at::randn({int64_t(batch) * 1076, 16, 128}, opts);
        const at::Tensor cu = at::arange(0, batch + 1, opts.dtype(at::kInt)) * 1076;
        const at::Tensor out = at::empty_like(q);
        const at::Tensor kC = c.contiguous(c.keyCache), vC = c.contiguous(c.valueCache);
        const at::Tensor q4 = q.view({batch, 1076, 16, 128}).transpose(1, 2);
        const double ref = medianMs([&] { sdpa(q4, kC, vC, scale, true, true); });
        for (auto impl : {lector::gpu::PrefillImpl::TensorCore, lector::gpu::PrefillImpl::Simt}) {
            const double ours = medianMs([&] {
                lector::gpu::pagedPrefillAttention(out, q, c.keyCache, c.valueCache, c.blockTable, cu, c.contextLens,
                                                   1076, 1076, scale, impl);
            });
            const at::Tensor want = sdpa(q4, kC, vC, scale, true, true).transpose(1, 2).reshape_as(q);
            const double diff = (out.to(at::kFloat) - want.to(at::kFloat)).abs().max().item<double>();
            r.line(fmt("| prefill 1076 new tokens x %.0f, ", batch) +
                   (impl == lector::gpu::PrefillImpl::TensorCore ? "tensor cores" : "SIMT") +
                   fmt(" (max abs diff %.2g) | %.4f | %.4f | %.2fx |", diff, ours, ref, ref / ours));
        }
    }
}

// Decode attention as the engine's graphs launch it: the grid sized for 8192 tokens of context (the
// graphs' bound), batches of 16 to 128 at the page's context and a longer one, one split-K partition
// size per column. Microseconds per call over 20 back-to-back calls (launch gaps amortised), and the
// share of copy bandwidth the K/V reads reach.
void graphBoundTable(Report& r, double copyBw)
{
    constexpr int kBound = 8192;
    const std::vector<int64_t> partitions{256, 512, 1024, 2048};
    r.line("");
    r.line("### Decode attention under a graph's 8192-token bound, fp16: us per call (of copy bandwidth)");
    r.line("");
    std::string head = "| batch | context |", rule = "|---|---|";
    for (int64_t p : partitions) head += " partition " + std::to_string(p) + " |", rule += "---|";
    head += " row partitions (the graphs' choice) |", rule += "---|";
    r.line(head);
    r.line(rule);
    const double scale = 1.0 / std::sqrt(128.0);
    for (int batch : {16, 32, 64, 128}) {
        for (int context : {1076, 1332}) {
            const PagedCase c(batch, context, at::kHalf);
            const at::Tensor table = at::cat(
                {c.blockTable, at::zeros({batch, kBound / lector::gpu::kKvBlockSize - c.blockTable.size(1)},
                                         c.blockTable.options())},
                1);
            const at::Tensor out = at::empty_like(c.query);
            std::string line = fmt("| %.0f | %.0f |", batch, context);
            auto time = [&](int64_t partition, int64_t rowParts) {
                const double ms = medianMs([&] {
                                      for (int i = 0; i < 20; ++i)
                                          lector::gpu::pagedDecodeAttention(out, c.query, c.keyCache, c.valueCache,
                                                                            table, c.contextLens, kBound, scale,
                                                                            partition, 0, rowParts);
                                  }) /
                                  20;
                line += fmt(" %.1f (%.0f%%) |", ms * 1e3, 100.0 * c.kvBytes() / (ms * 1e-3) / copyBw);
            };
            for (int64_t partition : partitions) time(partition, 0);
            const int64_t rowParts = lector::gpu::pagedDecodeRowPartitions(batch, 8, c.query.device());
            time(-1, rowParts);
            line.insert(line.size() - 2, fmt(", %.0f", rowParts));
            r.line(line);
        }
    }
}

void smallKernelsTable(Report& r)
{
    r.line("");
    r.line("### Small kernels, fp16, prefill of 1076 tokens (decoder sizes) and decode batch 64");
    r.line("");
    r.line("| op | ours ms | naive libtorch ms | speedup |");
    r.line("|---|---|---|---|");
    const auto opts = at::TensorOptions().dtype(at::kHalf).device(at::kCUDA);
    auto row = [&](const std::string& name, const std::function<void()>& ours, const std::function<void()>& naive) {
        const double a = medianMs(ours), b = medianMs(naive);
        r.line("| " + name + fmt(" | %.4f | %.4f | %.2fx |", a, b, b / a));
    };
    for (int tokens : {1076, 64}) {
        const std::string n = std::to_string(tokens);
        const at::Tensor x = at::randn({tokens, 1024}, opts), res = at::randn({tokens, 1024}, opts);
        const at::Tensor w = at::randn({1024}, opts), out = at::empty_like(x);
        row("fused add + RMSNorm [" + n + ", 1024]", [&] { lector::gpu::fusedAddRmsNorm(out, res, x, w, 1e-5); },
            [&] {
                const at::Tensor h = x + res;
                const at::Tensor hf = h.to(at::kFloat);
                (void)(w * (hf * at::rsqrt(hf.pow(2).mean(-1, true) + 1e-5)).to(at::kHalf));
            });
        const at::Tensor gu = at::randn({tokens, 2 * 3584}, opts), act = at::empty({tokens, 3584}, opts);
        row("SiLU and mul [" + n + ", 3584]", [&] { lector::gpu::siluAndMul(act, gu); },
            [&] { (void)(at::silu(gu.slice(1, 0, 3584)) * gu.slice(1, 3584)); });
        const at::Tensor qkv = at::randn({tokens, 32 * 128}, opts);
        const at::Tensor q = qkv.slice(1, 0, 2048).view({tokens, 16, 128});
        const at::Tensor k = qkv.slice(1, 2048, 3072).view({tokens, 8, 128});
        const at::Tensor pos = at::randint(0, 4096, {4, tokens}, opts.dtype(at::kLong));
        const at::Tensor cache = at::randn({4096, 128}, opts.dtype(at::kFloat));
        const at::Tensor qw = at::randn({128}, opts), kw = at::randn({128}, opts);
        row("QK-norm + XD-RoPE, " + n + " tokens",
            [&] { lector::gpu::qkNormRope(q, k, pos, cache, qw, kw, {16, 16, 16, 16}, 1e-5); },
            [&] {
                for (const at::Tensor* t : {&q, &k}) {
                    std::vector<at::Tensor> c, s;
                    for (int a = 0; a < 4; ++a) {
                        const at::Tensor rows = cache.index_select(0, pos[a]);
                        c.push_back(rows.slice(1, 16 * a, 16 * a + 16));
                        s.push_back(rows.slice(1, 64 + 16 * a, 64 + 16 * a + 16));
                    }
                    const at::Tensor cc = at::cat(c, 1).unsqueeze(1), ss = at::cat(s, 1).unsqueeze(1);
                    const at::Tensor xf = t->to(at::kFloat);
                    const at::Tensor x1 = xf.slice(2, 0, 64), x2 = xf.slice(2, 64);
                    const at::Tensor y = at::cat({x1 * cc - x2 * ss, x2 * cc + x1 * ss}, 2);
                    (void)(qw * (y * at::rsqrt(y.pow(2).mean(-1, true) + 1e-5)).to(at::kHalf));
                }
            });
        const at::Tensor slots = at::randperm(tokens * 4, opts.dtype(at::kLong)).slice(0, 0, tokens);
        const at::Tensor kc = at::zeros({tokens * 4 / 16 + 1, 16, 8, 128}, opts), vc = at::zeros_like(kc);
        const at::Tensor kv = qkv.slice(1, 2048, 3072).view({tokens, 8, 128});
        const at::Tensor vv = qkv.slice(1, 3072, 4096).view({tokens, 8, 128});
        row("KV write, " + n + " tokens", [&] { lector::gpu::writeKvCache(kc, vc, kv, vv, slots); },
            [&] {
                kc.view({-1, 8, 128}).index_copy_(0, slots, kv);
                vc.view({-1, 8, 128}).index_copy_(0, slots, vv);
            });
    }
    // Sampling at 1, 64 and 256 sequences (the vocabulary is split over 30, 5 and 2 CTAs per sequence).
    for (int rows : {1, 64, 256}) {
        const at::Tensor logits = at::randn({rows, 120818}, opts.dtype(at::kFloat)) * 4;
        const at::Tensor presence = (at::rand({rows, 120818}, opts.dtype(at::kFloat)) < 0.01).to(at::kByte);
        const at::Tensor tokens = at::empty({rows}, opts.dtype(at::kLong));
        const at::Tensor pen = at::full({rows}, 1.03f, opts.dtype(at::kFloat));
        const at::Tensor seeds = at::arange(rows, opts.dtype(at::kLong)), offsets = at::zeros({rows}, opts.dtype(at::kLong));
        const at::Tensor scratch = at::zeros({lector::gpu::sampleScratchWords(rows, 120818)}, opts.dtype(at::kLong));
        for (int k : {1, 50}) {
            if (k == 50 && rows != 64) continue;
            const at::Tensor temp = at::full({rows}, k == 1 ? 0.0f : 0.8f, opts.dtype(at::kFloat));
            const at::Tensor topK = at::full({rows}, k, opts.dtype(at::kInt));
            const std::string shape = std::to_string(rows) + " x 120818";
            row(k == 1 ? "greedy + penalty, " + shape + " fp32 logits" : "top-50 sampling + penalty, " + shape,
                [&] {
                    lector::gpu::sampleTokens(tokens, logits, presence, temp, topK, pen, seeds, offsets, false,
                                              at::Tensor(), scratch);
                },
                [&] {
                    const at::Tensor l = at::where(presence.to(at::kBool),
                                                   at::where(logits > 0, logits / 1.03, logits * 1.03), logits);
                    if (k == 1) {
                        (void)l.argmax(1);
                    } else {
                        const auto top = l.topk(50, 1);
                        const at::Tensor p = at::softmax(std::get<0>(top) / 0.8, 1);
                        (void)std::get<1>(top).gather(1, at::multinomial(p, 1));
                    }
                });
        }
    }
}

}  // namespace

// The vision tower's attention (gpu::visionAttention) against libtorch's SDPA, as the tower ran it before
// (one call per page on the qkv projection's strided views, then a copy into o_proj's layout) and as one
// batched call over contiguous [pages, heads, patches, 72] tensors (attention alone). HunyuanOCR's tower:
// 16 heads of 72, a 1024x1024 page's 4096 patches; ms are for one page's 27 layers. Each row also checks
// our output against SDPA's (largest difference relative to SDPA's largest value).
void visionAttentionTable(Report& r)
{
    constexpr int kHeads = 16, kDim = 72, kPatches = 4096, kLayers = 27;
    r.line("");
    r.line("### vision-tower attention, 16 heads of 72, 4096 patches a page (ms for a page's 27 layers)");
    r.line("");
    r.line("| pages | dtype | ours, one launch | SDPA per page + copy (the tower's path until call 111) | "
           "SDPA batched, attention alone | ours vs per page | max diff vs SDPA |");
    r.line("|---|---|---|---|---|---|---|");
    const double flopsPerPage = 4.0 * kHeads * double(kPatches) * kPatches * kDim * kLayers;
    for (const auto& [pages, type] : std::vector<std::pair<int, at::ScalarType>>{
             {1, at::kHalf}, {8, at::kHalf}, {1, at::kBFloat16}, {8, at::kBFloat16}}) {
        const auto opts = at::TensorOptions().dtype(type).device(at::kCUDA);
        const int64_t rows = int64_t(pages) * kPatches, hd = kHeads * kDim;
        const at::Tensor qkv = at::randn({rows, 3 * hd}, opts) * 1.5;
        std::vector<int32_t> cu{0};
        for (int i = 0; i < pages; ++i) cu.push_back(cu.back() + kPatches);
        const at::Tensor cuSeqlens = at::tensor(cu, at::kInt).cuda();
        const double scale = 1.0 / std::sqrt(double(kDim));
        at::Tensor ours = at::empty({rows, hd}, opts), sdpa = at::empty({rows, hd}, opts);
        auto runOurs = [&] { lector::gpu::visionAttention(ours, qkv, cuSeqlens, kPatches, kHeads, scale); };
        auto runPerPage = [&] {
            for (int i = 0; i < pages; ++i) {
                const at::Tensor t = qkv.narrow(0, int64_t(i) * kPatches, kPatches).view({kPatches, 3, kHeads, kDim}).permute({1, 2, 0, 3});
                const at::Tensor o = at::scaled_dot_product_attention(t[0].unsqueeze(0), t[1].unsqueeze(0), t[2].unsqueeze(0));
                sdpa.narrow(0, int64_t(i) * kPatches, kPatches).copy_(o.squeeze(0).permute({1, 0, 2}).reshape({kPatches, hd}));
            }
        };
        const at::Tensor split = qkv.view({pages, kPatches, 3, kHeads, kDim}).permute({2, 0, 3, 1, 4}).contiguous();
        auto runBatched = [&] { (void)at::scaled_dot_product_attention(split[0], split[1], split[2]); };
        const double oursMs = medianMs(runOurs, 10) * kLayers / pages;
        const double perPageMs = medianMs(runPerPage, 10) * kLayers / pages;
        const double batchedMs = medianMs(runBatched, 10) * kLayers / pages;
        runOurs();
        runPerPage();
        const auto relDiff = [&](const at::Tensor& t) {
            return (t.to(at::kFloat) - sdpa.to(at::kFloat)).abs().max().item<double>() /
                   sdpa.to(at::kFloat).abs().max().item<double>();
        };
        const auto tflops = [&](double ms) { return flopsPerPage / (ms * 1e-3) / 1e12; };
        r.line(fmt("| %.0f | ", pages) + (type == at::kHalf ? "float16" : "bfloat16") +
               fmt(" | %.2f (%.0f TFLOP/s) | %.2f (%.0f) | ", oursMs, tflops(oursMs), perPageMs, tflops(perPageMs)) +
               fmt("%.2f (%.0f) | %.2fx | %.2g |", batchedMs, tflops(batchedMs), perPageMs / oursMs, relDiff(ours)));
    }
}

int main(int argc, char** argv)
{
    if (!at::hasCUDA()) {
        std::fprintf(stderr, "bench_paged_attention: no CUDA device\n");
        return 1;
    }
    cudaDeviceProp prop{};
    cudaCheck(cudaGetDeviceProperties(&prop, 0), "device properties");
    Report r;
    r.line(std::string("## gpu/ kernels on ") + prop.name + fmt(" (%.0f SMs, %.0f MB L2), libtorch ",
                                                                prop.multiProcessorCount, prop.l2CacheSize / 1e6) +
           TORCH_VERSION);
    r.line("");
    // --vision: the vision-tower attention table only.
    const bool visionOnly = argc > 1 && std::string(argv[1]) == "--vision";
    const char* outPath = argc > (visionOnly ? 2 : 1) ? argv[visionOnly ? 2 : 1] : nullptr;
    if (!visionOnly) {
        r.line("| measure | time | bandwidth |");
        r.line("|---|---|---|");
        const double copyBw = copyBandwidth(r);
        decodeTable(r, copyBw);
        pageContextTable(r);
        graphBoundTable(r, copyBw);
        smallKernelsTable(r);
    }
    if (lector::gpu::visionAttentionAvailable(at::empty({1}, at::TensorOptions().dtype(at::kHalf).device(at::kCUDA)), 72))
        visionAttentionTable(r);
    else
        r.line("(no vision-attention table: the kernel needs a compute capability 9.0 device)");
    if (outPath) std::ofstream(outPath) << r.md.str();
    return 0;
}
