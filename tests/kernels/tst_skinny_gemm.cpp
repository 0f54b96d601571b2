// Skinny GEMM (decode-step projections): the reference against libtorch float64, and the CUDA kernel
// against the reference for 1..8 rows, output counts that are not multiples of the CTA's 8 columns,
// K with and without 16-byte vectors (the decoder's 1024 / 2048 / 3584, and 13), and strided rows of x.
// The SiLU-and-mul input variant against siluAndMul followed by the plain product; the float32 output
// (the LM head's logits) against the dtype output widened.
#include <ATen/ATen.h>

#include "gpu/ref/skinny_gemm_ref.h"
#include "gpu/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace kt = lector::test::kernels;

namespace {

// x as the first k columns of a wider tensor, so its rows are strided.
at::Tensor stridedX(int rows, int k, at::ScalarType type, uint64_t seed)
{
    return kt::randn({rows, k + 8}, seed, type).slice(1, 0, k);
}

at::Tensor runReference(const at::Tensor& x, const at::Tensor& weight)
{
    const at::Tensor out = at::full({x.size(0), weight.size(0)}, NAN, x.options());
    lector::gpu::SkinnyGemmParams p;
    p.dtype = kt::toDType(x.scalar_type());
    p.out = out.data_ptr();
    p.x = x.data_ptr();
    p.weight = weight.data_ptr();
    p.outStride = out.stride(0);
    p.xStride = x.stride(0);
    p.weightStride = weight.stride(0);
    p.rows = static_cast<int>(x.size(0));
    p.n = static_cast<int>(weight.size(0));
    p.k = static_cast<int>(x.size(1));
    lector::gpu::ref::skinnyGemmRef(p);
    return out;
}

}  // namespace

LECTOR_TEST(referenceMatchesFloat64)
{
    for (int rows : {1, 3, 8}) {
        for (int k : {13, 264}) {
            const at::Tensor x = stridedX(rows, k, at::kFloat, 11 + rows + k);
            const at::Tensor w = kt::randn({37, k}, 23 + k, at::kFloat);
            kt::expectClose("ref vs float64, rows " + std::to_string(rows) + " k " + std::to_string(k), runReference(x, w),
                            at::matmul(x.to(at::kDouble), w.to(at::kDouble).t()), 1e-12);
        }
    }
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReference)
{
    kt::requireCuda();
    struct Shape { int n, k; };
    const Shape shapes[] = {{1, 8}, {37, 13}, {1000, 264}, {4101, 1024}, {1024, 2048}, {1027, 3584}};
    for (at::ScalarType type : kt::floatTypes()) {
        for (const Shape& s : shapes) {
            for (int rows : {1, 2, 5, 8}) {
                const uint64_t seed = 31 + s.n + s.k + rows;
                const at::Tensor x = stridedX(rows, s.k, type, seed);
                const at::Tensor w = kt::randn({s.n, s.k}, seed + 1, type);
                const at::Tensor ref = runReference(x.to(at::kFloat), w.to(at::kFloat));
                const at::Tensor xc = x.cuda(), wc = w.cuda();
                const at::Tensor out = at::full({rows, s.n}, NAN, xc.options());
                lector::gpu::skinnyLinear(out, xc, wc);
                kt::expectClose(kt::typeName(type) + " n " + std::to_string(s.n) + " k " + std::to_string(s.k) + " rows " +
                                    std::to_string(rows),
                                out, ref, kt::nmseBound(type), at::matmul(xc, wc.t()));
            }
        }
    }
}

#endif  // LECTOR_HAVE_CUDA

namespace {

// siluAndMul of gate/up [rows, 2k] (on the CPU: its reference), then the plain skinny reference.
at::Tensor siluThenReference(const at::Tensor& gateUp, const at::Tensor& weight)
{
    const at::Tensor act = at::empty({gateUp.size(0), gateUp.size(1) / 2}, gateUp.options());
    lector::gpu::siluAndMul(act, gateUp);
    return runReference(act, weight);
}

}  // namespace

LECTOR_TEST(siluMulInputMatchesSiluThenProduct)
{
    for (at::ScalarType type : {at::kFloat, at::kHalf, at::kBFloat16}) {
        for (int rows : {1, 3}) {
            for (int k : {13, 264}) {
                const uint64_t seed = 41 + rows + k;
                const at::Tensor gateUp = kt::randn({rows, 2 * k}, seed, type, 2.0);
                const at::Tensor w = kt::randn({29, k}, seed + 1, type);
                const at::Tensor want = siluThenReference(gateUp, w);
                const at::Tensor got = at::full({rows, 29}, NAN, gateUp.options());
                lector::gpu::skinnyLinear(got, gateUp, w, /*siluMulInput=*/true);  // CPU: the reference
                LECTOR_CHECK(at::equal(got, want));
                // ... and it is not the plain product of the gate half.
                LECTOR_CHECK(!at::allclose(got.to(at::kFloat), runReference(gateUp.slice(1, 0, k), w).to(at::kFloat),
                                           1e-2, 1e-2));
#ifdef LECTOR_HAVE_CUDA
                if (!at::hasCUDA()) continue;
                for (int bigK : {k, 3584}) {
                    const at::Tensor gu = kt::randn({rows, 2 * bigK}, seed + 2, type, 2.0);
                    const at::Tensor wb = kt::randn({1027, bigK}, seed + 3, type);
                    const at::Tensor ref = siluThenReference(gu.to(at::kFloat), wb.to(at::kFloat));
                    const at::Tensor out = at::full({rows, 1027}, NAN, gu.options()).cuda();
                    lector::gpu::skinnyLinear(out, gu.cuda(), wb.cuda(), true);
                    kt::expectClose(kt::typeName(type) + " silu input, rows " + std::to_string(rows) + " k " +
                                        std::to_string(bigK),
                                    out.cpu(), ref, kt::nmseBound(type));
                }
#endif
            }
        }
    }
}

// The add + RMSNorm prologue (skinnyLinearAddRmsNorm) against fusedAddRmsNorm followed by the plain
// product: on the CPU bit for bit (the reference is that composition, checked here against the two ops),
// on CUDA within the dtype bound, including the new residual; the input residual stays as it was.
LECTOR_TEST(addRmsNormPrologueMatchesNormThenProduct)
{
    for (at::ScalarType type : {at::kFloat, at::kHalf, at::kBFloat16}) {
        for (int rows : {1, 2, 7}) {
            for (int k : {64, 1024}) {
                const uint64_t seed = 61 + rows + k;
                const at::Tensor delta = kt::randn({rows, k}, seed, type);
                const at::Tensor residual = kt::randn({rows, k}, seed + 1, type, 3.0);
                const at::Tensor normWeight = (kt::randn({k}, seed + 2) * 0.2 + 1.0).to(type);
                const at::Tensor w = kt::randn({37, k}, seed + 3, type);
                // Want: the two ops one after the other.
                const at::Tensor wantResidual = residual.clone(), h = at::empty_like(delta);
                lector::gpu::fusedAddRmsNorm(h, wantResidual, delta, normWeight, 1e-5);
                const at::Tensor want = at::empty({rows, 37}, delta.options());
                lector::gpu::skinnyLinear(want, h, w);
                LECTOR_CHECK(!at::equal(wantResidual, residual));

                const at::Tensor got = at::full({rows, 37}, NAN, delta.options());
                const at::Tensor gotResidual = at::full_like(residual, NAN);
                lector::gpu::skinnyLinearAddRmsNorm(got, delta, residual, gotResidual, normWeight, 1e-5, w);
                const std::string what = kt::typeName(type) + " rows " + std::to_string(rows) + " k " + std::to_string(k);
                LECTOR_CHECK_MSG(at::equal(got, want), what << ": cpu product differs");
                LECTOR_CHECK_MSG(at::equal(gotResidual, wantResidual), what << ": cpu residual differs");
#ifdef LECTOR_HAVE_CUDA
                if (!at::hasCUDA()) continue;
                const at::Tensor resIn = residual.cuda(), resOut = at::full_like(resIn, NAN);
                const at::Tensor out = at::full({rows, 37}, NAN, resIn.options());
                lector::gpu::skinnyLinearAddRmsNorm(out, delta.cuda(), resIn, resOut, normWeight.cuda(), 1e-5, w.cuda());
                kt::expectClose(what + " add+norm prologue", out.cpu(), want.to(at::kFloat), kt::nmseBound(type));
                LECTOR_CHECK_MSG(at::equal(resOut.cpu(), wantResidual), what << ": cuda residual differs");
                LECTOR_CHECK(at::equal(resIn.cpu(), residual));
#endif
            }
        }
    }
}

// A float32 out (the LM head's logits): the dtype-rounded product, widened. Through gpu::skinnyLinear, so
// the CPU run checks the reference and the CUDA run the kernel, each against its own dtype output.
LECTOR_TEST(floatOutputIsTheRoundedProductWidened)
{
    std::vector<at::Device> devices{at::kCPU};
#ifdef LECTOR_HAVE_CUDA
    if (at::hasCUDA()) devices.push_back(at::kCUDA);
#endif
    for (const at::Device& device : devices) {
        for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
            const at::Tensor x = kt::randn({3, 1024}, 61, type).to(device);
            const at::Tensor weight = kt::randn({1001, 1024}, 62, type, 0.05).to(device);
            const at::Tensor rounded = at::empty({3, 1001}, x.options());
            const at::Tensor widened = at::full({3, 1001}, NAN, x.options().dtype(at::kFloat));
            lector::gpu::skinnyLinear(rounded, x, weight);
            lector::gpu::skinnyLinear(widened, x, weight);
            LECTOR_CHECK_MSG(at::equal(widened, rounded.to(at::kFloat)),
                             kt::typeName(type) << " on " << device << ": float32 out is not the rounded product");
            kt::expectClose(kt::typeName(type) + " float32 out vs reference on " + c10::DeviceTypeName(device.type()),
                            widened, runReference(x.cpu(), weight.cpu()).to(at::kFloat), kt::nmseBound(type));
        }
    }
}
