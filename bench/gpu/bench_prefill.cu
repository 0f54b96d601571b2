// bench_prefill: HunyuanOCR's prefill of one page as the model runner's forward() runs it (core/runner/
// model_runner.cpp) for a batch of prompt tokens: per layer the add + RMSNorm, the qkv projection
// (cuBLAS GemmEx, as at::linear), QK-norm/XD-RoPE with the K/V write, the paged prefill attention, the
// o projection, the add + RMSNorm, gate/up, SiLU-mul and down. Random float16 weights of the full-size
// decoder (24 layers) and a 1076-token prompt (a 1024x1024 page) by default.
//
// 1. The tensor-core prefill attention, as shipped and as it was up to device call 98
//    (prefill_attention_previous.cuh, the same-run baseline), against the CPU reference (gpu/ref) on one fresh prompt and on a mixed batch (a chunk over cached
//    tokens, a decode token, a short prompt, shuffled block ids, a block id outside the pool); exit code 1
//    on a mismatch.
// 2. Both alone (24 launches in a graph, each on its own layer's cache) for 1, 2, 4 and 8 prompts, the
//    mixed batch and steps of the engine under load (prompts beside decodes), with their causal FLOPs
//    per second; the shipped kernel each way its two warp groups can share a CTA and as it chooses; and
//    for steps that start with decodes, the runner's split (decode attention for those, then the
//    previous kernel or the shipped one for the rest), checked against the reference where the batch is.
// 3. Each op of the layer alone (24 launches of it in a graph, each on its own layer's weights) and the
//    whole 24-layer chain in one graph: where a page's prefill goes.
// Without libtorch, so it builds with nvcc alone and the binary can travel to the GPU machine:
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_prefill.cu \
//        gpu/kernels/paged_prefill_attention.cu gpu/kernels/paged_decode_attention.cu gpu/kernels/qk_norm_rope.cu \
//        gpu/kernels/rms_norm.cu gpu/kernels/silu_and_mul.cu gpu/ref/paged_prefill_attention_ref.cpp -lcublas \
//        -o build-gpu/bench_prefill
// (or the CMake target of the same name in CUDA builds).
//   bench_prefill [--tokens N] [--prompts N]
//   bench_prefill --profile   three plain launches of the one-prompt attention, for a profiler (ncu)
//   bench_prefill --no-check  without the CPU reference (about 8 s a prompt)
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "bench/gpu/decoder_bench.h"
#include "bench/gpu/prefill_attention_previous.cuh"
#include "gpu/kernels/paged_decode_attention.cuh"
#include "gpu/kernels/paged_prefill_attention.cuh"
#include "gpu/kernels/qk_norm_rope.cuh"
#include "gpu/kernels/rms_norm.cuh"
#include "gpu/kernels/silu_and_mul.cuh"
#include "gpu/ref/element_ref.h"
#include "gpu/ref/paged_prefill_attention_ref.h"

namespace gpu = lector::gpu;
namespace bench = lector::bench;

namespace {

using bench::check;
using bench::halves;
using bench::randomHalfBits;
using bench::upload;
using Buffer = bench::DeviceBuffer;

using namespace bench::decoder;  // the decoder's shapes, Layer and its kernels' parameters

// --- 1 and 2: the attention ---

// Sequences of one attention batch: tokens already cached and new tokens of each.
struct Batch {
    std::string name;
    std::vector<int> cached, fresh;
    bool foreignBlock = false;  // one block id of the first sequence outside the pool (read as masked)
    bool reference = false;     // checked against the CPU reference (about 8 s a 1076-token prompt)
};

// A batch's paged inputs on the host (float16 bits) and on the device, one cache per layer.
struct AttentionSetup {
    Batch batch;
    int numTokens = 0, numBlocks = 0, maxQuery = 0, maxContext = 0, tableWidth = 0;
    std::vector<uint16_t> hostQuery, hostKeys, hostValues;  // layer 0's cache
    std::vector<int32_t> hostTable, hostCu, hostLens;
    std::unique_ptr<Buffer> query, out, table, cu, lens;
    std::vector<std::unique_ptr<Buffer>> keys, values;     // per layer
    // The runner's split of a mixed step (model_runner.cpp, forward()): the leading single-token
    // sequences through decode attention, the rest through prefill attention over offsets from 0.
    int leadingSingles = 0;
    std::unique_ptr<Buffer> restCu, workspace, counters;
};

AttentionSetup makeAttention(const Batch& b, int layers)
{
    AttentionSetup s;
    s.batch = b;
    s.hostCu.push_back(0);
    int blocksTotal = 3;  // spare blocks nobody owns
    for (size_t i = 0; i < b.fresh.size(); ++i) {
        const int context = b.cached[i] + b.fresh[i];
        s.hostCu.push_back(s.hostCu.back() + b.fresh[i]);
        s.hostLens.push_back(context);
        s.maxQuery = std::max(s.maxQuery, b.fresh[i]);
        s.maxContext = std::max(s.maxContext, context);
        blocksTotal += (context + gpu::kKvBlockSize - 1) / gpu::kKvBlockSize;
    }
    s.numTokens = s.hostCu.back();
    s.numBlocks = blocksTotal;
    s.tableWidth = (s.maxContext + gpu::kKvBlockSize - 1) / gpu::kKvBlockSize + 2;
    std::vector<int32_t> ids(static_cast<size_t>(blocksTotal));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(7));
    s.hostTable.assign(b.fresh.size() * size_t(s.tableWidth), blocksTotal + 5);  // unused entries: outside the pool
    size_t next = 0;
    for (size_t i = 0; i < b.fresh.size(); ++i)
        for (int j = 0; j * gpu::kKvBlockSize < s.hostLens[i]; ++j) s.hostTable[i * s.tableWidth + j] = ids[next++];
    if (b.foreignBlock) s.hostTable[1] = blocksTotal + 9;
    const size_t cacheElems = size_t(blocksTotal) * gpu::kKvBlockSize * kKvHeads * kHeadDim;
    s.hostKeys = randomHalfBits(cacheElems, 11);
    s.hostValues = randomHalfBits(cacheElems, 12);
    s.hostQuery = randomHalfBits(size_t(s.numTokens) * kQHeads * kHeadDim, 13);
    for (int l = 0; l < layers; ++l) {
        s.keys.push_back(upload(s.hostKeys));
        s.values.push_back(upload(s.hostValues));
    }
    s.query = upload(s.hostQuery);
    s.out = std::make_unique<Buffer>(s.hostQuery.size() * 2);
    s.table = upload(s.hostTable);
    s.cu = upload(s.hostCu);
    s.lens = upload(s.hostLens);
    while (s.leadingSingles < int(b.fresh.size()) && b.fresh[size_t(s.leadingSingles)] == 1) ++s.leadingSingles;
    if (s.leadingSingles == int(b.fresh.size())) s.leadingSingles = 0;  // decode-only: no split
    if (s.leadingSingles > 0) {
        std::vector<int32_t> rest;
        for (size_t i = size_t(s.leadingSingles); i < s.hostCu.size(); ++i) rest.push_back(s.hostCu[i] - s.hostCu[size_t(s.leadingSingles)]);
        s.restCu = upload(rest);
        const int maxParts = std::max(gpu::kDecodeMaxRowPartitions, (s.maxContext + 15) / 16);
        s.workspace = std::make_unique<Buffer>(
            size_t(gpu::pagedAttentionWorkspaceFloats(s.leadingSingles, kQHeads, kHeadDim, maxParts)) * 4);
        s.counters = std::make_unique<Buffer>(size_t(s.leadingSingles) * kKvHeads * 4);
        check(cudaMemset(s.counters->ptr, 0, s.counters->bytes), "memset");  // the kernel leaves them zero
    }
    return s;
}

gpu::PagedPrefillAttentionParams attentionParams(const AttentionSetup& s, int layer)
{
    gpu::PagedPrefillAttentionParams p;
    p.dtype = gpu::DType::F16;
    p.impl = gpu::PrefillImpl::TensorCore;
    p.out = s.out->ptr;
    p.query = s.query->ptr;
    p.keyCache = s.keys[size_t(layer)]->ptr;
    p.valueCache = s.values[size_t(layer)]->ptr;
    p.blockTable = static_cast<const int32_t*>(s.table->ptr);
    p.cuSeqlensQ = static_cast<const int32_t*>(s.cu->ptr);
    p.contextLens = static_cast<const int32_t*>(s.lens->ptr);
    p.queryTokenStride = p.outTokenStride = int64_t(kQHeads) * kHeadDim;
    p.blockTableStride = s.tableWidth;
    p.numTokens = s.numTokens;
    p.numSeqs = int(s.batch.fresh.size());
    p.numQHeads = kQHeads;
    p.numKvHeads = kKvHeads;
    p.headDim = kHeadDim;
    p.numBlocks = s.numBlocks;
    p.maxQueryLen = s.maxQuery;
    p.maxContextLen = s.maxContext;
    p.scale = 1.0f / std::sqrt(float(kHeadDim));
    return p;
}

// The kernels timed: the previous tensor-core kernel (the baseline), and the shipped one with its two
// warp groups chosen by size, on 128 rows, or on the keys of 64 rows.
struct Kernel {
    const char* name;
    bool previous;
    gpu::PrefillImpl impl;
};
const Kernel kKernels[] = {{"previous", true, gpu::PrefillImpl::TensorCore},
                           {"shipped, by size", false, gpu::PrefillImpl::TensorCore},
                           {"shipped, 128 rows a CTA", false, gpu::PrefillImpl::TensorCoreSplitRows},
                           {"shipped, keys of 64 rows split", false, gpu::PrefillImpl::TensorCoreSplitKeys}};

cudaError_t launchAttention(gpu::PagedPrefillAttentionParams p, const Kernel& k, cudaStream_t stream)
{
    p.impl = k.impl;
    return k.previous ? bench::previous::launchPrefillAttention(p, stream) : gpu::launchPagedPrefillAttention(p, stream);
}

// The runner's split of a mixed step on layer l: decode attention for the leading singles (the eager
// automatic split of gpu/ops.cpp: pagedDecodeAutoRowPartitions, else a partition size by size), then
// kernel k for the rest.
cudaError_t launchSplitStep(const AttentionSetup& s, int layer, const Kernel& k, int numSms, cudaStream_t stream)
{
    const int nd = s.leadingSingles;
    const gpu::PagedPrefillAttentionParams all = attentionParams(s, layer);
    gpu::PagedDecodeAttentionParams d;
    d.dtype = gpu::DType::F16;
    d.out = all.out;
    d.query = all.query;
    d.keyCache = all.keyCache;
    d.valueCache = all.valueCache;
    d.blockTable = all.blockTable;
    d.contextLens = all.contextLens;
    d.workspace = static_cast<float*>(s.workspace->ptr);
    d.counters = static_cast<int32_t*>(s.counters->ptr);
    d.querySeqStride = all.queryTokenStride;
    d.outSeqStride = all.outTokenStride;
    d.blockTableStride = all.blockTableStride;
    d.numSeqs = nd;
    d.numQHeads = kQHeads;
    d.numKvHeads = kKvHeads;
    d.headDim = kHeadDim;
    d.numBlocks = all.numBlocks;
    d.maxContextLen = all.maxContextLen;
    d.scale = all.scale;
    d.rowPartitions = gpu::pagedDecodeAutoRowPartitions(nd, kKvHeads, numSms);
    if (d.rowPartitions == 0) d.partitionSize = gpu::choosePagedDecodePartitionSize(nd, kKvHeads, all.maxContextLen, numSms);
    if (const cudaError_t e = gpu::launchPagedDecodeAttention(d, stream); e != cudaSuccess) return e;
    gpu::PagedPrefillAttentionParams r = all;
    r.out = static_cast<__half*>(all.out) + nd * all.outTokenStride;
    r.query = static_cast<const __half*>(all.query) + nd * all.queryTokenStride;
    r.blockTable = all.blockTable + int64_t(nd) * all.blockTableStride;
    r.cuSeqlensQ = static_cast<const int32_t*>(s.restCu->ptr);
    r.contextLens = all.contextLens + nd;
    r.numTokens = all.numTokens - nd;
    r.numSeqs = all.numSeqs - nd;
    return launchAttention(r, k, stream);
}

// The CPU reference's output on layer 0 (float16 bits), computed once per batch.
std::vector<uint16_t> referenceOutput(const AttentionSetup& s)
{
    std::vector<uint16_t> want(s.hostQuery.size());
    gpu::PagedPrefillAttentionParams h = attentionParams(s, 0);
    h.out = want.data();
    h.query = s.hostQuery.data();
    h.keyCache = s.hostKeys.data();
    h.valueCache = s.hostValues.data();
    h.blockTable = s.hostTable.data();
    h.cuSeqlensQ = s.hostCu.data();
    h.contextLens = s.hostLens.data();
    gpu::ref::pagedPrefillAttentionRef(h);
    return want;
}

// `launch` on layer 0 against the reference's output: normalised squared error over every output row.
bool checkLaunch(const AttentionSetup& s, const std::string& kernel, const std::function<cudaError_t()>& launch,
                 const std::vector<uint16_t>& want)
{
    check(cudaMemset(s.out->ptr, 0xff, s.out->bytes), "memset");  // NaN wherever nothing is written
    check(launch(), s.batch.name.c_str());
    check(cudaDeviceSynchronize(), s.batch.name.c_str());
    std::vector<uint16_t> got(s.hostQuery.size());
    check(cudaMemcpy(got.data(), s.out->ptr, got.size() * 2, cudaMemcpyDeviceToHost), "download");
    const double nmse = bench::halfNmse(got, want);
    const bool ok = nmse <= 1e-5;
    std::printf("| %s | %s | %d | %.2e | %s |\n", s.batch.name.c_str(), kernel.c_str(), s.numTokens, nmse,
                ok ? "ok" : "MISMATCH");
    return ok;
}

// The name of the runner's split of a step in the tables, the rest through `kernel`.
std::string splitName(const AttentionSetup& s, const Kernel& kernel)
{
    return std::to_string(s.leadingSingles) + " decodes by decode attention, the rest " + kernel.name;
}

// Multiply-adds x 2 of Q K^T and P V over the keys each new token sees (cached + new up to itself).
double causalFlops(const AttentionSetup& s)
{
    double keysSeen = 0;
    for (size_t i = 0; i < s.batch.fresh.size(); ++i)
        for (int t = 0; t < s.batch.fresh[i]; ++t) keysSeen += s.batch.cached[i] + t + 1;
    return 4.0 * keysSeen * kQHeads * kHeadDim;
}

// --- 3: the layer ---

// One prompt batch of `rows` tokens through 24 layers: weights, caches and activations.
struct Model {
    int rows = 0, numBlocks = 0, tableWidth = 0, maxQuery = 0, maxContext = 0, numSeqs = 0;
    std::vector<Layer> layers;
    std::unique_ptr<Buffer> cosSin, positions, slots, table, cu, lens;
    std::unique_ptr<Buffer> residual, h, qkv, attn, pending, gateUp, act;
    cublasHandle_t blas = nullptr;
};

// `prompts` fresh prompts of `tokens` tokens each, their blocks a shuffled part of the pool.
Model makeModel(int tokens, int prompts)
{
    Model m;
    m.rows = tokens * prompts;
    m.numSeqs = prompts;
    m.maxQuery = m.maxContext = tokens;
    const int blocksPerSeq = (tokens + gpu::kKvBlockSize - 1) / gpu::kKvBlockSize;
    m.numBlocks = prompts * blocksPerSeq + 3;
    m.tableWidth = blocksPerSeq;
    const size_t cacheElems = size_t(m.numBlocks) * gpu::kKvBlockSize * kKvHeads * kHeadDim;
    uint32_t seed = 1;
    // The caches start zero: the ops timed alone read them unwritten.
    for (int l = 0; l < kLayers; ++l) m.layers.push_back(randomLayer(seed, cacheElems, /*keysRandom=*/false));
    m.cosSin = upload(bench::ropeTable(tokens + 8, kHeadDim));
    std::vector<int64_t> positions(size_t(4) * m.rows), slots(size_t(m.rows));
    std::vector<int32_t> ids(size_t(prompts) * blocksPerSeq), table(ids.size()), cu{0};
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(4));
    for (int s = 0; s < prompts; ++s) {
        for (int j = 0; j < blocksPerSeq; ++j) table[size_t(s) * blocksPerSeq + j] = ids[size_t(s) * blocksPerSeq + j];
        for (int t = 0; t < tokens; ++t) {
            const size_t row = size_t(s) * tokens + t;
            for (int a = 0; a < 4; ++a) positions[size_t(a) * m.rows + row] = t;
            slots[row] = int64_t(table[size_t(s) * blocksPerSeq + t / gpu::kKvBlockSize]) * gpu::kKvBlockSize + t % gpu::kKvBlockSize;
        }
        cu.push_back(cu.back() + tokens);
    }
    m.positions = upload(positions);
    m.slots = upload(slots);
    m.table = upload(table);
    m.cu = upload(cu);
    m.lens = upload(std::vector<int32_t>(size_t(prompts), tokens));
    const size_t n = size_t(m.rows);
    m.residual = halves(n * kHidden, seed++, 1.0f);
    m.h = halves(n * kHidden, seed++, 1.0f);
    m.qkv = halves(n * kQkv, seed++, 1.0f);
    m.attn = halves(n * kQHeads * kHeadDim, seed++, 1.0f);
    m.pending = halves(n * kHidden, seed++, 0.1f);
    m.gateUp = halves(n * 2 * kInter, seed++, 1.0f);
    m.act = halves(n * kInter, seed++, 1.0f);
    check(cudaDeviceSynchronize(), "fill");
    return m;
}

// out[rows, n] = x[rows, k] W^T with W [n, k] row-major, float32 accumulation, as at::linear.
bool linear(const Model& m, void* out, const Buffer& x, const Buffer& w, int n, int k)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasGemmEx(m.blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m.rows, k, &one, w.ptr, CUDA_R_16F, k, x.ptr, CUDA_R_16F, k,
                        &zero, out, CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
}

bool addRmsNorm(const Model& m, const Buffer& weight, cudaStream_t stream)
{
    return gpu::launchRmsNorm(addRmsNormParams(m.h->ptr, m.pending->ptr, m.residual->ptr, weight.ptr, m.rows), stream) ==
           cudaSuccess;
}

bool qkNormRope(const Model& m, const Layer& w, cudaStream_t stream)
{
    const gpu::QkNormRopeParams r = ropeParams(m.qkv->ptr, m.rows, m.positions->ptr, static_cast<const float*>(m.cosSin->ptr),
                                               m.maxContext + 8, w, static_cast<const int64_t*>(m.slots->ptr),
                                               int64_t(m.numBlocks) * gpu::kKvBlockSize);
    return gpu::launchQkNormRope(r, stream) == cudaSuccess;
}

bool attention(const Model& m, const Layer& w, cudaStream_t stream)
{
    gpu::PagedPrefillAttentionParams a;
    a.dtype = gpu::DType::F16;
    a.out = m.attn->ptr;
    a.query = m.qkv->ptr;
    a.keyCache = w.keys->ptr;
    a.valueCache = w.values->ptr;
    a.blockTable = static_cast<const int32_t*>(m.table->ptr);
    a.cuSeqlensQ = static_cast<const int32_t*>(m.cu->ptr);
    a.contextLens = static_cast<const int32_t*>(m.lens->ptr);
    a.queryTokenStride = kQkv;
    a.outTokenStride = kQHeads * kHeadDim;
    a.blockTableStride = m.tableWidth;
    a.numTokens = m.rows;
    a.numSeqs = m.numSeqs;
    a.numQHeads = kQHeads;
    a.numKvHeads = kKvHeads;
    a.headDim = kHeadDim;
    a.numBlocks = m.numBlocks;
    a.maxQueryLen = m.maxQuery;
    a.maxContextLen = m.maxContext;
    a.scale = 1.0f / std::sqrt(float(kHeadDim));
    return gpu::launchPagedPrefillAttention(a, stream) == cudaSuccess;
}

bool siluMul(const Model& m, cudaStream_t stream)
{
    return gpu::launchSiluAndMul(siluMulParams(m.act->ptr, m.gateUp->ptr, m.rows), stream) == cudaSuccess;
}

// The ops of one layer in forward()'s order, each a call on layer l.
struct Op {
    const char* name;
    std::function<bool(Model&, const Layer&, cudaStream_t)> run;
};

std::vector<Op> layerOps()
{
    return {
        {"add + rmsnorm (input)", [](Model& m, const Layer& w, cudaStream_t s) { return addRmsNorm(m, *w.inputNorm, s); }},
        {"qkv matmul (cuBLAS)", [](Model& m, const Layer& w, cudaStream_t) { return linear(m, m.qkv->ptr, *m.h, *w.qkv, kQkv, kHidden); }},
        {"qk-norm + rope + kv write", [](Model& m, const Layer& w, cudaStream_t s) { return qkNormRope(m, w, s); }},
        {"prefill attention", [](Model& m, const Layer& w, cudaStream_t s) { return attention(m, w, s); }},
        {"o matmul (cuBLAS)", [](Model& m, const Layer& w, cudaStream_t) {
             return linear(m, m.pending->ptr, *m.attn, *w.o, kHidden, kQHeads * kHeadDim); }},
        {"add + rmsnorm (post)", [](Model& m, const Layer& w, cudaStream_t s) { return addRmsNorm(m, *w.postNorm, s); }},
        {"gate/up matmul (cuBLAS)", [](Model& m, const Layer& w, cudaStream_t) {
             return linear(m, m.gateUp->ptr, *m.h, *w.gateUp, 2 * kInter, kHidden); }},
        {"silu x mul", [](Model& m, const Layer&, cudaStream_t s) { return siluMul(m, s); }},
        {"down matmul (cuBLAS)", [](Model& m, const Layer& w, cudaStream_t) {
             return linear(m, m.pending->ptr, *m.act, *w.down, kHidden, kInter); }},
    };
}

void layerTable(int tokens, int prompts, cublasHandle_t blas, cudaStream_t stream)
{
    Model m = makeModel(tokens, prompts);
    m.blas = blas;
    const std::vector<Op> ops = layerOps();
    const double gemmFlops[] = {0, 2.0 * kQkv * kHidden, 0, 0, 2.0 * kHidden * kQHeads * kHeadDim, 0,
                                2.0 * 2 * kInter * kHidden, 0, 2.0 * kHidden * kInter};
    std::printf("## the prefill of %d prompt%s of %d tokens (%d rows), per layer\n\n"
                "| op | us a layer (24 launches in a graph) | x 24 layers, ms | TFLOP/s |\n|---|---|---|---|\n",
                prompts, prompts > 1 ? "s" : "", tokens, m.rows);
    double sum = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
        const double us = bench::graphMicros(stream, kLayers, [&](int l) { return ops[i].run(m, m.layers[size_t(l)], stream); });
        sum += us;
        if (gemmFlops[i] > 0) std::printf("| %s | %.1f | %.3f | %.0f |\n", ops[i].name, us, us * kLayers / 1e3, gemmFlops[i] * m.rows / us / 1e6);
        else std::printf("| %s | %.1f | %.3f | |\n", ops[i].name, us, us * kLayers / 1e3);
    }
    const double chain = bench::graphMicros(stream, 1, [&](int) {
        bool ok = true;
        for (const Layer& w : m.layers)
            for (const Op& op : ops) ok = op.run(m, w, stream) && ok;
        return ok;
    });
    std::printf("| sum of the ops | %.1f | %.3f | |\n| **the 24 layers in one graph** | %.1f | **%.3f** | |\n\n", sum,
                sum * kLayers / 1e3, chain / kLayers, chain / 1e3);
}

}  // namespace

int main(int argc, char** argv)
{
    int tokens = 1076, prompts = 8;
    bool profile = false, withReference = true;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // what was measured survives a timeout
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--profile")) profile = true;
        else if (!std::strcmp(argv[i], "--no-check")) withReference = false;
        else if (!std::strcmp(argv[i], "--tokens") && i + 1 < argc) tokens = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--prompts") && i + 1 < argc) prompts = std::max(1, std::atoi(argv[++i]));
    }
    std::printf("# bench_prefill: %d-token prompts, %d query / %d KV heads of %d, float16, %d layers\n\n", tokens,
                kQHeads, kKvHeads, kHeadDim, kLayers);
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    int numSms = 0;
    check(cudaDeviceGetAttribute(&numSms, cudaDevAttrMultiProcessorCount, 0), "attribute");
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "bench_prefill: cuBLAS did not start\n");
        return 1;
    }

    std::vector<Batch> batches = {{"one prompt", {0}, {tokens}, false, true}};
    for (int n = 2; n <= prompts; n *= 2)
        batches.push_back({std::to_string(n) + " prompts", std::vector<int>(size_t(n), 0), std::vector<int>(size_t(n), tokens)});
    batches.push_back({"chunk 300 over 776 cached, a decode, a prompt of 77, a block outside the pool", {776, 899, 0}, {300, 1, 77}, true, true});
    // Steps of the engine under load (2048 tokens a step, decodes first as the scheduler puts them): a
    // page joins 63 decoding ones; two chunks beside 32 decodes.
    {
        Batch b{"63 decodes at context 1200 and a prompt", std::vector<int>(63, 1199), std::vector<int>(63, 1)};
        b.cached.push_back(0);
        b.fresh.push_back(tokens);
        batches.push_back(b);
        Batch c{"32 decodes at 1200, a chunk of 900 over 176 cached, a prompt", std::vector<int>(32, 1199), std::vector<int>(32, 1)};
        c.cached.insert(c.cached.end(), {176, 0});
        c.fresh.insert(c.fresh.end(), {900, tokens});
        batches.push_back(c);
        // Small enough for the reference: a short prompt beside 20 decodes, and a prompt's last chunk.
        Batch d{"a prompt of 200 and a chunk of 90 over 1000 cached beside 20 decodes at context 300",
                std::vector<int>(20, 299), std::vector<int>(20, 1)};
        d.cached.insert(d.cached.end(), {0, 1000});
        d.fresh.insert(d.fresh.end(), {200, 90});
        d.reference = true;
        batches.push_back(d);
    }
    if (profile) {
        const AttentionSetup s = makeAttention(batches[0], 3);
        for (int l = 0; l < 3; ++l) check(gpu::launchPagedPrefillAttention(attentionParams(s, l), stream), "profile");
        check(cudaStreamSynchronize(stream), "profile");
        std::printf("profiled: %s\n", batches[0].name.c_str());
        return 0;
    }
    bool failed = false;
    std::printf("## the tensor-core prefill attention, previous and shipped, against the CPU reference (layer 0)\n\n"
                "| batch | kernel | tokens | nmse | ok |\n|---|---|---|---|---|\n");
    std::vector<AttentionSetup> setups;
    for (const Batch& b : batches) {
        setups.push_back(makeAttention(b, kLayers));
        if (withReference && b.reference) {
            const std::vector<uint16_t> want = referenceOutput(setups.back());
            const AttentionSetup& s = setups.back();
            for (const Kernel& k : kKernels)
                failed = !checkLaunch(s, k.name, [&] { return launchAttention(attentionParams(s, 0), k, nullptr); }, want) ||
                         failed;
            if (s.leadingSingles > 0)  // with each of the previous and the shipped kernel for the rest
                for (const Kernel* k : {&kKernels[0], &kKernels[1]})
                    failed = !checkLaunch(s, splitName(s, *k),
                                          [&] { return launchSplitStep(s, 0, *k, numSms, nullptr); }, want) ||
                             failed;
        }
    }
    std::printf("\n## the prefill attention alone (24 launches in a graph, one layer's cache each)\n\n"
                "| batch | kernel | tokens | us a layer | causal TFLOP/s | vs previous |\n|---|---|---|---|---|---|\n");
    for (const AttentionSetup& s : setups) {
        double previous = NAN;
        for (const Kernel& k : kKernels) {
            const double us = bench::graphMicros(stream, kLayers, [&](int l) {
                return launchAttention(attentionParams(s, l), k, stream) == cudaSuccess;
            });
            if (k.previous) previous = us;
            std::printf("| %s | %s | %d | %.1f | %.0f | %.2fx |\n", s.batch.name.c_str(), k.name, s.numTokens, us,
                        causalFlops(s) / us / 1e6, previous / us);
        }
        if (s.leadingSingles > 0)
            for (const Kernel& k : kKernels) {
                if (!k.previous && k.impl != gpu::PrefillImpl::TensorCore) continue;  // previous, and shipped by size
                const double us = bench::graphMicros(stream, kLayers, [&](int l) {
                    return launchSplitStep(s, l, k, numSms, stream) == cudaSuccess;
                });
                std::printf("| %s | %s | %d | %.1f | %.0f | %.2fx |\n", s.batch.name.c_str(), splitName(s, k).c_str(),
                            s.numTokens, us, causalFlops(s) / us / 1e6, previous / us);
            }
    }
    std::printf("\n");
    setups.clear();

    layerTable(tokens, 1, blas, stream);
    layerTable(tokens, prompts, blas, stream);
    cublasDestroy(blas);
    std::printf("%s\n", failed ? "CHECK FAILED" : "all checks passed");
    return failed ? 1 : 0;
}
