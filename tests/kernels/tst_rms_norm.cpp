// RMSNorm and fused residual-add + RMSNorm: the reference against libtorch float64, and the CUDA
// kernel against the reference (output and updated residual) for the decoder (1024) and vision
// merger (1152) widths, an odd width (769), 1 / 7 / 33 tokens, strided rows and in-place output.
#include <ATen/ATen.h>

#include "gpu/ref/rms_norm_ref.h"
#include "tests/kernels/kernel_test_util.h"
#ifdef LECTOR_HAVE_CUDA
#include "gpu/ops.h"
#endif

namespace kt = lector::test::kernels;

namespace {

constexpr double kEps = 1e-5;

// Reference on CPU tensors; residual (optional) is updated in place.
at::Tensor runReference(const at::Tensor& input, const at::Tensor& residual, const at::Tensor& weight)
{
    const at::Tensor out = at::full(input.sizes(), NAN, input.options());
    lector::gpu::RmsNormParams p;
    p.dtype = kt::toDType(input.scalar_type());
    p.out = out.data_ptr();
    p.input = input.data_ptr();
    p.weight = weight.data_ptr();
    p.outStride = out.stride(0);
    p.inputStride = input.stride(0);
    if (residual.defined()) {
        p.residual = residual.data_ptr();
        p.residualStride = residual.stride(0);
    }
    p.numTokens = static_cast<int>(input.size(0));
    p.hidden = static_cast<int>(input.size(1));
    p.eps = static_cast<float>(kEps);
    lector::gpu::ref::rmsNormRef(p);
    return out;
}

// HF HunYuanVLRMSNorm in the tensors' precision: variance in float32, normalised value cast back,
// then multiplied by the weight in the element type.
[[maybe_unused]] at::Tensor naive(const at::Tensor& h, const at::Tensor& weight)  // CUDA cases only
{
    const at::Tensor hf = h.to(at::kFloat);
    const at::Tensor inv = at::rsqrt(hf.pow(2).mean(-1, true) + kEps);
    return weight * (hf * inv).to(h.scalar_type());
}

struct Rows {
    at::Tensor wide;   // [numTokens, hidden + 16]
    at::Tensor rows;   // [numTokens, hidden] strided view
};

Rows stridedRows(int numTokens, int hidden, at::ScalarType type, uint64_t seed, double scale = 1.0)
{
    Rows r;
    r.wide = kt::randn({numTokens, hidden + 16}, seed, type, scale);
    r.rows = r.wide.slice(1, 8, 8 + hidden);
    return r;
}

}  // namespace

LECTOR_TEST(referenceMatchesFloat64)
{
    for (int hidden : {769, 1024}) {
        const at::Tensor x = stridedRows(7, hidden, at::kFloat, 91).rows;
        const at::Tensor res = kt::randn({7, hidden}, 92);
        const at::Tensor w = kt::randn({hidden}, 93);
        const at::Tensor resBefore = res.clone();
        const at::Tensor out = runReference(x, res, w);
        const at::Tensor h = x.to(at::kDouble) + resBefore.to(at::kDouble);
        kt::expectClose("ref residual, hidden " + std::to_string(hidden), res, h, 1e-14);
        const at::Tensor want = w.to(at::kDouble) * h / at::sqrt(h.pow(2).mean(-1, true) + kEps);
        kt::expectClose("ref fused add + norm, hidden " + std::to_string(hidden), out, want, 1e-12);
        const at::Tensor plain = runReference(x, at::Tensor(), w);
        const at::Tensor xd = x.to(at::kDouble);
        kt::expectClose("ref plain norm, hidden " + std::to_string(hidden), plain,
                        w.to(at::kDouble) * xd / at::sqrt(xd.pow(2).mean(-1, true) + kEps), 1e-12);
    }
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReference)
{
    kt::requireCuda();
    for (at::ScalarType type : kt::floatTypes()) {
        for (int hidden : {769, 1024, 1152}) {
            for (int numTokens : {1, 7, 33}) {
                const std::string what =
                    kt::typeName(type) + " hidden " + std::to_string(hidden) + " tokens " + std::to_string(numTokens);
                const Rows x = stridedRows(numTokens, hidden, type, 101 + hidden + numTokens, 3.0);
                const at::Tensor res = kt::randn({numTokens, hidden}, 102 + hidden, type);
                const at::Tensor w = kt::randn({hidden}, 103 + hidden, type);
                // float32 reference over the same rounded inputs.
                const at::Tensor res32 = res.to(at::kFloat).clone();  // the reference updates it
                const at::Tensor ref = runReference(x.rows.to(at::kFloat), res32, w.to(at::kFloat));
                const at::Tensor refPlain = runReference(x.rows.to(at::kFloat), at::Tensor(), w.to(at::kFloat));

                const at::Tensor xCuda = x.wide.cuda().slice(1, 8, 8 + hidden), wCuda = w.cuda();
                const at::Tensor resCuda = res.cuda();
                const at::Tensor out = at::full({numTokens, hidden}, NAN, xCuda.options());
                lector::gpu::fusedAddRmsNorm(out, resCuda, xCuda, wCuda, kEps);
                const at::Tensor hNaive = xCuda + res.cuda();
                kt::expectClose(what + " residual", resCuda, res32, kt::nmseBound(type), hNaive);
                kt::expectClose(what + " fused", out, ref, kt::nmseBound(type), naive(hNaive, wCuda));

                // Plain norm, in place over the strided input.
                const at::Tensor inPlace = x.wide.cuda().slice(1, 8, 8 + hidden);
                lector::gpu::rmsNorm(inPlace, inPlace, wCuda, kEps);
                kt::expectClose(what + " plain in place", inPlace, refPlain, kt::nmseBound(type), naive(xCuda, wCuda));
            }
        }
    }
}

#endif  // LECTOR_HAVE_CUDA
