// bench_persistent_decode: the persistent batch-1 decode step (gpu/kernels/persistent_decode.cuh) alone,
// on a random decoder of HunyuanOCR's shapes (24 layers, hidden 1024, 16 / 8 heads of 128, intermediate
// 3584, vocabulary 120818), without libtorch: the step's time at several contexts against the bytes it
// must read (every weight once plus the context's K/V) over the device-to-device copy bandwidth measured
// in the same run; the same with every wait between CTAs skipped (wrong results: what the waits cost);
// and where a step's time goes, from the kernel's clock64() trace of every stage of every CTA.
// Only the CUDA runtime: it builds with nvcc alone (here or on the GPU machine) and runs anywhere the
// driver does:
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_persistent_decode.cu \
//        gpu/kernels/persistent_decode.cu gpu/kernels/head_parallel_decode.cu gpu/kernels/skinny_gemm*.cu \
//        gpu/ref/*.cpp -o build-gpu/bench_persistent_decode
// (or the CMake target of the same name in CUDA builds). It first checks the kernel against the CPU
// reference (2 layers of the real shapes, both dtypes; exit code 1 on a mismatch).
//   bench_persistent_decode [--layers 24] [--reps 20]
//   bench_persistent_decode --head-parallel [--layers 24] [--contexts 1,1076,...]: the same check for the head-parallel kernels
//     (head_parallel_decode.cuh; contexts 1 to 4100), then the step's time in a CUDA graph beside the
//     persistent kernel's. LECTOR_HP_CLUSTER_POLICY=0 / 1 places the attention clusters by the default /
//     spread policy instead of load balancing; LECTOR_HP_FIRST_PDL=0 launches layer 0 after the work before
//     it.
//   bench_persistent_decode --graph-loop: 16 head-parallel steps a CUDA graph, unrolled against a while node
//     around one step (graphLoop below).
//   bench_hp_trace --trace [--layers 24] [--contexts 1024,1040,...]: this source and the head-parallel
//     kernels built with LECTOR_HP_TRACE (bash bench/gpu/build_torch_free.sh bench_hp_trace): where a
//     head-parallel layer's time goes at each context, stage by stage, from the kernels' own stamps
//     (headParallelTrace below).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/head_parallel_decode.cuh"
#include "gpu/kernels/persistent_decode.cuh"
#include "gpu/ref/persistent_decode_ref.h"

namespace gpu = lector::gpu;
namespace bench = lector::bench;

namespace {

using bench::check;
using Buffer = bench::DeviceBuffer;

// Uniform values in [-scale, scale) + offset from a hash of the index (no zeros, no repeats).
template <class T>
__global__ void fillKernel(T* out, size_t n, uint32_t seed, float scale, float offset)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed * 2246822519u ^ static_cast<uint32_t>(i >> 32);
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        const float u = (h >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
        if constexpr (sizeof(T) == 2 && std::is_same_v<T, __half>) out[i] = __float2half_rn(u * scale + offset);
        else out[i] = __float2bfloat16_rn(u * scale + offset);
    }
}

template <class T>
void fill(Buffer& b, uint32_t seed, float scale, float offset = 0.0f)
{
    fillKernel<T><<<1024, 256>>>(static_cast<T*>(b.ptr), b.bytes / sizeof(T), seed, scale, offset);
    check(cudaGetLastError(), "fill");
}

struct Model {
    gpu::PersistentDecodeParams p;
    std::vector<Buffer*> owned;
    Buffer* table = nullptr;
    Buffer* blockTable = nullptr;
    Buffer* inputs64 = nullptr;  // token, positions[4], slot
    Buffer* contextLen = nullptr;
    double weightBytes = 0;
    int blocks = 0;
    ~Model()
    {
        for (Buffer* b : owned) delete b;
    }
    Buffer* alloc(size_t bytes)
    {
        owned.push_back(new Buffer(bytes));
        return owned.back();
    }
};

template <class T>
void build(Model& m, gpu::DType dtype, int layers, int maxContext)
{
    const int hidden = 1024, inter = 3584, hq = 16, hk = 8, d = 128, vocab = 120818;
    gpu::PersistentDecodeParams& p = m.p;
    p.dtype = dtype;
    p.numLayers = layers;
    p.hidden = hidden;
    p.intermediate = inter;
    p.numQHeads = hq;
    p.numKvHeads = hk;
    p.headDim = d;
    p.vocab = vocab;
    p.scale = 1.0f / std::sqrt(float(d));
    m.blocks = (maxContext + 1 + 15) / 16;
    uint32_t seed = 1;
    auto matrix = [&](size_t out, size_t in) {
        Buffer* b = m.alloc(out * in * sizeof(T));
        fill<T>(*b, seed++, 1.7f / std::sqrt(float(in)));
        m.weightBytes += double(b->bytes);
        return b->ptr;
    };
    auto norm = [&](size_t n) {
        Buffer* b = m.alloc(n * sizeof(T));
        fill<T>(*b, seed++, 0.1f, 1.0f);
        return b->ptr;
    };
    std::vector<const void*> table;
    for (int l = 0; l < layers; ++l) {
        const void* w[gpu::kPlCount];
        w[gpu::kPlInputNorm] = norm(hidden);
        w[gpu::kPlQkv] = matrix(size_t(hq + 2 * hk) * d, hidden);
        w[gpu::kPlQueryNorm] = norm(d);
        w[gpu::kPlKeyNorm] = norm(d);
        w[gpu::kPlO] = matrix(hidden, size_t(hq) * d);
        w[gpu::kPlPostNorm] = norm(hidden);
        w[gpu::kPlGateUp] = matrix(2 * size_t(inter), hidden);
        w[gpu::kPlDown] = matrix(hidden, inter);
        for (int kv : {gpu::kPlKeyCache, gpu::kPlValueCache}) {
            Buffer* b = m.alloc(size_t(m.blocks) * 16 * hk * d * sizeof(T));
            fill<T>(*b, seed++, 1.0f);
            w[kv] = b->ptr;
        }
        table.insert(table.end(), std::begin(w), std::end(w));
    }
    Buffer* embed = m.alloc(size_t(vocab) * hidden * sizeof(T));
    fill<T>(*embed, seed++, 1.0f);
    p.embed = embed->ptr;
    p.finalNorm = norm(hidden);
    p.lmHead = matrix(vocab, hidden);
    m.table = m.alloc(table.size() * sizeof(void*));
    check(cudaMemcpy(m.table->ptr, table.data(), m.table->bytes, cudaMemcpyHostToDevice), "table");
    p.layers = static_cast<const void* const*>(m.table->ptr);
    const int maxPos = 8192;
    const std::vector<float> cosSin = bench::ropeTable(maxPos, d);
    Buffer* cs = m.alloc(cosSin.size() * 4);
    check(cudaMemcpy(cs->ptr, cosSin.data(), cs->bytes, cudaMemcpyHostToDevice), "cosSin");
    p.cosSin = static_cast<const float*>(cs->ptr);
    p.maxPosition = maxPos;
    p.numPosAxes = 4;
    for (int a = 0; a < 4; ++a) p.sections[a] = 16;
    p.numCacheBlocks = m.blocks;
    // A shuffled block table.
    std::vector<int32_t> ids(m.blocks);
    for (int i = 0; i < m.blocks; ++i) ids[i] = i;
    for (int i = m.blocks - 1; i > 0; --i) std::swap(ids[i], ids[(i * 7919 + 13) % (i + 1)]);
    m.blockTable = m.alloc(ids.size() * 4);
    check(cudaMemcpy(m.blockTable->ptr, ids.data(), m.blockTable->bytes, cudaMemcpyHostToDevice), "block table");
    p.blockTable = static_cast<const int32_t*>(m.blockTable->ptr);
    m.inputs64 = m.alloc(6 * 8);
    m.contextLen = m.alloc(4);
    p.tokenId = static_cast<const int64_t*>(m.inputs64->ptr);
    p.positions = p.tokenId + 1;
    p.positionsAxisStride = 1;
    p.slot = p.tokenId + 5;
    p.contextLen = static_cast<const int32_t*>(m.contextLen->ptr);
    p.numCtas = gpu::persistentDecodeCtas(0);
    Buffer* logits = m.alloc(size_t(vocab) * 4);
    p.logits = static_cast<float*>(logits->ptr);
    Buffer* ws = m.alloc(size_t(gpu::persistentDecodeWorkspaceBytes(p)));
    p.workspace = ws->ptr;
    Buffer* counters = m.alloc(size_t(gpu::persistentDecodeCounterWords(layers, hk)) * 4);
    check(cudaMemset(counters->ptr, 0, counters->bytes), "counters");
    p.counters = static_cast<uint32_t*>(counters->ptr);
    m.weightBytes += 0;  // the embedding row (2 KB) is not counted
    check(cudaDeviceSynchronize(), "build");
}

// Sets the step's inputs for a context of `context` keys (the new token the last).
void setContext(Model& m, int context)
{
    std::vector<int32_t> ids(m.blocks);
    check(cudaMemcpy(ids.data(), m.blockTable->ptr, ids.size() * 4, cudaMemcpyDeviceToHost), "ids");
    const int newest = context - 1;
    const int64_t in[6] = {4242, newest, newest, newest, newest, int64_t(ids[newest / 16]) * 16 + newest % 16};
    check(cudaMemcpy(m.inputs64->ptr, in, sizeof in, cudaMemcpyHostToDevice), "inputs");
    check(cudaMemcpy(m.contextLen->ptr, &context, 4, cudaMemcpyHostToDevice), "context");
}

double medianMs(const gpu::PersistentDecodeParams& p, int reps)
{
    return bench::medianLaunchMs([&] { check(gpu::launchPersistentDecode(p, nullptr), "launch"); }, reps);
}

// Where the time goes: per stage, the mean over layers of the mean (and the slowest) CTA's wait and work.
void traceTable(Model& m, double clockGhz)
{
    gpu::PersistentDecodeParams p = m.p;
    const int stamps = gpu::persistentDecodeTraceStamps(p.numLayers), ctas = p.numCtas, L = p.numLayers;
    Buffer trace(size_t(ctas) * stamps * 8);
    check(cudaMemset(trace.ptr, 0, trace.bytes), "trace");
    p.trace = static_cast<long long*>(trace.ptr);
    check(gpu::launchPersistentDecode(p, nullptr), "traced launch");
    check(cudaDeviceSynchronize(), "traced step");
    std::vector<long long> t(size_t(ctas) * stamps);
    check(cudaMemcpy(t.data(), trace.ptr, trace.bytes, cudaMemcpyDeviceToHost), "trace copy");
    auto at = [&](int c, int l, int e) { return double(t[size_t(c) * stamps + 1 + size_t(l) * gpu::kPersistentTraceEvents + e]); };
    struct Part { const char* name; int from, to; bool attendersOnly, mergersOnly; };
    using E = gpu::PersistentTraceEvent;
    const Part parts[] = {
        {"wait: previous layer's down rows", E::kTraceQkvWait, E::kTraceQkvReady, false, false},
        {"work: add + RMSNorm, QKV rows", E::kTraceQkvReady, E::kTraceQkvDone, false, false},
        {"wait: every CTA's QKV rows", E::kTraceQkvDone, E::kTraceAttnReady, true, false},
        {"work: RoPE, attention partition", E::kTraceAttnReady, E::kTraceAttnPartial, true, false},
        {"work: merge (last partition of a head)", E::kTraceAttnPartial, E::kTraceAttnMerged, false, true},
        {"wait: every head merged (from QKV done)", E::kTraceQkvDone, E::kTraceOReady, false, false},
        {"work: O rows", E::kTraceOReady, E::kTraceODone, false, false},
        {"wait: every CTA's O rows", E::kTraceODone, E::kTraceGateUpReady, false, false},
        {"work: add + RMSNorm, gate/up rows", E::kTraceGateUpReady, E::kTraceGateUpDone, false, false},
        {"wait: every CTA's gate/up rows", E::kTraceGateUpDone, E::kTraceDownReady, false, false},
        {"work: down rows", E::kTraceDownReady, E::kTraceDownDone, false, false},
        {"(layer: QKV wait to down done)", E::kTraceQkvWait, E::kTraceDownDone, false, false},
    };
    std::printf("\n| stage (context set above, per layer, us at %.2f GHz) | mean CTA | slowest CTA |\n|---|---|---|\n", clockGhz);
    for (const Part& part : parts) {
        double sum = 0, worst = 0;
        int n = 0;
        for (int l = 1; l < L; ++l) {  // layer 0 starts cold
            double layerWorst = 0;
            for (int c = 0; c < ctas; ++c) {
                const double a = at(c, l, part.from), b = at(c, l, part.to);
                if (a == 0 || b == 0) continue;  // stage not taken by this CTA
                const double us = (b - a) / (clockGhz * 1e3);
                if (part.mergersOnly && us <= 0) continue;
                sum += us;
                ++n;
                layerWorst = std::max(layerWorst, us);
            }
            worst += layerWorst;
        }
        std::printf("| %s | %.2f | %.2f |\n", part.name, n ? sum / n : 0.0, worst / std::max(L - 1, 1));
    }
    double total = 0, lm = 0;
    for (int c = 0; c < ctas; ++c) {
        const double start = double(t[size_t(c) * stamps]), lmReady = double(t[size_t(c) * stamps + stamps - 2]),
                     end = double(t[size_t(c) * stamps + stamps - 1]);
        total = std::max(total, (end - start) / (clockGhz * 1e3));
        lm = std::max(lm, (end - lmReady) / (clockGhz * 1e3));
    }
    std::printf("| whole step (slowest CTA, start to LM head done) | %.1f | |\n| LM head (final norm + rows) | %.1f | |\n", total, lm);
}

// The kernel against the CPU reference (gpu/ref) on this model: two steps, the second attending to the
// first one's key. Returns false (and prints) when the logits differ by more than rounding.
using Launch = cudaError_t (*)(const gpu::PersistentDecodeParams&, cudaStream_t);

bool checkAgainstReference(Model& m, int context, Launch launch = &gpu::launchPersistentDecode, const char* name = "")
{
    // Host copies of every device buffer; device addresses in the tables map to them.
    std::map<const void*, std::vector<unsigned char>> host;
    for (Buffer* b : m.owned) {
        std::vector<unsigned char>& h = host[b->ptr];
        h.resize(b->bytes);
        check(cudaMemcpy(h.data(), b->ptr, b->bytes, cudaMemcpyDeviceToHost), "host copy");
    }
    auto onHost = [&](const void* d) -> void* { return host.at(d).data(); };
    std::vector<const void*> table(size_t(m.p.numLayers) * gpu::kPlCount);
    check(cudaMemcpy(table.data(), m.table->ptr, table.size() * sizeof(void*), cudaMemcpyDeviceToHost), "table");
    for (const void*& t : table) t = onHost(t);
    gpu::PersistentDecodeParams r = m.p;
    r.layers = table.data();
    r.embed = onHost(m.p.embed);
    r.finalNorm = onHost(m.p.finalNorm);
    r.lmHead = onHost(m.p.lmHead);
    r.cosSin = static_cast<const float*>(onHost(m.p.cosSin));
    r.blockTable = static_cast<const int32_t*>(onHost(m.p.blockTable));
    std::vector<float> want(m.p.vocab), got(m.p.vocab);
    r.logits = want.data();
    bool ok = true;
    for (int k = 0; k < 2; ++k) {
        setContext(m, context + k);
        check(cudaMemcpy(onHost(m.inputs64->ptr), m.inputs64->ptr, m.inputs64->bytes, cudaMemcpyDeviceToHost), "inputs");
        check(cudaMemcpy(onHost(m.contextLen->ptr), m.contextLen->ptr, 4, cudaMemcpyDeviceToHost), "context");
        r.tokenId = static_cast<const int64_t*>(onHost(m.inputs64->ptr));
        r.positions = r.tokenId + 1;
        r.slot = r.tokenId + 5;
        r.contextLen = static_cast<const int32_t*>(onHost(m.contextLen->ptr));
        gpu::ref::persistentDecodeRef(r);
        check(launch(m.p, nullptr), "checked launch");
        check(cudaMemcpy(got.data(), m.p.logits, got.size() * 4, cudaMemcpyDeviceToHost), "logits");
        double err = 0, energy = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
            energy += double(want[i]) * want[i];
        }
        const double nmse = std::isfinite(err) ? err / std::max(energy, 1e-30) : INFINITY;
        const double bound = m.p.dtype == gpu::DType::F16 ? 1e-4 : 1e-3;
        std::printf("| check %s%s, %d layers, context %d | nmse %.3g (bound %.0e) | %s |\n", name, gpu::dtypeName(m.p.dtype),
                    m.p.numLayers, context + k, nmse, bound, nmse <= bound ? "ok" : "FAILED");
        ok = ok && nmse <= bound;
    }
    return ok;
}

// --head-parallel: the head-parallel kernels (head_parallel_decode.cuh) checked against the same CPU
// reference, then the step's time in a CUDA graph (as the runner replays it) beside the persistent kernel's.
int headParallel(int layers, const std::vector<int>& contexts)
{
    bool ok = true;
    std::printf("| check | error | |\n|---|---|---|\n");
    for (gpu::DType dtype : {gpu::DType::F16, gpu::DType::BF16}) {
        Model m;
        if (dtype == gpu::DType::F16) build<__half>(m, dtype, 2, 4200);
        else build<__nv_bfloat16>(m, dtype, 2, 4200);
        Buffer* ws = m.alloc(size_t(gpu::headParallelWorkspace().total));
        m.p.workspace = ws->ptr;
        for (int context : {1, 17, 1076, 1345, 4100}) ok = checkAgainstReference(m, context, &gpu::launchHeadParallelDecode, "head-parallel ") && ok;
    }
    const double copyBw = bench::copyBandwidth();
    const char* policy = std::getenv("LECTOR_HP_CLUSTER_POLICY");
    std::string variant = policy ? std::string(" (LECTOR_HP_CLUSTER_POLICY=") + policy + ")" : std::string();
    std::printf("\n## batch-1 decode step, %d layers, HunyuanOCR shapes, in a CUDA graph (4 steps a replay)%s; copy %.0f GB/s\n\n",
                layers, variant.c_str(), copyBw / 1e9);
    std::printf("| kernels | dtype, context | us a step | of copy bandwidth |\n|---|---|---|---|\n");
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    for (gpu::DType dtype : {gpu::DType::F16, gpu::DType::BF16}) {
        Model m;
        if (dtype == gpu::DType::F16) build<__half>(m, dtype, layers, 4200);
        else build<__nv_bfloat16>(m, dtype, layers, 4200);
        Buffer* ws = m.alloc(size_t(gpu::headParallelWorkspace().total));
        gpu::PersistentDecodeParams hp = m.p;
        hp.workspace = ws->ptr;
        for (int context : contexts) {
            if (dtype == gpu::DType::BF16 && context != 1076) continue;
            setContext(m, context);
            const double bytes = m.weightBytes + 2.0 * layers * context * 8 * 128 * 2;
            for (int kind = 0; kind < 2; ++kind) {
                if (kind == 0 && context != 1076) continue;
                const double us = bench::graphMicros(stream, 4, [&](int) {
                    return (kind == 0 ? gpu::launchPersistentDecode(m.p, stream) : gpu::launchHeadParallelDecode(hp, stream)) ==
                           cudaSuccess;
                });
                std::printf("| %s | %s, %d | %.1f | %.1f %% |\n", kind == 0 ? "persistent kernel" : "head-parallel",
                            gpu::dtypeName(dtype), context, us, 100.0 * bytes / (us * 1e-6) / copyBw);
            }
        }
    }
    return ok ? 0 : 1;
}

#ifdef LECTOR_HP_TRACE
// --trace: one float16 step of `layers` head-parallel layers in a CUDA graph (the last of its replays'
// stamps kept, head_parallel_decode.cuh) at each context; per stage the mean over layers 2 to L-3 of the
// mean and of the slowest CTA's time, in columns by context; then the kernels' boundaries on the
// globaltimer, and the CTAs that could not enter before the wait released (no room beside the kernel
// before). It answers, for instance, which stage pays the +24 us a step from context 1024 to 1040 (64 to 65
// keys a CTA, docs/perf.md calls 182-184).
int headParallelTrace(int layers, const std::vector<int>& contexts)
{
    constexpr int kCtas = gpu::kHpCtas, kMarks = gpu::kHpTraceMarks;
    if (layers < 6) {
        std::fprintf(stderr, "--trace needs at least 6 layers (layers 2 to L-3 are summed)\n");
        return 2;
    }
    Model m;
    build<__half>(m, gpu::DType::F16, layers, 4200);
    Buffer* ws = m.alloc(size_t(gpu::headParallelWorkspace().total));
    gpu::PersistentDecodeParams hp = m.p;
    hp.workspace = ws->ptr;
    const size_t n = size_t(layers) * 2 * kCtas * kMarks;
    Buffer trace(n * 8);
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    struct Column {
        int context = 0;
        double plainUs = 0, tracedUs = 0, layerUs = 0;
        std::vector<double> mean[2], worst[2];  // by mark
        double boundary[2] = {}, lead[2] = {}, span[2] = {}, exitSpread[2] = {}, late[2] = {}, lateDelay[2] = {};
        double afterPrev[2] = {}, afterPrevWait[2] = {};  // CTAs entering after the kernel before ended; their entry to wait
    };
    const int lastMark[2] = {gpu::kHpAttnDone, gpu::kHpMlpDone};
    std::vector<Column> columns;
    double nsPerCycle = 0;
    for (int context : contexts) {
        setContext(m, context);
        Column col;
        col.context = context;
        gpu::PersistentDecodeParams plain = hp;
        plain.trace = nullptr;
        col.plainUs = bench::graphMicros(stream, 4, [&](int) { return gpu::launchHeadParallelDecode(plain, stream) == cudaSuccess; });
        check(cudaMemset(trace.ptr, 0, trace.bytes), "trace");
        gpu::PersistentDecodeParams traced = hp;
        traced.trace = static_cast<long long*>(trace.ptr);
        col.tracedUs = bench::graphMicros(stream, 1, [&](int) { return gpu::launchHeadParallelDecode(traced, stream) == cudaSuccess; });
        std::vector<long long> t(n);
        check(cudaMemcpy(t.data(), trace.ptr, trace.bytes, cudaMemcpyDeviceToHost), "trace copy");
        auto at = [&](int l, int h, int c, int i) { return double(t[((size_t(l) * 2 + h) * kCtas + c) * kMarks + i]); };
        // ns a cycle: every CTA's globaltimer span over its clock64 span
        double ns = 0, cycles = 0;
        for (int l = 2; l < layers - 2; ++l)
            for (int h = 0; h < 2; ++h)
                for (int c = 0; c < kCtas; ++c) {
                    ns += at(l, h, c, gpu::kHpTraceExitNs) - at(l, h, c, gpu::kHpTraceEntryNs);
                    cycles += at(l, h, c, lastMark[h]) - at(l, h, c, 0);
                }
        nsPerCycle = ns / cycles;
        // A CTA's wait release on the globaltimer: its entry plus its cycles to the wait.
        auto released = [&](int l, int h, int c) {
            return at(l, h, c, gpu::kHpTraceEntryNs) + (at(l, h, c, 1) - at(l, h, c, 0)) * nsPerCycle;
        };
        auto meanRelease = [&](int l, int h) {
            double r = 0;
            for (int c = 0; c < kCtas; ++c) r += released(l, h, c);
            return r / kCtas;
        };
        const int counted = layers - 4;
        for (int h = 0; h < 2; ++h) {
            col.mean[h].assign(lastMark[h] + 1, 0.0);
            col.worst[h].assign(lastMark[h] + 1, 0.0);
            for (int l = 2; l < layers - 2; ++l) {
                for (int i = 1; i <= lastMark[h]; ++i) {
                    double sum = 0, worst = 0;
                    for (int c = 0; c < kCtas; ++c) {
                        const double us = (at(l, h, c, i) - at(l, h, c, i - 1)) * nsPerCycle / 1000.0;
                        sum += us, worst = std::max(worst, us);
                    }
                    col.mean[h][i] += sum / kCtas / counted;
                    col.worst[h][i] += worst / counted;
                }
                // boundary: the kernel before's last exit -> this one's mean wait release
                const int pl = h == 0 ? l - 1 : l, ph = 1 - h;
                double prevExit = 0, firstExit = INFINITY, lastExit = 0, lead = 0;
                for (int c = 0; c < kCtas; ++c) prevExit = std::max(prevExit, at(pl, ph, c, gpu::kHpTraceExitNs));
                const double release = meanRelease(l, h);
                int late = 0, after = 0;
                double delay = 0, afterWait = 0;
                for (int c = 0; c < kCtas; ++c) {
                    const double entry = at(l, h, c, gpu::kHpTraceEntryNs), exit = at(l, h, c, gpu::kHpTraceExitNs);
                    firstExit = std::min(firstExit, exit), lastExit = std::max(lastExit, exit);
                    lead += (release - entry) / 1000.0 / kCtas;
                    if (entry > release) ++late, delay += (entry - release) / 1000.0;
                    // its loads before the wait are then all on the step's critical path
                    if (entry > prevExit) ++after, afterWait += (released(l, h, c) - entry) / 1000.0;
                }
                col.afterPrev[h] += double(after) / counted;
                col.afterPrevWait[h] += (after ? afterWait / after : 0.0) / counted;
                col.boundary[h] += (release - prevExit) / 1000.0 / counted;
                col.lead[h] += lead / counted;
                col.span[h] += (lastExit - release) / 1000.0 / counted;
                col.exitSpread[h] += (lastExit - firstExit) / 1000.0 / counted;
                col.late[h] += double(late) / counted;
                col.lateDelay[h] += (late ? delay / late : 0.0) / counted;
            }
        }
        for (int l = 2; l < layers - 2; ++l) col.layerUs += (meanRelease(l + 1, 0) - meanRelease(l, 0)) / 1000.0 / counted;
        columns.push_back(col);
    }
    cudaStreamDestroy(stream);

    std::printf("## where a head-parallel layer's time goes (float16, %d layers, layers 2-%d; %.2f GHz from the clocks)\n\n",
                layers, layers - 3, 1.0 / nsPerCycle);
    std::printf("us, mean CTA / slowest CTA, each a mean over the layers; stage ends: head_parallel_decode.cuh\n\n| stage |");
    for (const Column& c : columns) std::printf(" context %d |", c.context);
    std::printf("\n|---|");
    for (size_t i = 0; i < columns.size(); ++i) std::printf("---|");
    std::printf("\n");
    auto row = [&](const char* name, auto value) {
        std::printf("| %s |", name);
        for (const Column& c : columns) std::printf(" %s |", value(c).c_str());
        std::printf("\n");
    };
    auto fmt = [](const char* f, double a, double b = NAN) {
        char buf[64];
        std::isnan(b) ? std::snprintf(buf, sizeof buf, f, a) : std::snprintf(buf, sizeof buf, f, a, b);
        return std::string(buf);
    };
    row("step, plain kernels (4 a replay)", [&](const Column& c) { return fmt("%.1f", c.plainUs); });
    row("step, traced", [&](const Column& c) { return fmt("%.1f", c.tracedUs); });
    row("a layer: attention wait release to the next's", [&](const Column& c) { return fmt("%.2f", c.layerUs); });
    const char* names[2][11] = {
        {"", "attention: entry -> PDL wait released", "add + RMSNorm", "qkv rows, pushed, cluster barrier", "RoPE + QK-norm, new K/V",
         "prefetched K/V landed", "warp 0's keys", "every warp's keys (block barrier)", "partial pushed, cluster barrier",
         "merged, o landed", "o rows, stored"},
        {"", "MLP: entry -> PDL wait released", "add + RMSNorm", "gate/up rows landed", "gate/up rows",
         "SiLU-mul pushed, cluster barrier", "down rows, stored"}};
    for (int h = 0; h < 2; ++h)
        for (int i = 1; i <= lastMark[h]; ++i)
            row(names[h][i], [&](const Column& c) { return fmt("%.2f / %.2f", c.mean[h][i], c.worst[h][i]); });
    for (int h = 0; h < 2; ++h) {
        const char* k = h == 0 ? "attention" : "MLP";
        std::printf("| %s: previous kernel's last exit -> wait released (mean CTA) |", k);
        for (const Column& c : columns) std::printf(" %.2f |", c.boundary[h]);
        std::printf("\n| %s: entered before the wait released by (mean CTA) |", k);
        for (const Column& c : columns) std::printf(" %.2f |", c.lead[h]);
        std::printf("\n| %s: CTAs entering after the release, of %d (their mean delay, us) |", k, kCtas);
        for (const Column& c : columns) std::printf(" %.1f (%.2f) |", c.late[h], c.lateDelay[h]);
        std::printf("\n| %s: CTAs entering after the kernel before ended, of %d (their entry -> wait, us) |", k, kCtas);
        for (const Column& c : columns) std::printf(" %.1f (%.2f) |", c.afterPrev[h], c.afterPrevWait[h]);
        std::printf("\n| %s: wait released -> last exit; first to last exit |", k);
        for (const Column& c : columns) std::printf(" %.2f; %.2f |", c.span[h], c.exitSpread[h]);
        std::printf("\n");
    }
    return 0;
}
#endif

// --graph-loop: what it costs to run a lone request's decode steps as a loop inside one CUDA graph (a
// while node, CUDA 12.4+) instead of unrolled (the runner's launches of 8 steps): a loop could end at a
// stop token on the device, where an unrolled launch runs its steps whatever they draw. The head-parallel
// step at context 1076 (float16, 24 layers) followed by a one-thread kernel standing in for the sampler's
// end: it counts the step and, in the loop, sets the condition (go on while fewer than `steps`, and not at
// `stopAt`). Reported: us a step, unrolled and looped, with and without PDL inside the loop's body (where
// capture refuses one, the error), and a loop told to stop after 5 steps.
__global__ void countStepKernel(unsigned* counter)
{
    gpu::gridDependencyWait();
    ++*counter;
}

__global__ void loopStepKernel(cudaGraphConditionalHandle handle, unsigned* counter, unsigned steps, unsigned stopAt)
{
    gpu::gridDependencyWait();
    const unsigned c = ++*counter;
    cudaGraphSetConditional(handle, c < steps && c != stopAt ? 1u : 0u);
}

// One launch of `exec`, the counter zeroed before each (bench::graphExecMs), and the steps it counted.
double launchMs(cudaGraphExec_t exec, cudaStream_t stream, unsigned* counter, unsigned& counted)
{
    const double ms = bench::graphExecMs(exec, stream, [&] { check(cudaMemsetAsync(counter, 0, sizeof(unsigned), stream), "memset"); });
    check(cudaMemcpy(&counted, counter, sizeof(unsigned), cudaMemcpyDeviceToHost), "counter");
    return ms;
}

int graphLoop(int layers)
{
    constexpr unsigned kSteps = 16;
    Model m;
    build<__half>(m, gpu::DType::F16, layers, 4200);
    Buffer* ws = m.alloc(size_t(gpu::headParallelWorkspace().total));
    Buffer* counter = m.alloc(sizeof(unsigned));
    auto* count = static_cast<unsigned*>(counter->ptr);
    gpu::PersistentDecodeParams hp = m.p;
    hp.workspace = ws->ptr;
    setContext(m, 1076);
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    std::printf("## %u head-parallel decode steps (%d layers, float16, context 1076) in one CUDA graph\n\n", kSteps, layers);
    std::printf("| graph | steps run | us a step |\n|---|---|---|\n");
    for (int round = 0; round < 2; ++round) {
        // Unrolled: the runner's launches.
        {
            cudaGraph_t g;
            check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
            for (unsigned k = 0; k < kSteps; ++k) {
                check(gpu::launchHeadParallelDecode(hp, stream), "step");
                check(gpu::launchKernel(countStepKernel, dim3(1), dim3(1), 0, stream, count), "count");
            }
            check(cudaStreamEndCapture(stream, &g), "capture");
            cudaGraphExec_t exec;
            check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
            unsigned counted = 0;
            const double ms = launchMs(exec, stream, count, counted);
            std::printf("| unrolled | %u | %.1f |\n", counted, ms * 1000.0 / counted);
            cudaGraphExecDestroy(exec);
            cudaGraphDestroy(g);
        }
        // Looped: a while node around one step; its body captured with and without PDL on the kernels.
        for (int stopAt : {0, 5}) {
            cudaGraph_t g;
            check(cudaGraphCreate(&g, 0), "graph");
            cudaGraphConditionalHandle handle;
            check(cudaGraphConditionalHandleCreate(&handle, g, 1, cudaGraphCondAssignDefault), "handle");
            cudaGraphNodeParams cp{};
            cp.type = cudaGraphNodeTypeConditional;
            cp.conditional.handle = handle;
            cp.conditional.type = cudaGraphCondTypeWhile;
            cp.conditional.size = 1;
            cudaGraphNode_t node;
            check(cudaGraphAddNode(&node, g, nullptr, nullptr, 0, &cp), "while node");
            cudaGraph_t body = cp.conditional.phGraph_out[0];
            check(cudaStreamBeginCaptureToGraph(stream, body, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal), "capture body");
            const cudaError_t stepErr = gpu::launchHeadParallelDecode(hp, stream);
            const cudaError_t loopErr = gpu::launchKernel(loopStepKernel, dim3(1), dim3(1), 0, stream, handle, count, kSteps,
                                                          static_cast<unsigned>(stopAt));
            const cudaError_t endErr = cudaStreamEndCapture(stream, &body);
            cudaGraphExec_t exec = nullptr;
            const cudaError_t instErr = stepErr || loopErr || endErr ? cudaSuccess : cudaGraphInstantiate(&exec, g, 0);
            if (stepErr || loopErr || endErr || instErr) {
                std::printf("| while node%s | refused: %s / %s / %s / %s | |\n", stopAt ? ", stop after 5" : "",
                            cudaGetErrorString(stepErr), cudaGetErrorString(loopErr), cudaGetErrorString(endErr),
                            cudaGetErrorString(instErr));
                cudaGetLastError();
            } else {
                unsigned counted = 0;
                const double ms = launchMs(exec, stream, count, counted);
                std::printf("| while node%s | %u | %.1f |\n", stopAt ? ", stop after 5" : "", counted, ms * 1000.0 / counted);
                cudaGraphExecDestroy(exec);
            }
            cudaGraphDestroy(g);
        }
    }
    std::printf("\n(LECTOR_PDL=0 in the environment: the same without programmatic dependent launch.)\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    int layers = 24, reps = 20;
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], "--graph-loop")) return graphLoop(layers);
    const bool trace = std::any_of(argv + 1, argv + argc, [](const char* a) { return !std::strcmp(a, "--trace"); });
#ifndef LECTOR_HP_TRACE
    if (trace) {
        std::fprintf(stderr, "--trace: build bench_hp_trace (bash bench/gpu/build_torch_free.sh bench_hp_trace)\n");
        return 2;
    }
#endif
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], "--head-parallel") || trace) {
            // --contexts A,B,...: the contexts timed (at most 4200; the check's contexts stay as they are)
            std::vector<int> contexts = trace ? std::vector<int>{1024, 1040, 1076, 1345} : std::vector<int>{1, 1076, 1345, 2100, 4096};
            for (int j = 1; j + 1 < argc; ++j) {
                if (!std::strcmp(argv[j], "--layers")) layers = std::atoi(argv[j + 1]);
                if (!std::strcmp(argv[j], "--contexts")) {
                    contexts.clear();
                    for (const char* c = argv[j + 1]; *c;) {
                        char* end = nullptr;
                        const long v = std::strtol(c, &end, 10);
                        if (end == c || v < 1 || v > 4200) {
                            std::fprintf(stderr, "--contexts: numbers from 1 to 4200, separated by commas\n");
                            return 2;
                        }
                        contexts.push_back(static_cast<int>(v));
                        c = *end == ',' ? end + 1 : end;
                    }
                }
            }
#ifdef LECTOR_HP_TRACE
            if (trace) return headParallelTrace(layers, contexts);
#endif
            return headParallel(layers, contexts);
        }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--layers")) layers = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    }
    // Correctness first: 2 layers of the real shapes against the CPU reference, both dtypes.
    bool ok = true;
    std::printf("| check | error | |\n|---|---|---|\n");
    for (gpu::DType dtype : {gpu::DType::F16, gpu::DType::BF16}) {
        Model m;
        if (dtype == gpu::DType::F16) build<__half>(m, dtype, 2, 4096);
        else build<__nv_bfloat16>(m, dtype, 2, 4096);
        for (int context : {1, 1076}) ok = checkAgainstReference(m, context) && ok;
    }
    std::printf("\n");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "device");
    int clockKhz = 0;
    check(cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, 0), "clock");
    const double copyBw = bench::copyBandwidth();
    std::printf("## persistent decode step on %s (%d SMs), %d layers, HunyuanOCR shapes; copy %.0f GB/s\n\n", prop.name,
                prop.multiProcessorCount, layers, copyBw / 1e9);
    // Variants (benchmark flags of persistent_decode.cuh): what each part costs, in the same run.
    struct Variant { const char* name; int flags; bool trace; };
    const int lm = gpu::kPersistentLmHeadOnly;
    const Variant variants[] = {
        {"as shipped", 0, true},
        {"ring waits in try_wait", gpu::kPersistentTryWait, false},
        {"no waits for other CTAs", gpu::kPersistentNoWaits, false},
        {"no copies (consumers alone)", gpu::kPersistentNoCopies, true},
        {"no copies, no waits (consumer work alone)", gpu::kPersistentNoCopies | gpu::kPersistentNoWaits, false},
        {"no dot products, no waits (the stream alone)", gpu::kPersistentNoMath | gpu::kPersistentNoWaits, false},
        {"LM head alone (247 MB)", lm, false},
        {"LM head alone, try_wait", lm | gpu::kPersistentTryWait, false},
        {"LM head alone, no dot products", lm | gpu::kPersistentNoMath, false},
        {"LM head alone, no copies", lm | gpu::kPersistentNoCopies, false},
        {"LM head alone, no copies, no dot products", lm | gpu::kPersistentNoCopies | gpu::kPersistentNoMath, false},
    };
    std::printf("| variant (all but the first two give wrong results) | dtype, context | ms | GB read | of copy bandwidth |\n|---|---|---|---|---|\n");
    for (gpu::DType dtype : {gpu::DType::F16, gpu::DType::BF16}) {
        Model m;
        if (dtype == gpu::DType::F16) build<__half>(m, dtype, layers, 4096);
        else build<__nv_bfloat16>(m, dtype, layers, 4096);
        for (int context : {1, 1076, 4096}) {
            for (const Variant& v : variants) {
                if (dtype == gpu::DType::BF16 && v.flags != 0) continue;
                if (context != 1076 && v.flags != 0) continue;
                setContext(m, context);
                gpu::PersistentDecodeParams p = m.p;
                p.flags = v.flags;
                const double ms = medianMs(p, reps);
                const double bytes = m.weightBytes + 2.0 * layers * context * 8 * 128 * 2;
                std::printf("| %s | %s, %d | %.3f | %.3f | %.1f %% |\n", v.name, gpu::dtypeName(dtype), context, ms,
                            bytes / 1e9, 100.0 * bytes / (ms * 1e-3) / copyBw);
            }
        }
        if (dtype != gpu::DType::F16) continue;
        for (const Variant& v : variants) {
            if (!v.trace) continue;
            setContext(m, 1076);
            m.p.flags = v.flags;
            std::printf("\ntrace, %s, context 1076, %s:\n", gpu::dtypeName(dtype), v.name);
            traceTable(m, clockKhz / 1e6);
            m.p.flags = 0;
        }
        std::printf("\n");
    }
    return ok ? 0 : 1;
}
