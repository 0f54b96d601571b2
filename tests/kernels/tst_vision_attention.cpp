// Vision-tower attention: the CPU reference against per-image softmax attention computed densely by
// libtorch in float64 (always), and the Hopper kernel against the reference (CUDA machines with a
// compute capability 9.0 device; skipped elsewhere). Batches hold images of 1 row, odd sizes around the
// kernel's 64-key tiles and 128-row blocks, exact multiples, and a 1024x1024 page's 4096 patches; the
// output has a row stride wider than its heads, and rows no image owns stay untouched.
#include <ATen/ATen.h>

#include <cmath>

#include "gpu/ops.h"
#include "gpu/ref/vision_attention_ref.h"
#include "tests/kernels/kernel_test_util.h"

namespace kt = lector::test::kernels;
using lector::gpu::VisionAttentionParams;

namespace {

struct Batch {
    const char* name;
    std::vector<int> lengths;  // rows of each image
    int numHeads;
    int headDim;
};

struct Inputs {
    at::Tensor qkv;        // [rows, 3 * heads * headDim], CPU
    at::Tensor cuSeqlens;  // [images + 1] int32, CPU
    int maxSeqlen = 0;
};

Inputs makeInputs(const Batch& b, at::ScalarType type, uint64_t seed)
{
    Inputs in;
    std::vector<int32_t> cu{0};
    for (int n : b.lengths) {
        cu.push_back(cu.back() + n);
        in.maxSeqlen = std::max(in.maxSeqlen, n);
    }
    // Scores of a few units: the softmax is neither uniform nor one-hot.
    in.qkv = kt::randn({cu.back(), 3 * b.numHeads * b.headDim}, seed, type, 1.5);
    in.cuSeqlens = at::tensor(cu, at::kInt);
    return in;
}

double scaleOf(const Batch& b) { return 1.0 / std::sqrt(double(b.headDim)); }

// out [rows, outStride] with the attention in its first heads * headDim columns, NaN elsewhere.
at::Tensor runReference(const Batch& b, const Inputs& in, const at::Tensor& qkv, int64_t outStride)
{
    const int64_t hd = int64_t(b.numHeads) * b.headDim;
    const at::Tensor out = at::full({qkv.size(0), outStride}, NAN, qkv.options());
    VisionAttentionParams p;
    p.dtype = kt::toDType(qkv.scalar_type());
    p.qkv = qkv.data_ptr();
    p.out = out.data_ptr();
    p.cuSeqlens = in.cuSeqlens.data_ptr<int32_t>();
    p.qkvRowStride = qkv.stride(0);
    p.outRowStride = out.stride(0);
    p.numRows = static_cast<int>(qkv.size(0));
    p.numImages = static_cast<int>(b.lengths.size());
    p.maxSeqlen = in.maxSeqlen;
    p.numHeads = b.numHeads;
    p.headDim = b.headDim;
    p.scale = static_cast<float>(scaleOf(b));
    lector::gpu::ref::visionAttentionRef(p);
    return out.narrow(1, 0, hd);
}

// Dense per-image attention in `type` on `device` (no mask inside an image): [rows, heads * headDim].
at::Tensor denseAttention(const Batch& b, const Inputs& in, at::ScalarType type, const at::Device& device)
{
    const int64_t hd = int64_t(b.numHeads) * b.headDim;
    const at::Tensor qkv = in.qkv.to(device).to(type).view({-1, 3, b.numHeads, b.headDim});
    std::vector<at::Tensor> parts;
    int64_t first = 0;
    for (int n : b.lengths) {
        const at::Tensor rows = qkv.narrow(0, first, n);
        parts.push_back(kt::naiveAttention(rows.select(1, 0), rows.select(1, 1), rows.select(1, 2), scaleOf(b), -1)
                            .reshape({n, hd}));
        first += n;
    }
    return at::cat(parts, 0);
}

}  // namespace

LECTOR_TEST(referenceMatchesPerImageFloat64Attention)
{
    const std::vector<Batch> all{{"odd images", {1, 7, 65, 130}, 3, 72}, {"head dim 40", {33, 5}, 2, 40}};
    for (const Batch& b : all) {
        const Inputs in = makeInputs(b, at::kFloat, 51);
        kt::expectClose(std::string("ref vs float64: ") + b.name, runReference(b, in, in.qkv, 3 * b.numHeads * b.headDim),
                        denseAttention(b, in, at::kDouble, at::kCPU), 1e-10);
    }
}

LECTOR_TEST(referenceOneRowImageCopiesItsValue)
{
    // An image of one patch attends only to itself: its output is its own value row, exactly, whatever
    // the images beside it hold.
    const Batch b{"one row between two", {5, 1, 9}, 2, 72};
    const Inputs in = makeInputs(b, at::kFloat, 53);
    const at::Tensor out = runReference(b, in, in.qkv, 2 * 72);
    LECTOR_CHECK(at::equal(out[5], in.qkv[5].narrow(0, 2 * 2 * 72, 2 * 72)));
}

LECTOR_TEST(cpuOpRunsTheReference)
{
    // gpu::visionAttention on CPU tensors is the reference (the tower's CPU path does not use it, but
    // the op's shape checks and the dispatch are the same on both devices).
    const Batch b{"cpu op", {3, 70}, 2, 72};
    const Inputs in = makeInputs(b, at::kFloat, 55);
    const at::Tensor out = at::empty({in.qkv.size(0), 2 * 72}, in.qkv.options());
    lector::gpu::visionAttention(out, in.qkv, in.cuSeqlens, in.maxSeqlen, b.numHeads, scaleOf(b));
    kt::expectClose("cpu op vs float64", out, denseAttention(b, in, at::kDouble, at::kCPU), 1e-10);
}

#ifdef LECTOR_HAVE_CUDA

namespace {

void requireKernel(at::ScalarType type)
{
    kt::requireCuda();
    if (!lector::gpu::visionAttentionAvailable(at::empty({1}, at::TensorOptions().dtype(type).device(at::kCUDA)), 72))
        LECTOR_SKIP("the vision attention kernel needs a compute capability 9.0 device");
}

// The kernel's output for `in` in `type`, written into a [rows, heads * headDim + 24] buffer of NaN.
at::Tensor runKernel(const Batch& b, const Inputs& in, at::ScalarType type, int shape)
{
    const int64_t hd = int64_t(b.numHeads) * b.headDim;
    const at::Tensor qkv = in.qkv.to(type).cuda();
    const at::Tensor buffer = at::full({qkv.size(0), hd + 24}, NAN, qkv.options());
    const at::Tensor out = buffer.narrow(1, 0, hd);
    lector::gpu::visionAttention(out, qkv, in.cuSeqlens.cuda(), in.maxSeqlen, b.numHeads, scaleOf(b), shape);
    LECTOR_CHECK_MSG(at::isnan(buffer.narrow(1, hd, 24)).all().item<bool>(), b.name << ": wrote past its heads");
    return out;
}

}  // namespace

LECTOR_TEST(cudaMatchesReferenceOnOddImages)
{
    const std::vector<Batch> all{
        {"1, 7, 64, 127, 130, 333 rows", {1, 7, 64, 127, 130, 333}, 4, 72},
        {"exact tiles and row blocks", {128, 256, 64}, 2, 72},
        {"one image of several row blocks", {1000}, 16, 72},
    };
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        requireKernel(type);
        for (const Batch& b : all) {
            const Inputs in = makeInputs(b, type, 61);
            const at::Tensor ref = runReference(b, in, in.qkv.to(at::kFloat), 3 * b.numHeads * b.headDim);
            const at::Tensor naive = denseAttention(b, in, type, at::kCUDA);
            for (int shape = 0; shape < lector::gpu::kVisionAttentionShapes; ++shape)  // every kernel and CTA shape
                kt::expectClose(kt::typeName(type) + ", shape " + std::to_string(shape) + ": " + b.name,
                                runKernel(b, in, type, shape), ref, kt::nmseBound(type), naive);
        }
    }
}

LECTOR_TEST(cudaMatchesDenseAttentionOnPages)
{
    // A 1024x1024 page (4096 patches) beside a smaller one, 16 heads: against dense float32 attention on
    // the GPU over the same rounded inputs (the scalar reference would take minutes here).
    const Batch b{"pages of 4096 and 2000 patches", {4096, 2000}, 16, 72};
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        requireKernel(type);
        const Inputs in = makeInputs(b, type, 63);
        const at::Tensor ref = denseAttention(b, in, at::kFloat, at::kCUDA);
        const at::Tensor naive = denseAttention(b, in, type, at::kCUDA);
        for (int shape = 0; shape < lector::gpu::kVisionAttentionShapes; ++shape)  // every kernel and CTA shape
            kt::expectClose(kt::typeName(type) + ", shape " + std::to_string(shape) + ": " + b.name,
                            runKernel(b, in, type, shape), ref, kt::nmseBound(type), naive);
    }
}

LECTOR_TEST(cudaRejectsWhatItHasNoKernelFor)
{
    requireKernel(at::kHalf);
    const auto rejects = [](at::ScalarType type, int headDim) {
        const at::Tensor qkv = at::zeros({8, 3 * 2 * headDim}, at::TensorOptions().dtype(type).device(at::kCUDA));
        const at::Tensor out = at::empty({8, 2 * headDim}, qkv.options());
        const at::Tensor cu = at::tensor(std::vector<int32_t>{0, 8}, at::kInt).cuda();
        try {
            lector::gpu::visionAttention(out, qkv, cu, 8, 2, 0.1);
        } catch (const c10::Error&) {
            return true;
        }
        return false;
    };
    LECTOR_CHECK(rejects(at::kFloat, 72));
    LECTOR_CHECK(rejects(at::kHalf, 64));
}

#endif  // LECTOR_HAVE_CUDA
