// GPU-machine benchmark of the vision tower's attention kernel (gpu/kernels/vision_attention.cu), torch-free
// so a device call carries it built (bench/gpu/build_torch_free.sh bench_vision_attention). Every CTA shape
// of VisionAttentionParams::shape: first checked against the CPU
// reference on images of 1, 130, 333, 64 and 257 rows (4 heads), then timed on HunyuanOCR's tower (16 heads of 72,
// 4096 patches a 1024x1024 page) at 1 and 8 pages, in ms for one page's 27 layers (median of 10 launches).
// libtorch's SDPA is timed beside it by bench/gpu/probe_vision.py --attention-only in the same call.
// --profile: one plain launch of each shape at 8 pages (for ncu), no timing.
//   nvcc: bench/gpu/bench_vision_attention.cu gpu/kernels/vision_attention.cu (sm_90a)
//         gpu/ref/vision_attention_ref.cpp
#include <cstring>
#include <string>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/vision_attention.cuh"
#include "gpu/ref/vision_attention_ref.h"

using namespace lector;
using bench::check;

namespace {

constexpr int kDim = gpu::kVisionAttentionHeadDim, kShapes = gpu::kVisionAttentionShapes;
const char* const kShapeNames[kShapes] = {"2 x 2 blocks, 64 keys, 4 stages, ping-pong, lazy",
                                          "2 x 2 blocks, 64 keys, 4 stages, ping-pong",
                                          "3 x 1 block, 128 keys, 3 stages, lazy"};

struct Batch {
    std::vector<int> lengths;
    int heads;
    std::vector<int32_t> cu{0};
    std::unique_ptr<bench::DeviceBuffer> qkv, out, cuDev;
    Batch(std::vector<int> l, int h, uint32_t seed) : lengths(std::move(l)), heads(h)
    {
        for (int n : lengths) cu.push_back(cu.back() + n);
        qkv = bench::halves(size_t(cu.back()) * 3 * heads * kDim, seed, 2.5f);
        out = std::make_unique<bench::DeviceBuffer>(size_t(cu.back()) * heads * kDim * 2);
        cuDev = bench::upload(cu);
    }
    gpu::VisionAttentionParams params(int shape) const
    {
        gpu::VisionAttentionParams p;
        p.dtype = gpu::DType::F16;
        p.qkv = qkv->ptr;
        p.out = out->ptr;
        p.cuSeqlens = static_cast<const int32_t*>(cuDev->ptr);
        p.qkvRowStride = 3 * heads * kDim;
        p.outRowStride = heads * kDim;
        p.numRows = cu.back();
        p.numImages = int(lengths.size());
        p.maxSeqlen = *std::max_element(lengths.begin(), lengths.end());
        p.numHeads = heads;
        p.headDim = kDim;
        p.scale = 1.0f / std::sqrt(float(kDim));
        p.shape = shape;
        return p;
    }
};

bool checkShape(int shape)
{
    Batch b({1, 130, 333, 64, 257}, 4, 7);
    const gpu::VisionAttentionParams p = b.params(shape);
    if (const cudaError_t err = gpu::launchVisionAttention(p, nullptr); err != cudaSuccess) {
        std::printf("check %-50s launch failed: %s\n", kShapeNames[shape], cudaGetErrorString(err));
        return false;
    }
    check(cudaDeviceSynchronize(), "check run");
    std::vector<uint16_t> qkv(size_t(p.numRows) * p.qkvRowStride), got(size_t(p.numRows) * p.outRowStride), want(got.size());
    check(cudaMemcpy(qkv.data(), b.qkv->ptr, qkv.size() * 2, cudaMemcpyDeviceToHost), "download");
    check(cudaMemcpy(got.data(), b.out->ptr, got.size() * 2, cudaMemcpyDeviceToHost), "download");
    gpu::VisionAttentionParams r = p;
    r.qkv = qkv.data();
    r.out = want.data();
    r.cuSeqlens = b.cu.data();
    gpu::ref::visionAttentionRef(r);
    const double nmse = bench::halfNmse(got, want);
    std::printf("check %-50s nmse %.3g %s\n", kShapeNames[shape], nmse,
                nmse < 1e-5 ? "ok" : "MISMATCH");
    return nmse < 1e-5;
}

double msPerPage(int shape, int pages)
{
    static std::unique_ptr<Batch> batch[2];
    auto& b = batch[pages == 1 ? 0 : 1];
    if (!b) b = std::make_unique<Batch>(std::vector<int>(size_t(pages), 4096), 16, 11);
    const gpu::VisionAttentionParams p = b->params(shape);
    return bench::medianLaunchMs([&] { check(gpu::launchVisionAttention(p, nullptr), "launch"); }, 10) * 27 / pages;
}

}  // namespace

int main(int argc, char** argv)
{
    int device = 0;
    check(cudaGetDevice(&device), "device");
    if (!gpu::visionAttentionSupported(device)) return std::printf("no compute capability 9.0 device\n"), 1;
    const bool profile = argc > 1 && std::strcmp(argv[1], "--profile") == 0;
    if (profile) {
        Batch b(std::vector<int>(8, 4096), 16, 11);
        for (int shape = 0; shape < kShapes; ++shape) check(gpu::launchVisionAttention(b.params(shape), nullptr), "launch");
        check(cudaDeviceSynchronize(), "profile runs");
        return 0;
    }
    bool ok = true;
    bool passed[kShapes];
    for (int shape = 0; shape < kShapes; ++shape) ok = (passed[shape] = checkShape(shape)) && ok;
    std::printf("%s\n\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
    const double flops = 4.0 * 16 * 4096.0 * 4096 * kDim * 27;
    std::printf("| CTA shape | 1 page, ms (TFLOP/s) | 8 pages, ms a page (TFLOP/s) |\n|---|---|---|\n");
    for (int shape = 0; shape < kShapes; ++shape) {
        if (!passed[shape]) continue;  // a wrong kernel's time says nothing
        const double a = msPerPage(shape, 1), b = msPerPage(shape, 8);
        std::printf("| %s | %.2f (%.0f) | %.2f (%.0f) |\n", kShapeNames[shape], a, flops / (a * 1e-3) / 1e12, b,
                    flops / (b * 1e-3) / 1e12);
    }
    return ok ? 0 : 1;
}
