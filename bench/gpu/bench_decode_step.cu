// bench_decode_step: HunyuanOCR's decode step as the model runner's graphs run it (core/runner/
// model_runner.cpp, forward() and logits()): per layer the qkv projection with the add + RMSNorm in
// front, QK-norm/XD-RoPE with the K/V write, paged decode attention (the graphs' split), the o projection,
// gate/up with the add + RMSNorm, down with SiLU-mul; then the final add + RMSNorm and the LM head with
// float32 logits. Random float16 weights of the full-size decoder (24 layers, 1.08 GB with the head) and
// a 1076-token context (a page's prompt), so every weight comes from DRAM as in the step.
//
// At one or two sequences every kernel is ours (the SIMT skinny GEMM with the prologues inside). From
// three, the projections run as the runner runs them on the H200 (its tuner's choices of perf.md call
// 43: cuBLAS GemmEx for qkv, gate/up and down behind our norm and SiLU-mul kernels, our tensor-core
// engine for down up to 8 rows, o up to 16 and the LM head up to 32), and, as variants, through our
// tensor-core engine everywhere with the prologues inside, everywhere with the norm and SiLU-mul kernels
// in front, and for one projection at a time; from 8 rows the same through the warp-group engine
// (skinny_gemm_wg.cu, sm_90a). The tuner times each projection alone, where PDL hides nothing; this says
// what each choice costs in the chain.
//
// The other variants: the other splits of one sequence's attention, the final norm inside the LM head,
// and each part left out, which says what the part costs in the chain (per-op timings repeat one op and
// miss what PDL does not hide); from three sequences also the norm and SiLU-mul kernels, which bounds
// what fusing them into the products could save (perf.md, call 133); and from three sequences the chain with
// the prototype int8 KV cache of bench/gpu/kv_int8_prototype.cuh (its rotation apart and inside attention, its
// integer logits, its tensor-core kernel), beside the float16 chain's two (its rows' logits must be finite too). The sampler is not in it: this is the runner's "chain" figure. Without
// libtorch, so it builds with nvcc alone and the binary can travel to the GPU machine:
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_decode_step.cu \
//        gpu/kernels/skinny_gemm.cu gpu/kernels/skinny_gemm_tc.cu gpu/kernels/skinny_gemm_wg.cu (-arch=sm_90a) \
//        gpu/kernels/rms_norm.cu \
//        gpu/kernels/qk_norm_rope.cu gpu/kernels/paged_decode_attention.cu gpu/kernels/silu_and_mul.cu \
//        -lcublas -lcuda -o build-gpu/bench_decode_step
// (or the CMake target of the same name in CUDA builds). Correctness is the kernel tests' job; this one
// only checks that the logits come out finite (exit code 1 otherwise, or when a variant fails to launch).
//   bench_decode_step [--batches 1,2,8,32] [--context N] [--rounds N]   (1 to 64 sequences)
//   bench_decode_step --partition 32,48,72 [--batches 32,64,256] [--context N]   (any number of sequences)
// --partition asks whether the vision tower's compute-bound products could run beside decode steps on
// SMs of their own: green contexts (CUDA 12.4+, the driver API) split the card into a part of about N SMs
// for the decode step's graph (the runner's chain) and the rest for a stream of the tower's fc1 product
// (cuBLAS, 8 pages: 32768 x 1152 -> 4304), and it times each alone on its part and both at once, against
// the whole card (H200, perf.md calls 129-131: at best 8 to 16 % more work a unit of time, so no).
#include <cublas_v2.h>
#include <cuda.h>
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
#include <utility>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "bench/gpu/decoder_bench.h"
#include "bench/gpu/kv_int8_prototype.cuh"
#include "gpu/kernels/paged_decode_attention.cuh"
#include "gpu/kernels/qk_norm_rope.cuh"
#include "gpu/kernels/rms_norm.cuh"
#include "gpu/kernels/silu_and_mul.cuh"
#include "gpu/kernels/skinny_gemm.cuh"

namespace gpu = lector::gpu;
namespace bench = lector::bench;

namespace {

using bench::check;
using Buffer = bench::DeviceBuffer;
using bench::halves;
using bench::upload;

using namespace bench::decoder;  // the decoder's shapes, Layer and its kernels' parameters
constexpr int kGraphContext = 8192;  // the graphs' context bound: block-table width and the grid's
constexpr int kMaxRows = 64;

// How the projections run from 3 rows (at 1 and 2 always the SIMT engine with the prologues inside).
enum class Projections {
    Runner,            // as the runner on the H200 (the header): cuBLAS where its tuner picks it
    TensorCores,       // the tensor-core engine everywhere, add + RMSNorm and SiLU-mul inside
    TensorCoresApart,  // the tensor-core engine everywhere, the norm and SiLU-mul kernels in front
    WarpGroupsApart,   // the warp-group engine everywhere (sm_90a), the norm and SiLU-mul kernels in front
};

// What a variant changes: the projections' engine, the attention split, the final norm's place, or
// parts of the chain left out.
struct Variant {
    std::string name;
    Projections projections = Projections::Runner;
    unsigned tcApart = 0;  // with Runner: these projections (bits of Which) on the tensor cores, apart
    unsigned wgApart = 0;  // with Runner: these projections on the warp-group engine, apart
    bool rope = true, attention = true, oProj = true, mlp = true, lmHead = true;
    // The add + RMSNorm kernels in front of qkv and gate/up, and the SiLU-mul kernel in front of down,
    // where they run apart (left out: what fusing them into the products could save at most).
    bool normKernels = true, siluMulKernel = true;
    bool lmHeadNorm = false;  // the final add + RMSNorm as the LM head's prologue instead of its own kernel
    // The attention split instead of the graphs' (attentionSplit): a cluster of this many partitions, or
    // with -1, 64-key partitions merged by the ticket.
    int attentionCluster = 0;
    // The new tokens' QK-norm/XD-RoPE and K/V write inside decode attention (PagedDecodeAttentionParams::
    // rope, the graphs with row partitions: from 3 sequences) instead of the QK-norm/RoPE kernel before it.
    bool rotationInside = false;
    // > 0: K/V in the prototype int8 cache (bench/gpu/kv_int8_prototype.cuh) read by its attention kernel at
    // this many times the graphs' row partitions: the QK-norm/RoPE kernel writing the int8 cache, then the int8
    // attention; with rotationInside, the int8 attention rotating and writing the new tokens itself.
    int int8Kv = 0;
    bool int8Dp2a = false;  // the int8 attention's integer logits (AttentionParams::dp2aLogits)
    bool int8TensorCores = false;  // its tensor-core kernel (AttentionParams::tensorCores) over V by dim
    int int8BlocksInFlight = 1;    // the tensor-core kernel's blocks a warp in flight (AttentionParams::blocksInFlight)
};

// A layer's K/V in the prototype int8 format, quantized from its float16 cache at setup; V also by dim (the
// tensor-core kernel's layout; the scales are the same).
struct Int8Layer {
    std::unique_ptr<Buffer> keys, values, keyScales, valueScales, valuesByDim;
    bench::int8kv::Cache view(int numBlocks, bool byDim = false) const
    {
        return {static_cast<int8_t*>(keys->ptr), static_cast<int8_t*>((byDim ? valuesByDim : values)->ptr),
                static_cast<float*>(keyScales->ptr), static_cast<float*>(valueScales->ptr), numBlocks, byDim};
    }
};

struct Model {
    int rows = 0, context = 0, numBlocks = 0;
    std::vector<Layer> layers;
    std::vector<Int8Layer> int8;  // from 3 rows (the int8 variants')
    std::unique_ptr<Buffer> lmHead, finalNorm, cosSin, positions, slots, table, lens, workspace, counters;
    std::unique_ptr<Buffer> residual, spare, h, qkv, attn, pending, gateUp, act, logits;
    cublasHandle_t blas = nullptr;  // on the step's stream
};

Model makeModel(int rows, int context)
{
    Model m;
    m.rows = rows;
    m.context = context;
    const int blocksPerSeq = (context + gpu::kKvBlockSize - 1) / gpu::kKvBlockSize;
    m.numBlocks = rows * blocksPerSeq + 3;
    const size_t cacheElems = size_t(m.numBlocks) * gpu::kKvBlockSize * kKvHeads * kHeadDim;
    uint32_t seed = 1;
    for (int l = 0; l < kLayers; ++l) m.layers.push_back(randomLayer(seed, cacheElems, /*keysRandom=*/true));
    m.lmHead = halves(size_t(kVocab) * kHidden, seed++, 0.05f);
    m.finalNorm = halves(kHidden, seed++, 0.1f, 1.0f);
    // XD-RoPE's table (cos at j, sin at 64 + j) and every row at the context's last position on all 4 axes.
    m.cosSin = upload(bench::ropeTable(kGraphContext, kHeadDim));
    m.positions = upload(std::vector<int64_t>(size_t(4) * rows, context - 1));
    // Each sequence's blocks a shuffled part of the pool; its new token in the last one.
    const int width = kGraphContext / gpu::kKvBlockSize;
    std::vector<int32_t> ids(size_t(rows) * blocksPerSeq), table(size_t(rows) * width, 0);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(4));
    std::vector<int64_t> slots(rows);
    for (int r = 0; r < rows; ++r) {
        for (int j = 0; j < blocksPerSeq; ++j) table[size_t(r) * width + j] = ids[size_t(r) * blocksPerSeq + j];
        slots[r] = int64_t(table[size_t(r) * width + (context - 1) / gpu::kKvBlockSize]) * gpu::kKvBlockSize +
                   (context - 1) % gpu::kKvBlockSize;
    }
    m.table = upload(table);
    m.slots = upload(slots);
    m.lens = upload(std::vector<int32_t>(rows, context));
    const int maxParts = std::max(kGraphContext / 64, gpu::kDecodeMaxRowPartitions);
    m.workspace = std::make_unique<Buffer>(size_t(gpu::pagedAttentionWorkspaceFloats(rows, kQHeads, kHeadDim, maxParts)) * 4);
    m.counters = std::make_unique<Buffer>(size_t(rows) * kKvHeads * 4);
    check(cudaMemset(m.counters->ptr, 0, m.counters->bytes), "memset");
    if (rows > 2) {  // every layer's cache through the int8 write, all slots in order
        const size_t slotsAll = size_t(m.numBlocks) * gpu::kKvBlockSize;
        std::vector<int64_t> identity(slotsAll);
        std::iota(identity.begin(), identity.end(), int64_t(0));
        const auto ids8 = upload(identity);
        for (const Layer& w : m.layers) {
            Int8Layer c{std::make_unique<Buffer>(slotsAll * kKvHeads * kHeadDim), std::make_unique<Buffer>(slotsAll * kKvHeads * kHeadDim),
                        std::make_unique<Buffer>(slotsAll * kKvHeads * 4), std::make_unique<Buffer>(slotsAll * kKvHeads * 4),
                        std::make_unique<Buffer>(slotsAll * kKvHeads * kHeadDim)};
            bench::int8kv::WriteParams q;
            q.key = static_cast<const __half*>(w.keys->ptr);
            q.value = static_cast<const __half*>(w.values->ptr);
            q.slotMapping = static_cast<const int64_t*>(ids8->ptr);
            q.numTokens = int(slotsAll);
            q.numKvHeads = kKvHeads;
            for (bool byDim : {false, true}) {  // K and the scales twice, the same bytes
                q.cache = c.view(m.numBlocks, byDim);
                check(bench::int8kv::launchWrite(q, nullptr), "int8 cache");
            }
            m.int8.push_back(std::move(c));
        }
        check(cudaDeviceSynchronize(), "int8 cache");
    }
    m.residual = halves(size_t(rows) * kHidden, seed++, 1.0f);
    m.spare = halves(size_t(rows) * kHidden, seed++, 1.0f);
    m.h = halves(size_t(rows) * kHidden, seed++, 1.0f);
    m.qkv = halves(size_t(rows) * kQkv, seed++, 1.0f);
    m.attn = halves(size_t(rows) * kQHeads * kHeadDim, seed++, 1.0f);
    m.pending = halves(size_t(rows) * kHidden, seed++, 1.0f);
    m.gateUp = halves(size_t(rows) * 2 * kInter, seed++, 1.0f);
    m.act = halves(size_t(rows) * kInter, seed++, 1.0f);
    m.logits = std::make_unique<Buffer>(size_t(rows) * kVocab * 4);
    check(cudaDeviceSynchronize(), "fill");
    return m;
}

// The decode graphs' attention split (model_runner.cpp, useGraphAttention): a cluster of 16 for one
// sequence where the device runs it, 64-key partitions for 2, row partitions above.
void attentionSplit(gpu::PagedDecodeAttentionParams& p, int rows, int numSms)
{
    p.partitionSize = 64;
    if (rows == 1 && gpu::pagedDecodeClusterFits(gpu::DType::F16, 16, kQHeads / kKvHeads, kHeadDim, kGraphContext))
        p.clusterPartitions = 16;
    else if (rows > 2)
        p.rowPartitions = gpu::pagedDecodeRowPartitions(rows, kKvHeads, numSms);
}

gpu::SkinnyGemmParams projection(const Model& m, void* out, const Buffer& x, int64_t xStride, const Buffer& w, int n, int k)
{
    gpu::SkinnyGemmParams p;
    p.dtype = gpu::DType::F16;
    p.out = out;
    p.x = x.ptr;
    p.weight = w.ptr;
    p.outStride = n;
    p.xStride = xStride;
    p.weightStride = k;
    p.rows = m.rows;
    p.n = n;
    p.k = k;
    return p;
}

// The add + RMSNorm prologue: x is the pending delta, the residual moves to the other buffer.
void withNorm(gpu::SkinnyGemmParams& p, Model& m, const Buffer& normWeight)
{
    p.normWeight = normWeight.ptr;
    p.residualIn = m.residual->ptr;
    p.residualOut = m.spare->ptr;
    p.residualStride = kHidden;
    std::swap(m.residual, m.spare);
}

enum Which { kQkvProj, kOProj, kGateUpProj, kDownProj, kLmHead };
enum class Engine { Simt, TensorCore, WarpGroup, Library };

// Where a projection runs for the variant at its rows (the header; model_runner.cpp, skinnyEngine()).
Engine engineOf(const Variant& v, int rows, Which w)
{
    if (rows <= 2) return Engine::Simt;
    if (v.projections == Projections::WarpGroupsApart || (v.wgApart >> w & 1u)) return Engine::WarpGroup;
    if (v.projections != Projections::Runner || (v.tcApart >> w & 1u)) return Engine::TensorCore;
    const int tcUpTo = w == kDownProj ? 8 : w == kOProj ? 16 : w == kLmHead ? 32 : 0;
    return rows <= tcUpTo ? Engine::TensorCore : Engine::Library;
}

// Whether the add + RMSNorm or SiLU-mul runs inside the projection's GEMM (else as its own kernel first).
bool prologueInside(const Variant& v, Which w, Engine e)
{
    return e != Engine::Library && e != Engine::WarpGroup && v.projections != Projections::TensorCoresApart &&
           !(v.tcApart >> w & 1u);
}

// p through the engine; the library as at::linear calls it (float32 out for the LM head's logits, where
// the runner converts float16 logits in a pass of its own).
// out = x weight^T through cuBLAS on blas's stream, as at::linear calls it.
bool libraryLinear(cublasHandle_t blas, const gpu::SkinnyGemmParams& p)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.rows, p.k, &one, p.weight, CUDA_R_16F,
                        int(p.weightStride), p.x, CUDA_R_16F, int(p.xStride), &zero, p.out,
                        p.outFloat ? CUDA_R_32F : CUDA_R_16F, int(p.outStride), CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
}

bool gemm(const Model& m, Engine e, gpu::SkinnyGemmParams p, cudaStream_t stream)
{
    if (e == Engine::Library) return libraryLinear(m.blas, p);
    p.engine = e == Engine::Simt ? gpu::SkinnyEngine::Simt
               : e == Engine::WarpGroup ? gpu::SkinnyEngine::WarpGroup
                                        : gpu::SkinnyEngine::TensorCore;
    return gpu::launchSkinnyGemm(p, stream) == cudaSuccess;
}

// The fused add + RMSNorm kernel: residual += pending, h = norm(residual).
cudaError_t addRmsNorm(const Model& m, const Buffer& normWeight, cudaStream_t stream)
{
    return gpu::launchRmsNorm(addRmsNormParams(m.h->ptr, m.pending->ptr, m.residual->ptr, normWeight.ptr, m.rows), stream);
}

// out = project(norm(residual + pending)) with the add + RMSNorm inside the GEMM or as its own kernel.
bool normedProjection(Model& m, const Variant& v, Which w, void* out, const Buffer& weight, int n,
                      const Buffer& normWeight, cudaStream_t stream)
{
    const Engine e = engineOf(v, m.rows, w);
    if (prologueInside(v, w, e)) {
        gpu::SkinnyGemmParams p = projection(m, out, *m.pending, kHidden, weight, n, kHidden);
        p.outFloat = w == kLmHead;
        withNorm(p, m, normWeight);
        return gemm(m, e, p, stream);
    }
    gpu::SkinnyGemmParams p = projection(m, out, *m.h, kHidden, weight, n, kHidden);
    p.outFloat = w == kLmHead;
    return (!v.normKernels || addRmsNorm(m, normWeight, stream) == cudaSuccess) && gemm(m, e, p, stream);
}

// QK-norm/XD-RoPE of the layer's q and k in the qkv output (every row at its context's last position on
// the 4 axes), with the K/V write into the layer's cache.
gpu::QkNormRopeParams ropeParams(const Model& m, const Layer& w)
{
    return bench::decoder::ropeParams(m.qkv->ptr, m.rows, m.positions->ptr, static_cast<const float*>(m.cosSin->ptr),
                                      kGraphContext, w, static_cast<const int64_t*>(m.slots->ptr),
                                      int64_t(m.numBlocks) * gpu::kKvBlockSize);
}

// Decode attention of the layer's q (strided in the qkv output) over its cache, as the graphs split it.
gpu::PagedDecodeAttentionParams attentionParams(const Model& m, const Layer& w, int numSms)
{
    gpu::PagedDecodeAttentionParams a;
    a.out = m.attn->ptr;
    a.query = m.qkv->ptr;
    a.keyCache = w.keys->ptr;
    a.valueCache = w.values->ptr;
    a.blockTable = static_cast<const int32_t*>(m.table->ptr);
    a.contextLens = static_cast<const int32_t*>(m.lens->ptr);
    a.workspace = static_cast<float*>(m.workspace->ptr);
    a.counters = static_cast<int32_t*>(m.counters->ptr);
    a.querySeqStride = kQkv;
    a.outSeqStride = kQHeads * kHeadDim;
    a.blockTableStride = kGraphContext / gpu::kKvBlockSize;
    a.numSeqs = m.rows;
    a.numQHeads = kQHeads;
    a.numKvHeads = kKvHeads;
    a.headDim = kHeadDim;
    a.numBlocks = m.numBlocks;
    a.maxContextLen = kGraphContext;
    a.scale = 1.0f / std::sqrt(float(kHeadDim));
    attentionSplit(a, m.rows, numSms);
    return a;
}

// Layer l's rotation with the new tokens' K/V written into the int8 cache (one kernel, as the float16 rotation
// writes its cache), then the int8 attention at rowPartitions (the graphs') times v.int8Kv partitions.
cudaError_t int8Attention(const Model& m, const Variant& v, int l, int rowPartitions, cudaStream_t stream)
{
    const Layer& w = m.layers[size_t(l)];
    const Int8Layer& c = m.int8[size_t(l)];
    if (!v.rotationInside) {
        bench::int8kv::RopeWriteParams r;
        r.rope = ropeParams(m, w);
        r.cache = c.view(m.numBlocks, v.int8TensorCores);
        LECTOR_CUDA_TRY(bench::int8kv::launchRopeWrite(r, stream));
    }
    const __half* qkv = static_cast<const __half*>(m.qkv->ptr);
    bench::int8kv::AttentionParams a;
    a.out = static_cast<__half*>(m.attn->ptr);
    a.query = qkv;
    a.cache = c.view(m.numBlocks, v.int8TensorCores);
    a.blockTable = static_cast<const int32_t*>(m.table->ptr);
    a.contextLens = static_cast<const int32_t*>(m.lens->ptr);
    a.workspace = static_cast<float*>(m.workspace->ptr);
    a.counters = static_cast<int32_t*>(m.counters->ptr);
    a.blockTableStride = kGraphContext / gpu::kKvBlockSize;
    a.querySeqStride = kQkv;
    a.outSeqStride = kQHeads * kHeadDim;
    a.numSeqs = m.rows;
    a.numQHeads = kQHeads;
    a.numKvHeads = kKvHeads;
    a.rowPartitions = std::min(std::max(rowPartitions, 1) * v.int8Kv, gpu::kDecodeMaxRowPartitions);
    a.scale = 1.0f / std::sqrt(float(kHeadDim));
    a.dp2aLogits = v.int8Dp2a;
    a.tensorCores = v.int8TensorCores;
    a.blocksInFlight = v.int8BlocksInFlight;
    if (v.rotationInside) a.rope = ropeParams(m, w);  // its float16 cache pointers are not used
    return bench::int8kv::launchAttention(a, stream);
}

// One decode step on `stream`; false when a launch fails.
bool step(Model& m, const Variant& v, cudaStream_t stream, int numSms)
{
    bool ok = true;
    auto run = [&](cudaError_t e) { ok = ok && e == cudaSuccess; };
    const int rows = m.rows;
    for (int l = 0; l < kLayers; ++l) {
        const Layer& w = m.layers[size_t(l)];
        // qkv: layer 0 normalises the embeddings on their own (the runner's first layer has no pending delta)
        if (l == 0) {
            gpu::RmsNormParams n;
            n.out = m.h->ptr;
            n.input = m.residual->ptr;
            n.weight = w.inputNorm->ptr;
            n.outStride = n.inputStride = kHidden;
            n.numTokens = rows;
            n.hidden = kHidden;
            run(gpu::launchRmsNorm(n, stream));
            ok = ok && gemm(m, engineOf(v, rows, kQkvProj), projection(m, m.qkv->ptr, *m.h, kHidden, *w.qkv, kQkv, kHidden), stream);
        } else {
            ok = ok && normedProjection(m, v, kQkvProj, m.qkv->ptr, *w.qkv, kQkv, *w.inputNorm, stream);
        }
        gpu::PagedDecodeAttentionParams a = attentionParams(m, w, numSms);
        if (v.attentionCluster != 0) {
            a.clusterPartitions = std::max(v.attentionCluster, 0);
            a.rowPartitions = 0;
        }
        if (v.int8Kv > 0 && v.rope && v.attention && !m.int8.empty()) {
            run(int8Attention(m, v, l, a.rowPartitions, stream));
        } else if (const bool inside = v.rotationInside && v.rope && v.attention && a.rowPartitions > 0; inside) {
            a.rope = ropeParams(m, w);
            run(gpu::launchPagedDecodeAttention(a, stream));
        } else {
            if (v.rope) run(gpu::launchQkNormRope(ropeParams(m, w), stream));
            if (v.attention) run(gpu::launchPagedDecodeAttention(a, stream));
        }
        if (v.oProj)
            ok = ok && gemm(m, engineOf(v, rows, kOProj),
                            projection(m, m.pending->ptr, *m.attn, kQHeads * kHeadDim, *w.o, kHidden, kQHeads * kHeadDim), stream);
        if (v.mlp) {
            ok = ok && normedProjection(m, v, kGateUpProj, m.gateUp->ptr, *w.gateUp, 2 * kInter, *w.postNorm, stream);
            const Engine e = engineOf(v, rows, kDownProj);
            if (prologueInside(v, kDownProj, e)) {
                gpu::SkinnyGemmParams d = projection(m, m.pending->ptr, *m.gateUp, 2 * kInter, *w.down, kHidden, kInter);
                d.siluMulInput = true;
                ok = ok && gemm(m, e, d, stream);
            } else {
                if (v.siluMulKernel) run(gpu::launchSiluAndMul(siluMulParams(m.act->ptr, m.gateUp->ptr, rows), stream));
                ok = ok && gemm(m, e, projection(m, m.pending->ptr, *m.act, kInter, *w.down, kHidden, kInter), stream);
            }
        }
    }
    if (!v.lmHead) return ok;
    if (v.lmHeadNorm) return ok && normedProjection(m, v, kLmHead, m.logits->ptr, *m.lmHead, kVocab, *m.finalNorm, stream);
    gpu::SkinnyGemmParams head = projection(m, m.logits->ptr, *m.h, kHidden, *m.lmHead, kVocab, kHidden);
    head.outFloat = true;
    run(addRmsNorm(m, *m.finalNorm, stream));
    return ok && gemm(m, engineOf(v, rows, kLmHead), head, stream);
}

// The runner's chain, then each variant.
std::vector<Variant> variants(int rows)
{
    std::vector<Variant> v{{"as the runner launches it"}};
    auto add = [&](const std::string& name, auto change) {
        Variant x = v[0];
        x.name = name;
        change(x);
        v.push_back(x);
    };
    if (rows > 2) {
        add("tensor cores, prologues inside", [](Variant& x) { x.projections = Projections::TensorCores; });
        add("tensor cores, norm and SiLU-mul kernels", [](Variant& x) { x.projections = Projections::TensorCoresApart; });
        const char* names[] = {"qkv", "o", "gate/up", "down"};
        for (int w = kQkvProj; w <= kDownProj; ++w)
            add(std::string("tensor cores (apart) for ") + names[w] + " only", [&](Variant& x) { x.tcApart = 1u << w; });
        if (rows >= 8) {
            add("warp groups, norm and SiLU-mul kernels", [](Variant& x) { x.projections = Projections::WarpGroupsApart; });
            for (int w = kQkvProj; w <= kDownProj; ++w)
                add(std::string("warp groups for ") + names[w] + " only", [&](Variant& x) { x.wgApart = 1u << w; });
            add("warp groups for qkv, gate/up and down", [](Variant& x) {
                x.wgApart = 1u << kQkvProj | 1u << kGateUpProj | 1u << kDownProj;
            });
            add("warp groups for the LM head", [](Variant& x) { x.wgApart = 1u << kLmHead; });
            add("warp groups for o, down and the LM head", [](Variant& x) {
                x.wgApart = 1u << kOProj | 1u << kDownProj | 1u << kLmHead;
            });
        }
    }
    if (rows > 2) {  // the rotation inside attention (the runner's choice per graph size since session 49)
        add("rotation inside attention", [](Variant& x) { x.rotationInside = true; });
        // Beside "tensor cores (apart) for qkv only" and "warp groups for qkv only": does the fusion's gain
        // depend on the kernel before it (cuBLAS launches without PDL; ours load weights before their wait)?
        add("rotation inside attention, qkv on tensor cores apart", [](Variant& x) {
            x.rotationInside = true;
            x.tcApart = 1u << kQkvProj;
        });
        if (rows >= 8)
            add("rotation inside attention, qkv on warp groups", [](Variant& x) {
                x.rotationInside = true;
                x.wgApart = 1u << kQkvProj;
            });
    }
    if (rows <= 4)  // the other splits of a few sequences' attention, in the chain (-1: 64-key partitions)
        for (int parts : rows == 1 ? std::vector<int>{8, 4, -1} : rows == 2 ? std::vector<int>{16, 8} : std::vector<int>{16, 8, -1})
            if (parts < 0 || (gpu::pagedDecodeClusterPartitionLen(kGraphContext, parts) <= gpu::kDecodeMaxPartition &&
                              gpu::pagedDecodeClusterFits(gpu::DType::F16, parts, kQHeads / kKvHeads, kHeadDim, kGraphContext)))
                add(parts < 0 ? "attention in 64-key partitions" : "attention in clusters of " + std::to_string(parts),
                    [&](Variant& x) { x.attentionCluster = parts; });
    if (rows > 2)  // the prototype int8 KV cache (bench_int8_kv checks its kernels), with the runner's projections
        for (int times : {1, 2}) {
            add("int8 KV cache (prototype), row partitions x" + std::to_string(times), [&](Variant& x) { x.int8Kv = times; });
            add("int8 KV cache (prototype) x" + std::to_string(times) + ", rotation inside attention", [&](Variant& x) {
                x.int8Kv = times;
                x.rotationInside = true;
            });
            if (rows >= 8 && rows <= 48)
                add("int8 KV cache (prototype) x" + std::to_string(times) + ", o, down, LM head on warp groups", [&](Variant& x) {
                    x.int8Kv = times;
                    x.wgApart = 1u << kOProj | 1u << kDownProj | 1u << kLmHead;
                });
        }
    if (rows > 2) {  // its integer logits
        add("int8 KV cache (prototype) x1, integer logits", [](Variant& x) { x.int8Kv = 1, x.int8Dp2a = true; });
        if (rows >= 8 && rows <= 48)
            add("int8 KV cache (prototype) x1, integer logits, o, down, LM head on warp groups", [](Variant& x) {
                x.int8Kv = 1;
                x.int8Dp2a = true;
                x.wgApart = 1u << kOProj | 1u << kDownProj | 1u << kLmHead;
            });
        for (int times : {1, 2}) {  // and both its products on the tensor cores
            add("int8 KV cache (prototype) x" + std::to_string(times) + ", tensor cores", [&](Variant& x) {
                x.int8Kv = times;
                x.int8TensorCores = true;
            });
            if (rows >= 8 && rows <= 48)
                add("int8 KV cache (prototype) x" + std::to_string(times) + ", tensor cores, o, down, LM head on warp groups",
                    [&](Variant& x) {
                        x.int8Kv = times;
                        x.int8TensorCores = true;
                        x.wgApart = 1u << kOProj | 1u << kDownProj | 1u << kLmHead;
                    });
            add("int8 KV cache (prototype) x" + std::to_string(times) + ", tensor cores, 2 blocks in flight", [&](Variant& x) {
                x.int8Kv = times;
                x.int8TensorCores = true;
                x.int8BlocksInFlight = 2;
            });
        }
    }
    add("final norm inside the LM head", [](Variant& x) { x.lmHeadNorm = true; });
    add("without QK-norm/RoPE (K/V write)", [](Variant& x) { x.rope = false; });
    add("without attention", [](Variant& x) { x.attention = false; });
    add("without the o projection", [](Variant& x) { x.oProj = false; });
    add("without the MLP", [](Variant& x) { x.mlp = false; });
    add("without the LM head", [](Variant& x) { x.lmHead = false; });
    add("projections only (no rope, attention)", [](Variant& x) { x.rope = x.attention = false; });
    if (rows > 2) {
        add("without the norm kernels (qkv, gate/up)", [](Variant& x) { x.normKernels = false; });
        add("without the SiLU-mul kernel", [](Variant& x) { x.siluMulKernel = false; });
        add("without the norm and SiLU-mul kernels", [](Variant& x) { x.normKernels = x.siluMulKernel = false; });
        if (rows >= 8)
            add("o, down, LM head on warp groups, without norm and SiLU-mul kernels", [](Variant& x) {
                x.wgApart = 1u << kOProj | 1u << kDownProj | 1u << kLmHead;
                x.normKernels = x.siluMulKernel = false;
            });
    }
    return v;
}

// --- --partition: the decode step and the tower's product on disjoint SMs (green contexts) ---

void checkCu(CUresult r, const char* what)
{
    if (r == CUDA_SUCCESS) return;
    const char* msg = nullptr;
    cuGetErrorString(r, &msg);
    std::fprintf(stderr, "bench_decode_step: %s: %s\n", what, msg ? msg : "?");
    std::exit(1);
}

// A green context over `sms`, current while work is queued on its stream, with a cuBLAS handle and two
// timing events of its own.
struct Part {
    CUgreenCtx green = nullptr;
    CUcontext ctx = nullptr;
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    unsigned smCount = 0;
    explicit Part(CUdevResource sms, CUdevice dev)
    {
        smCount = sms.sm.smCount;
        CUdevResourceDesc desc;
        checkCu(cuDevResourceGenerateDesc(&desc, &sms, 1), "resource descriptor");
        checkCu(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "green context");
        checkCu(cuCtxFromGreenCtx(&ctx, green), "green context's CUcontext");
        use();
        CUstream s;
        checkCu(cuGreenCtxStreamCreate(&s, green, CU_STREAM_NON_BLOCKING, 0), "green stream");
        stream = s;
        if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) {
            std::fprintf(stderr, "bench_decode_step: cuBLAS did not start in a green context\n");
            std::exit(1);
        }
        check(cudaEventCreate(&e0), "event");
        check(cudaEventCreate(&e1), "event");
    }
    ~Part()
    {
        use();
        cublasDestroy(blas);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        cuStreamDestroy(stream);
        cuCtxSetCurrent(nullptr);  // every later call sets the context it needs
        cuGreenCtxDestroy(green);
    }
    Part(const Part&) = delete;
    Part& operator=(const Part&) = delete;
    void use() const { checkCu(cuCtxSetCurrent(ctx), "set context"); }
    float elapsedMs() const
    {
        use();
        check(cudaEventSynchronize(e1), "part");
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        return ms;
    }
};

// The tower's fc1 over 8 pages as at::linear runs it: out[32768, 4304] = x[32768, 1152] w[4304, 1152]^T.
struct TowerProduct {
    static constexpr int kRows = 32768, kIn = 1152, kOut = 4304;
    std::unique_ptr<Buffer> x = halves(size_t(kRows) * kIn, 77, 1.0f), w = halves(size_t(kOut) * kIn, 78, 0.05f),
                            out = std::make_unique<Buffer>(size_t(kRows) * kOut * 2);
    static double flops() { return 2.0 * kRows * kIn * kOut; }
    void run(cublasHandle_t blas) const
    {
        gpu::SkinnyGemmParams p;
        p.out = out->ptr;
        p.x = x->ptr;
        p.weight = w->ptr;
        p.rows = kRows;
        p.n = p.outStride = kOut;
        p.k = p.xStride = p.weightStride = kIn;
        if (!libraryLinear(blas, p)) {
            std::fprintf(stderr, "bench_decode_step: cuBLAS product failed\n");
            std::exit(1);
        }
    }
};

// The runner's chain for m captured on `stream` (in the context current now).
cudaGraphExec_t captureStep(Model& m, cudaStream_t stream, int numSms)
{
    cudaGraph_t graph;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    const bool ok = step(m, Variant{"as the runner launches it"}, stream, numSms);
    check(cudaStreamEndCapture(stream, &graph), "capture");
    if (!ok) {
        std::fprintf(stderr, "bench_decode_step: a launch failed in the captured step\n");
        std::exit(1);
    }
    cudaGraphExec_t exec;
    check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    cudaGraphDestroy(graph);
    return exec;
}

// Queues `count` calls of `one` (a decode step's graph replay, or a tower product) on a part between its
// events; timedAlone() runs 3 calls to warm up, then 20, and returns milliseconds a call.
void queueTimed(const Part& p, int count, const std::function<void()>& one)
{
    p.use();
    check(cudaEventRecord(p.e0, p.stream), "event");
    for (int i = 0; i < count; ++i) one();
    check(cudaEventRecord(p.e1, p.stream), "event");
}
double timedAlone(const Part& p, const std::function<void()>& one)
{
    queueTimed(p, 3, one);
    queueTimed(p, 20, one);
    return p.elapsedMs() / 20;
}
std::function<void()> replayOn(const Part& p, cudaGraphExec_t exec)
{
    return [&p, exec] { check(cudaGraphLaunch(exec, p.stream), "replay"); };
}
std::function<void()> productOn(const Part& p, const TowerProduct& t)
{
    return [&p, &t] { t.run(p.blas); };
}

int partitionProbe(const std::vector<int>& batches, const std::vector<int>& smCounts, int context, int numSms)
{
    checkCu(cuInit(0), "cuInit");
    CUdevice dev;
    checkCu(cuDeviceGet(&dev, 0), "device");
    CUcontext primary;
    checkCu(cuCtxGetCurrent(&primary), "primary context");
    CUdevResource all;
    checkCu(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM), "SM resource");
    std::printf("# bench_decode_step --partition: context %d, float16; %u SMs, partitions of at least %u, aligned to %u\n\n",
                context, all.sm.smCount, all.sm.minSmPartitionSize, all.sm.smCoscheduledAlignment);
    const TowerProduct tower;
    // The whole card, for reference: the product's rate and each batch's step.
    Part whole(all, dev);
    const double wholeTflops = tower.flops() / (timedAlone(whole, productOn(whole, tower)) * 1e-3) / 1e12;
    std::printf("tower product (fc1, 8 pages) on the whole card: %.0f TFLOP/s\n\n", wholeTflops);
    std::printf("| sequences | decode SMs | product SMs | step alone, whole card us | step alone, its SMs us | step beside the product us | "
                "product alone, its SMs TFLOP/s | product beside the steps TFLOP/s | both at once, work a unit of time |\n"
                "|---|---|---|---|---|---|---|---|---|\n");
    for (int rows : batches) {
        checkCu(cuCtxSetCurrent(primary), "set context");
        Model m = makeModel(rows, context);
        whole.use();
        m.blas = whole.blas;
        const cudaGraphExec_t wholeExec = captureStep(m, whole.stream, numSms);
        const double wholeStepUs = timedAlone(whole, replayOn(whole, wholeExec)) * 1000.0;
        for (int want : smCounts) {
            CUdevResource part, rest;
            unsigned groups = 1;
            if (cuDevSmResourceSplitByCount(&part, &groups, &all, &rest, 0, unsigned(want)) != CUDA_SUCCESS || groups < 1) {
                std::printf("| %d | %d | cannot split | | | | | | |\n", rows, want);
                continue;
            }
            Part decode(part, dev), vision(rest, dev);
            decode.use();
            m.blas = decode.blas;
            const cudaGraphExec_t exec = captureStep(m, decode.stream, int(decode.smCount));  // attention's split for its SMs
            const auto replay = replayOn(decode, exec), product = productOn(vision, tower);
            const double stepUs = timedAlone(decode, replay) * 1000.0;
            const double productMs = timedAlone(vision, product);
            // Both at once: 20 steps inside a longer run of products, then 20 products inside a longer run of steps.
            queueTimed(vision, int(std::ceil(1.5 * 20 * stepUs / 1000.0 / productMs)) + 2, product);
            queueTimed(decode, 20, replay);
            const double besideUs = decode.elapsedMs() * 1000.0 / 20;
            (void)vision.elapsedMs();
            queueTimed(decode, int(std::ceil(1.5 * 20 * productMs * 1000.0 / stepUs)) + 2, replay);
            queueTimed(vision, 20, product);
            const double besideMs = vision.elapsedMs() / 20;
            (void)decode.elapsedMs();
            // The work both parts do in a unit of time, each as a fraction of its rate alone on the whole card:
            // 1 is what running them one after the other gives; above 1, the overlap pays (at a mix of the
            // two that keeps both parts busy).
            const double besideTflops = tower.flops() / (besideMs * 1e-3) / 1e12;
            const double work = wholeStepUs / besideUs + besideTflops / wholeTflops;
            std::printf("| %d | %u | %u | %.1f | %.1f | %.1f | %.0f | %.0f | %.2f |\n", rows, decode.smCount,
                        vision.smCount, wholeStepUs, stepUs, besideUs, tower.flops() / (productMs * 1e-3) / 1e12,
                        besideTflops, work);
            std::fflush(stdout);
            decode.use();
            cudaGraphExecDestroy(exec);
        }
        whole.use();
        cudaGraphExecDestroy(wholeExec);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    std::vector<int> batches{1, 2};
    int context = 1076, rounds = 5;
    std::vector<int> partition;  // --partition: decode SM counts to try
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--batches") && i + 1 < argc) batches = bench::parseList(argv[++i]);
        else if (!std::strcmp(argv[i], "--context") && i + 1 < argc) context = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--partition") && i + 1 < argc) partition = bench::parseList(argv[++i]);
    }
    int numSms = 0;
    check(cudaDeviceGetAttribute(&numSms, cudaDevAttrMultiProcessorCount, 0), "attribute");
    if (!partition.empty()) {
        check(cudaFree(nullptr), "context");  // the primary context, current, before the green ones
        return partitionProbe(batches, partition, context, numSms);
    }
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    cublasHandle_t blas;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "bench_decode_step: cuBLAS did not start\n");
        return 1;
    }
    const double bw = bench::copyBandwidth();
    const double weightBytes = 2.0 * (double(kLayers) * (double(kQkv) * kHidden + double(kHidden) * kQHeads * kHeadDim +
                                                          3.0 * kInter * kHidden) +
                                      double(kVocab) * kHidden);
    std::printf("# bench_decode_step: context %d, float16, %d layers, every weight from DRAM\n\n"
                "copy bandwidth %.0f GB/s; weights %.2f GB, %.1f us at copy bandwidth\n\n",
                context, kLayers, bw / 1e9, weightBytes / 1e9, weightBytes / bw * 1e6);
    bool failed = false;
    for (int rows : batches) {
        if (rows < 1 || rows > kMaxRows) continue;
        Model m = makeModel(rows, context);
        m.blas = blas;
        const double kvBytes = 2.0 * rows * context * kKvHeads * kHeadDim * 2 * kLayers;
        const std::vector<Variant> vs = variants(rows);
        // Each variant captured once; the graphs then replay in rounds, every variant in each round, so a
        // drift of the card's clocks spreads over all of them. Per round: 10 replays, the mean.
        std::vector<cudaGraphExec_t> execs;
        for (const Variant& v : vs) {
            cudaGraph_t graph;
            check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
            const bool ok = step(m, v, stream, numSms);
            check(cudaStreamEndCapture(stream, &graph), "capture");
            cudaGraphExec_t exec = nullptr;
            if (ok) check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
            else cudaGetLastError();
            cudaGraphDestroy(graph);
            execs.push_back(exec);
        }
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        std::vector<std::vector<float>> us(vs.size());
        for (int round = 0; round <= rounds; ++round)
            for (size_t i = 0; i < vs.size(); ++i) {
                if (!execs[i]) continue;
                constexpr int kReplays = 10;
                check(cudaEventRecord(e0, stream), "event");
                for (int r = 0; r < kReplays; ++r) check(cudaGraphLaunch(execs[i], stream), vs[i].name.c_str());
                check(cudaEventRecord(e1, stream), "event");
                check(cudaEventSynchronize(e1), vs[i].name.c_str());
                float ms = 0;
                cudaEventElapsedTime(&ms, e0, e1);
                if (round > 0) us[i].push_back(ms * 1000.0f / kReplays);  // round 0 warms up
            }
        // The logits of the full chain: finite, or a kernel wrote garbage.
        check(cudaGraphLaunch(execs[0], stream), "replay");
        check(cudaStreamSynchronize(stream), "replay");
        std::vector<float> logits(size_t(rows) * kVocab);
        check(cudaMemcpy(logits.data(), m.logits->ptr, logits.size() * 4, cudaMemcpyDeviceToHost), "download");
        bool finite = std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); });
        for (size_t i = 0; i < vs.size(); ++i)  // the prototype int8 chains too (their kernels: bench_int8_kv)
            if (vs[i].int8Kv > 0 && execs[i]) {
                check(cudaGraphLaunch(execs[i], stream), "replay");
                check(cudaStreamSynchronize(stream), "replay");
                check(cudaMemcpy(logits.data(), m.logits->ptr, logits.size() * 4, cudaMemcpyDeviceToHost), "download");
                finite = finite && std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); });
            }
        failed = failed || !finite;
        std::printf("## %d sequence%s (K/V %.1f MB a step, %.1f us at copy bandwidth)\n\n"
                    "| variant | us per step, median of %d rounds | min | vs the runner's |\n|---|---|---|---|\n",
                    rows, rows > 1 ? "s" : "", kvBytes / 1e6, kvBytes / bw * 1e6, rounds);
        double base = NAN;
        for (size_t i = 0; i < vs.size(); ++i) {
            if (!execs[i]) {
                std::printf("| %s | launch failed | | |\n", vs[i].name.c_str());
                failed = true;
                continue;
            }
            std::vector<float> t = us[i];
            std::sort(t.begin(), t.end());
            const double med = t[t.size() / 2];
            if (i == 0) base = med;
            std::printf("| %s | %.1f | %.1f | %+.1f |\n", vs[i].name.c_str(), med, t.front(), med - base);
            cudaGraphExecDestroy(execs[i]);
        }
        std::printf("\nlogits %s\n\n", finite ? "finite" : "NOT FINITE");
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }
    cublasDestroy(blas);
    return failed ? 1 : 0;
}
