// bench_decode_attention: paged decode attention as the decode graphs launch it (HunyuanOCR's 16 query /
// 8 KV heads of 128, float16, every sequence at the same context, grid sized for the graphs' 8192-token
// bound), each variant as 24 launches replayed from a CUDA graph, chained under PDL as a step's layers
// are, each launch on its own layer's cache (cold in L2, as in a step). Without libtorch, so it builds
// with nvcc alone and the binary can travel to the GPU machine:
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_decode_attention.cu \
//        gpu/kernels/paged_decode_attention.cu gpu/ref/paged_decode_attention_ref.cpp -o build-gpu/bench_decode_attention
// (or the CMake target of the same name in CUDA builds). It first checks every variant against the CPU
// reference (exit code 1 on a mismatch).
//   bench_decode_attention [--context N] [--batches 1,2,4,8,32]
//   bench_decode_attention --profile   a few plain launches of the graphs' variants, for a profiler (ncu)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/paged_decode_attention.cuh"
#include "gpu/ref/element_ref.h"
#include "gpu/ref/paged_decode_attention_ref.h"

namespace gpu = lector::gpu;
namespace bench = lector::bench;

namespace {

using bench::check;
using Buffer = bench::DeviceBuffer;

constexpr int kQHeads = 16, kKvHeads = 8, kHeadDim = 128, kGraphContext = 8192, kLayers = 24;

int numSms()
{
    int n = 0;
    check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0), "attribute");
    return n;
}

// A split of the launch (PagedDecodeAttentionParams' partitionSize, clusterPartitions, rowPartitions).
struct Variant {
    std::string name;
    int partitionSize = 0, clusterPartitions = 0, rowPartitions = 0;
    bool graphs = false;  // the decode graphs' choice at this batch
};

// The splits timed at `batch` sequences, with the decode graphs' choice among them (core/runner/
// model_runner.cpp, useGraphAttention): one sequence a cluster of 16, two 64-key partitions, more row
// partitions. Two and four sequences also time the cluster merge (the graphs take it for one only).
std::vector<Variant> variantsFor(int batch)
{
    std::vector<Variant> v;
    bool cluster16 = false;  // the graph of 1 takes it where the device runs it, else 64-key partitions
    if (batch == 1 || batch == 2 || batch == 4)
        for (int parts : {16, 8, 4})
            if (gpu::pagedDecodeClusterPartitionLen(kGraphContext, parts) <= gpu::kDecodeMaxPartition &&
                gpu::pagedDecodeClusterFits(gpu::DType::F16, parts, kQHeads / kKvHeads, kHeadDim, kGraphContext)) {
                v.push_back({"cluster of " + std::to_string(parts), 0, parts, 0, batch == 1 && parts == 16});
                cluster16 = cluster16 || (batch == 1 && parts == 16);
            }
    v.push_back({"64-key partitions", 64, 0, 0, (batch == 1 && !cluster16) || batch == 2});
    const int rows = gpu::pagedDecodeRowPartitions(batch, kKvHeads, numSms());
    v.push_back({"row partitions " + std::to_string(rows), 0, 0, rows, batch >= 3});
    if (batch >= 4)  // its neighbours
        for (int r : {rows - 1, rows + 1})
            if (r >= 1 && r <= gpu::kDecodeMaxRowPartitions) v.push_back({"row partitions " + std::to_string(r), 0, 0, r, false});
    for (Variant& x : v)
        if (x.graphs) x.name += " (the graphs' choice)";
    return v;
}

// One layer's paged cache: blocks of every sequence shuffled over the pool, random K/V.
struct Layer {
    std::unique_ptr<Buffer> keys, values;
};

struct Setup {
    int batch = 0, context = 0, blocksPerSeq = 0, numBlocks = 0;
    std::vector<Layer> layers;
    std::unique_ptr<Buffer> query, out, table, lens, workspace, counters;
    std::vector<uint16_t> hostKeys, hostValues, hostQuery;  // layer 0
    std::vector<int32_t> hostTable, hostLens;
};

Setup makeSetup(int batch, int context)
{
    Setup s;
    s.batch = batch;
    s.context = context;
    s.blocksPerSeq = (context + gpu::kKvBlockSize - 1) / gpu::kKvBlockSize;
    s.numBlocks = batch * s.blocksPerSeq + 3;
    const size_t tokenElems = size_t(kKvHeads) * kHeadDim;
    const size_t cacheElems = size_t(s.numBlocks) * gpu::kKvBlockSize * tokenElems;
    s.hostKeys = bench::randomHalfBits(cacheElems, 1);
    s.hostValues = bench::randomHalfBits(cacheElems, 2);
    s.hostQuery = bench::randomHalfBits(size_t(batch) * kQHeads * kHeadDim, 3);
    for (int l = 0; l < kLayers; ++l) {
        Layer layer{std::make_unique<Buffer>(cacheElems * 2), std::make_unique<Buffer>(cacheElems * 2)};
        check(cudaMemcpy(layer.keys->ptr, s.hostKeys.data(), cacheElems * 2, cudaMemcpyHostToDevice), "upload");
        check(cudaMemcpy(layer.values->ptr, s.hostValues.data(), cacheElems * 2, cudaMemcpyHostToDevice), "upload");
        s.layers.push_back(std::move(layer));
    }
    // The block table is as wide as a graph's (8192 tokens); each sequence's blocks are a shuffled part
    // of the pool.
    const int width = kGraphContext / gpu::kKvBlockSize;
    std::vector<int32_t> ids(size_t(batch) * s.blocksPerSeq);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(4));
    s.hostTable.assign(size_t(batch) * width, 0);
    for (int b = 0; b < batch; ++b)
        for (int j = 0; j < s.blocksPerSeq; ++j) s.hostTable[size_t(b) * width + j] = ids[size_t(b) * s.blocksPerSeq + j];
    s.hostLens.assign(batch, context);
    s.query = std::make_unique<Buffer>(s.hostQuery.size() * 2);
    s.out = std::make_unique<Buffer>(s.hostQuery.size() * 2);
    s.table = std::make_unique<Buffer>(s.hostTable.size() * 4);
    s.lens = std::make_unique<Buffer>(s.hostLens.size() * 4);
    check(cudaMemcpy(s.query->ptr, s.hostQuery.data(), s.query->bytes, cudaMemcpyHostToDevice), "upload");
    check(cudaMemcpy(s.table->ptr, s.hostTable.data(), s.table->bytes, cudaMemcpyHostToDevice), "upload");
    check(cudaMemcpy(s.lens->ptr, s.hostLens.data(), s.lens->bytes, cudaMemcpyHostToDevice), "upload");
    // Workspace for the largest split any variant takes: 64-key partitions over the graph bound.
    const int maxParts = std::max(kGraphContext / 64, gpu::kDecodeMaxRowPartitions);
    s.workspace = std::make_unique<Buffer>(size_t(gpu::pagedAttentionWorkspaceFloats(batch, kQHeads, kHeadDim, maxParts)) * 4);
    s.counters = std::make_unique<Buffer>(size_t(batch) * kKvHeads * 4);
    check(cudaMemset(s.counters->ptr, 0, s.counters->bytes), "memset");
    return s;
}

gpu::PagedDecodeAttentionParams params(const Setup& s, const Variant& v, int layer)
{
    gpu::PagedDecodeAttentionParams p;
    p.dtype = gpu::DType::F16;
    p.out = s.out->ptr;
    p.query = s.query->ptr;
    p.keyCache = s.layers[size_t(layer)].keys->ptr;
    p.valueCache = s.layers[size_t(layer)].values->ptr;
    p.blockTable = static_cast<const int32_t*>(s.table->ptr);
    p.contextLens = static_cast<const int32_t*>(s.lens->ptr);
    p.workspace = static_cast<float*>(s.workspace->ptr);
    p.counters = static_cast<int32_t*>(s.counters->ptr);
    p.querySeqStride = p.outSeqStride = int64_t(kQHeads) * kHeadDim;
    p.blockTableStride = kGraphContext / gpu::kKvBlockSize;
    p.numSeqs = s.batch;
    p.numQHeads = kQHeads;
    p.numKvHeads = kKvHeads;
    p.headDim = kHeadDim;
    p.numBlocks = s.numBlocks;
    p.maxContextLen = kGraphContext;
    p.partitionSize = v.partitionSize;
    p.clusterPartitions = v.clusterPartitions;
    p.rowPartitions = v.rowPartitions;
    p.scale = 1.0f / std::sqrt(float(kHeadDim));
    return p;
}

// The variant on layer 0 against the CPU reference over the same inputs: normalised squared error.
bool checkVariant(const Setup& s, const Variant& v)
{
    check(cudaMemset(s.out->ptr, 0xff, s.out->bytes), "memset");  // NaN wherever nothing is written
    check(gpu::launchPagedDecodeAttention(params(s, v, 0), nullptr), v.name.c_str());
    check(cudaDeviceSynchronize(), v.name.c_str());
    std::vector<uint16_t> got(s.hostQuery.size()), want(s.hostQuery.size());
    check(cudaMemcpy(got.data(), s.out->ptr, got.size() * 2, cudaMemcpyDeviceToHost), "download");
    gpu::PagedDecodeAttentionParams h = params(s, v, 0);
    h.out = want.data();
    h.query = s.hostQuery.data();
    h.keyCache = s.hostKeys.data();
    h.valueCache = s.hostValues.data();
    h.blockTable = s.hostTable.data();
    h.contextLens = s.hostLens.data();
    gpu::ref::pagedDecodeAttentionRef(h);
    const double nmse = bench::halfNmse(got, want);
    const bool ok = nmse <= 1e-5;
    std::printf("| %d | %s | %.2e | %s |\n", s.batch, v.name.c_str(), nmse, ok ? "ok" : "MISMATCH");
    return ok;
}

// Microseconds per launch: kLayers launches (one per layer) captured in a graph, replayed, median of 7.
double graphMicros(cudaStream_t stream, const Setup& s, const Variant& v)
{
    return bench::graphMicros(stream, kLayers, [&](int l) {
        return gpu::launchPagedDecodeAttention(params(s, v, l), stream) == cudaSuccess;
    });
}

}  // namespace

int main(int argc, char** argv)
{
    int context = 1076;
    std::vector<int> batches{1, 2, 4, 8, 32};
    bool profile = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--profile")) profile = true;
        else if (!std::strcmp(argv[i], "--context") && i + 1 < argc) context = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--batches") && i + 1 < argc) batches = bench::parseList(argv[++i]);
    }
    std::printf("# bench_decode_attention: context %d, %d query / %d KV heads of %d, float16\n\n", context, kQHeads,
                kKvHeads, kHeadDim);
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    if (profile) {  // the graphs' variant at each batch, three launches on cold layers
        for (int b : batches) {
            const Setup s = makeSetup(b, context);
            const std::vector<Variant> all = variantsFor(b);
            const Variant v = *std::find_if(all.begin(), all.end(), [](const Variant& x) { return x.graphs; });
            for (int l = 0; l < 3; ++l) check(gpu::launchPagedDecodeAttention(params(s, v, l), stream), v.name.c_str());
            check(cudaStreamSynchronize(stream), "profile");
            std::printf("profiled batch %d: %s\n", b, v.name.c_str());
        }
        return 0;
    }
    bool failed = false;
    std::printf("## check against the CPU reference (layer 0)\n\n| batch | variant | nmse | ok |\n|---|---|---|---|\n");
    std::vector<Setup> setups;
    for (int b : batches) {
        setups.push_back(makeSetup(b, context));
        for (const Variant& v : variantsFor(b)) failed = !checkVariant(setups.back(), v) || failed;
    }
    const double bw = bench::copyBandwidth();
    std::printf("\n## us per launch (%d launches in a graph, one layer's cache each, under PDL)\n\ncopy bandwidth %.0f GB/s\n\n"
                "| batch | variant | us | K/V floor us | of copy bandwidth |\n|---|---|---|---|---|\n",
                kLayers, bw / 1e9);
    for (const Setup& s : setups) {
        const double kvBytes = 2.0 * s.batch * context * kKvHeads * kHeadDim * 2;
        for (const Variant& v : variantsFor(s.batch)) {
            const double us = graphMicros(stream, s, v);
            std::printf("| %d | %s | %.2f | %.2f | %.0f %% |\n", s.batch, v.name.c_str(), us, kvBytes / bw * 1e6,
                        100.0 * kvBytes / bw * 1e6 / us);
        }
    }
    std::printf("\n%s\n", failed ? "CHECK FAILED" : "all checks passed");
    return failed ? 1 : 0;
}
