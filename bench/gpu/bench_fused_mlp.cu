// bench_fused_mlp: the fused MLP block (gpu/kernels/fused_mlp.cuh) against its CPU reference, without
// libtorch, so a device call can run it from a binary built here: float16 at 1 to 32 rows (partial and
// whole 8-row tiles), bfloat16 at some, every case launched twice (the second launch must give the same
// bits: the tickets reset, the sums in a fixed order), once with the output over the delta (the runner's
// use). Then the kernel's time alone, 24 layers of distinct weights in a graph, against the four kernels of
// the chain it replaces as bench_decode_step launches them is that bench's job (its "fused_mlp" variant).
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_fused_mlp.cu \
//        gpu/kernels/fused_mlp.cu gpu/ref/fused_mlp_ref.cpp gpu/ref/rms_norm_ref.cpp \
//        gpu/ref/skinny_gemm_ref.cpp gpu/ref/silu_and_mul_ref.cpp -o build-gpu/bench_fused_mlp
// Exit code 1 when a check fails.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/fused_mlp.cuh"
#include "gpu/ref/element_ref.h"
#include "gpu/ref/fused_mlp_ref.h"

namespace gpu = lector::gpu;
namespace bench = lector::bench;
using gpu::DType;

namespace {

constexpr int kHidden = gpu::kFusedMlpHidden, kInter = gpu::kFusedMlpIntermediate;

std::vector<uint8_t> randomElems(DType t, size_t n, uint32_t seed, float scale, float offset = 0.0f)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> u(0.0f, 1.0f);
    std::vector<uint8_t> out(n * gpu::dtypeBytes(t));
    for (size_t i = 0; i < n; ++i) gpu::ref::storeElem(out.data(), int64_t(i), t, offset + scale * u(rng));
    return out;
}

double nmse(DType t, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, size_t n)
{
    double err = 0, norm = 0;
    for (size_t i = 0; i < n; ++i) {
        const double a = gpu::ref::loadElem(got.data(), int64_t(i), t), b = gpu::ref::loadElem(want.data(), int64_t(i), t);
        err += std::isfinite(a) ? (a - b) * (a - b) : INFINITY;
        norm += b * b;
    }
    return err / std::max(norm, 1e-30);
}

std::vector<uint8_t> download(const bench::DeviceBuffer& b)
{
    std::vector<uint8_t> v(b.bytes);
    bench::check(cudaMemcpy(v.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost), "download");
    return v;
}

// One case: false when it fails.
bool checkCase(DType t, int rows, bool outOverDelta, uint32_t seed)
{
    const size_t e = gpu::dtypeBytes(t);
    const auto residual = randomElems(t, size_t(rows) * kHidden, seed, 1.0f);
    const auto delta = randomElems(t, size_t(rows) * kHidden, seed + 1, 0.5f);
    const auto norm = randomElems(t, kHidden, seed + 2, 0.1f, 1.0f);
    const auto gateUp = randomElems(t, size_t(2) * kInter * kHidden, seed + 3, 0.03f);
    const auto down = randomElems(t, size_t(kHidden) * kInter, seed + 4, 0.02f);
    auto dResidual = bench::upload(residual), dDelta = bench::upload(delta), dNorm = bench::upload(norm);
    auto dGateUp = bench::upload(gateUp), dDown = bench::upload(down);
    bench::DeviceBuffer dResidualOut(residual.size()), dOut(delta.size()), dWork(size_t(gpu::fusedMlpWorkspaceBytes()));
    bench::check(cudaMemset(dWork.ptr, 0, dWork.bytes), "memset");
    gpu::FusedMlpParams p;
    p.dtype = t;
    p.rows = rows;
    p.residualIn = dResidual->ptr;
    p.delta = dDelta->ptr;
    p.residualOut = dResidualOut.ptr;
    p.normWeight = dNorm->ptr;
    p.gateUp = dGateUp->ptr;
    p.down = dDown->ptr;
    p.out = outOverDelta ? dDelta->ptr : dOut.ptr;
    p.workspace = dWork.ptr;
    bench::check(gpu::launchFusedMlp(p, nullptr), "launch");
    bench::check(cudaDeviceSynchronize(), "first launch");
    const auto out1 = outOverDelta ? download(*dDelta) : download(dOut);
    const auto res1 = download(dResidualOut);
    if (outOverDelta) bench::check(cudaMemcpy(dDelta->ptr, delta.data(), delta.size(), cudaMemcpyHostToDevice), "restore");
    bench::check(gpu::launchFusedMlp(p, nullptr), "launch");
    bench::check(cudaDeviceSynchronize(), "second launch");
    const auto out2 = outOverDelta ? download(*dDelta) : download(dOut);

    std::vector<uint8_t> refOut(delta.size()), refRes(residual.size());
    gpu::FusedMlpParams r = p;
    r.residualIn = residual.data();
    r.delta = delta.data();
    r.residualOut = refRes.data();
    r.normWeight = norm.data();
    r.gateUp = gateUp.data();
    r.down = down.data();
    r.out = refOut.data();
    gpu::ref::fusedMlpRef(r);
    const double errOut = nmse(t, out1, refOut, size_t(rows) * kHidden);
    const double errRes = nmse(t, res1, refRes, size_t(rows) * kHidden);
    const bool same = std::memcmp(out1.data(), out2.data(), out1.size()) == 0;
    const double bound = t == DType::F16 ? 1e-5 : 1e-4;
    const bool ok = errOut < bound && errRes < 1e-12 && same;
    std::printf("| %s | %d | %s | %.3g | %.3g | %s | %s |\n", gpu::dtypeName(t), rows, outOverDelta ? "over delta" : "apart",
                errOut, errRes, same ? "same bits" : "DIFFER", ok ? "ok" : "FAILED");
    (void)e;
    return ok;
}

// The kernel alone: 24 layers of distinct weights (float16) back to back in a graph, us a layer; then one
// such sequence traced (the 12th launch): each phase's end as ns after the earliest CTA start, mean and
// latest CTA.
void timeLayers(int rows)
{
    constexpr int kLayers = 24;
    struct LayerWeights {
        std::unique_ptr<bench::DeviceBuffer> norm, gateUp, down;
    };
    std::vector<LayerWeights> layers;
    uint32_t seed = 500;
    for (int l = 0; l < kLayers; ++l)
        layers.push_back({bench::halves(kHidden, seed++, 0.1f, 1.0f), bench::halves(size_t(2) * kInter * kHidden, seed++, 0.03f),
                          bench::halves(size_t(kHidden) * kInter, seed++, 0.02f)});
    auto residualA = bench::halves(size_t(rows) * kHidden, seed++, 1.0f), residualB = bench::halves(size_t(rows) * kHidden, seed++, 1.0f);
    auto delta = bench::halves(size_t(rows) * kHidden, seed++, 0.5f);
    bench::DeviceBuffer work(size_t(gpu::fusedMlpWorkspaceBytes()));
    bench::check(cudaMemset(work.ptr, 0, work.bytes), "memset");
    const int ctas = gpu::kFusedMlpClusters * 16;
    bench::DeviceBuffer trace(size_t(ctas) * gpu::kFusedMlpTraceStamps * 8);
    auto launchLayer = [&](int l, cudaStream_t stream, bool traced) {
        gpu::FusedMlpParams p;
        p.rows = rows;
        p.residualIn = (l % 2 ? residualB : residualA)->ptr;
        p.residualOut = (l % 2 ? residualA : residualB)->ptr;
        p.delta = delta->ptr;
        p.out = delta->ptr;
        p.normWeight = layers[size_t(l)].norm->ptr;
        p.gateUp = layers[size_t(l)].gateUp->ptr;
        p.down = layers[size_t(l)].down->ptr;
        p.workspace = work.ptr;
        p.trace = traced ? static_cast<unsigned long long*>(trace.ptr) : nullptr;
        return gpu::launchFusedMlp(p, stream) == cudaSuccess;
    };
    cudaStream_t stream;
    bench::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    const double us = bench::graphMicros(stream, kLayers, [&](int l) { return launchLayer(l, stream, false); });
    bench::check(cudaMemset(trace.ptr, 0, trace.bytes), "memset");
    for (int l = 0; l < kLayers; ++l) bench::check(launchLayer(l, stream, l == 12) ? cudaSuccess : cudaErrorUnknown, "traced");
    bench::check(cudaStreamSynchronize(stream), "traced run");
    std::vector<unsigned long long> t(size_t(ctas) * gpu::kFusedMlpTraceStamps);
    bench::check(cudaMemcpy(t.data(), trace.ptr, trace.bytes, cudaMemcpyDeviceToHost), "trace");
    unsigned long long t0 = ~0ull;
    for (int c = 0; c < ctas; ++c) t0 = std::min(t0, t[size_t(c) * gpu::kFusedMlpTraceStamps]);
    std::printf("| %d | %.2f |", rows, us);
    for (int k = 0; k < gpu::kFusedMlpTraceStamps; ++k) {
        double sum = 0, worst = 0;
        int n = 0;
        for (int c = 0; c < ctas; ++c) {
            const unsigned long long v = t[size_t(c) * gpu::kFusedMlpTraceStamps + k];
            if (!v) continue;
            sum += double(v - t0), worst = std::max(worst, double(v - t0)), ++n;
        }
        std::printf(" %.2f / %.2f |", n ? sum / n / 1000 : 0.0, worst / 1000);
    }
    std::printf("\n");
    cudaStreamDestroy(stream);
}

}  // namespace

int main()
{
    int device = 0;
    bench::check(cudaGetDevice(&device), "device");
    if (!gpu::fusedMlpSupported(device)) {
        std::printf("fused MLP not supported on this device\n");
        return 1;
    }
    std::printf("## fused MLP block against the CPU reference (nmse; residual exact)\n\n");
    std::printf("| dtype | rows | output | out nmse | residual nmse | second launch | |\n|---|---|---|---|---|---|---|\n");
    bool ok = true;
    uint32_t seed = 11;
    for (int rows : {1, 2, 3, 7, 8, 9, 16, 17, 24, 31, 32}) ok = checkCase(DType::F16, rows, false, seed += 10) && ok;
    ok = checkCase(DType::F16, 13, true, seed += 10) && ok;
    for (int rows : {2, 17, 32}) ok = checkCase(DType::BF16, rows, rows == 17, seed += 10) && ok;
    std::printf("\n%s\n", ok ? "all checks passed" : "CHECKS FAILED");
    std::printf("\n## the kernel alone, float16: 24 layers of distinct weights in a graph; the 12th traced (us after the "
                "earliest CTA start: mean / latest CTA)\n\n| rows | us a layer | start | weights issued | wait over | x pushed | "
                "gate/up | products pushed | down | ticket | sums stored |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int rows : {2, 8, 16, 32}) timeLayers(rows);
    return ok ? 0 : 1;
}
