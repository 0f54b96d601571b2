// SiLU-and-multiply: the reference against libtorch float64, and the CUDA kernel against the
// reference, for the decoder's width (3584), odd widths (7, 769) and strided input rows.
#include <ATen/ATen.h>

#include "gpu/ref/silu_and_mul_ref.h"
#include "tests/kernels/kernel_test_util.h"
#ifdef LECTOR_HAVE_CUDA
#include "gpu/ops.h"
#endif

namespace kt = lector::test::kernels;

namespace {

// A [numTokens, 2d + 8] tensor whose first 2d columns are the input, so input rows are strided.
at::Tensor makeWide(int numTokens, int d, at::ScalarType type, uint64_t seed)
{
    return kt::randn({numTokens, 2 * d + 8}, seed, type, 2.0);
}

at::Tensor inputOf(const at::Tensor& wide) { return wide.slice(1, 0, wide.size(1) - 8); }

at::Tensor runReference(const at::Tensor& input)
{
    const int64_t d = input.size(1) / 2;
    const at::Tensor out = at::full({input.size(0), d}, NAN, input.options());
    lector::gpu::SiluAndMulParams p;
    p.dtype = kt::toDType(input.scalar_type());
    p.out = out.data_ptr();
    p.input = input.data_ptr();
    p.outStride = out.stride(0);
    p.inputStride = input.stride(0);
    p.numTokens = static_cast<int>(input.size(0));
    p.d = static_cast<int>(d);
    lector::gpu::ref::siluAndMulRef(p);
    return out;
}

at::Tensor naive(const at::Tensor& input)
{
    const int64_t d = input.size(1) / 2;
    return at::silu(input.slice(1, 0, d)) * input.slice(1, d, 2 * d);
}

}  // namespace

LECTOR_TEST(referenceMatchesFloat64)
{
    for (int d : {7, 769, 3584}) {
        const at::Tensor input = inputOf(makeWide(5, d, at::kFloat, 71 + d));
        kt::expectClose("ref vs float64, d " + std::to_string(d), runReference(input),
                        naive(input.to(at::kDouble)), 1e-12);
    }
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReference)
{
    kt::requireCuda();
    for (at::ScalarType type : kt::floatTypes()) {
        for (int d : {7, 769, 3584}) {
            for (int numTokens : {1, 7, 64}) {
                const at::Tensor wide = makeWide(numTokens, d, type, 81 + d + numTokens);
                const at::Tensor ref = runReference(inputOf(wide.to(at::kFloat)));
                const at::Tensor in = inputOf(wide.cuda());
                const at::Tensor out = at::full({numTokens, d}, NAN, in.options());
                lector::gpu::siluAndMul(out, in);
                kt::expectClose(kt::typeName(type) + " d " + std::to_string(d) + " tokens " +
                                    std::to_string(numTokens),
                                out, ref, kt::nmseBound(type), naive(in));
            }
        }
    }
}

#endif  // LECTOR_HAVE_CUDA
