// Skinny GEMM (decode-step projections): the reference against libtorch float64, and the CUDA kernel
// against the reference for 1..8 rows, output counts that are not multiples of the CTA's 8 columns,
// K with and without 16-byte vectors (the decoder's 1024 / 2048 / 3584, and 13), and strided rows of x.
// The SiLU-and-mul input variant against siluAndMul followed by the plain product; the float32 output
// (the LM head's logits) against the dtype output widened. The tensor-core engine (sm_90) the same way,
// for 2..64 rows and every split of K.
#include <ATen/ATen.h>

#include <functional>
#include <utility>

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

// The plain product's Params for out [rows, n] = x [rows, k] weight [n, k]^T.
lector::gpu::SkinnyGemmParams paramsOf(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight)
{
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
    return p;
}

at::Tensor runReference(const at::Tensor& x, const at::Tensor& weight)
{
    const at::Tensor out = at::full({x.size(0), weight.size(0)}, NAN, x.options());
    lector::gpu::ref::skinnyGemmRef(paramsOf(out, x, weight));
    return out;
}

#ifdef LECTOR_HAVE_CUDA
// One engine on CUDA against the reference: random strided x [rows, k] and weight [n, k] of the type.
void expectEngineMatchesReference(lector::gpu::SkinnyEngine engine, at::ScalarType type, int n, int k, int rows,
                                  uint64_t seed, const std::string& label)
{
    const at::Tensor x = stridedX(rows, k, type, seed);
    const at::Tensor w = kt::randn({n, k}, seed + 1, type);
    const at::Tensor ref = runReference(x.to(at::kFloat), w.to(at::kFloat));
    const at::Tensor xc = x.cuda(), wc = w.cuda();
    const at::Tensor out = at::full({rows, n}, NAN, xc.options());
    lector::gpu::skinnyLinear(out, xc, wc, false, engine);
    kt::expectClose(label + kt::typeName(type) + " n " + std::to_string(n) + " k " + std::to_string(k) + " rows " +
                        std::to_string(rows),
                    out, ref, kt::nmseBound(type), at::matmul(xc, wc.t()));
}
#endif

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
            for (int rows : {1, 2, 5, 8})
                expectEngineMatchesReference(lector::gpu::SkinnyEngine::Simt, type, s.n, s.k, rows,
                                             31 + s.n + s.k + rows, "");
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

// --- the tensor-core engine (SkinnyEngine::TensorCore) ---

namespace {

bool throws(const std::function<void()>& f)
{
    try {
        f();
    } catch (const std::exception&) {
        return true;
    }
    return false;
}

}  // namespace

// On the CPU both engines are the reference, so the engine only sets how many rows are allowed: up to 64
// with tensor cores, up to 8 with SIMT.
LECTOR_TEST(tensorCoreEngineTakesUpTo64RowsOnTheCpu)
{
    constexpr auto tc = lector::gpu::SkinnyEngine::TensorCore;
    const at::Tensor x = kt::randn({37, 64}, 71), w = kt::randn({29, 64}, 72);
    const at::Tensor out = at::full({37, 29}, NAN);
    lector::gpu::skinnyLinear(out, x, w, false, tc);
    kt::expectClose("tc engine on cpu, 37 rows", out, at::matmul(x.to(at::kDouble), w.to(at::kDouble).t()), 1e-12);
    LECTOR_CHECK(throws([&] { lector::gpu::skinnyLinear(out, x, w); }));  // 37 rows > SIMT's 8
    const at::Tensor x65 = kt::randn({65, 64}, 73), out65 = at::empty({65, 29});
    LECTOR_CHECK(throws([&] { lector::gpu::skinnyLinear(out65, x65, w, false, tc); }));
}

#ifdef LECTOR_HAVE_CUDA

namespace {

void requireSm90()
{
    kt::requireCuda();
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess || major < 9)
        LECTOR_SKIP("the tensor-core engine needs sm_90");
}

// 13 strided rows x [999, 1024] through every split of K the engine's launcher takes (through the Params:
// gpu::ops picks the automatic one), against the reference. x from `seed`, the weight from seed + 1.
void expectEverySplitMatchesReference(lector::gpu::SkinnyEngine engine, at::ScalarType type, uint64_t seed,
                                      const std::string& label)
{
    const at::Tensor x = stridedX(13, 1024, type, seed).cuda(), w = kt::randn({999, 1024}, seed + 1, type).cuda();
    const at::Tensor ref = runReference(x.cpu().to(at::kFloat), w.cpu().to(at::kFloat));
    for (int split : {1, 2, 4, 8}) {
        const at::Tensor out = at::full({13, 999}, NAN, x.options());
        lector::gpu::SkinnyGemmParams p = paramsOf(out, x, w);
        p.engine = engine;
        p.splitK = split;
        LECTOR_CHECK_EQ(lector::gpu::launchSkinnyGemm(p, nullptr), cudaSuccess);
        LECTOR_CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
        kt::expectClose(label + kt::typeName(type) + " split " + std::to_string(split), out, ref, kt::nmseBound(type));
    }
}

}  // namespace

// The kernel against the reference: 2..64 rows (odd counts: partial 8-row tiles), output counts that are
// not multiples of its 64 columns, K of 32 times an odd number up to the decoder's 3584, strided rows of
// x, every split of K the launcher may pick (the cluster reduction) and the automatic one.
LECTOR_TEST(tensorCoreEngineMatchesReference)
{
    requireSm90();
    constexpr auto tc = lector::gpu::SkinnyEngine::TensorCore;
    struct Shape { int n, k; };
    const Shape shapes[] = {{37, 32}, {1000, 96}, {4101, 1024}, {1027, 3584}, {64, 2048}};
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        for (const Shape& s : shapes) {
            for (int rows : {2, 7, 8, 9, 31, 64})
                expectEngineMatchesReference(tc, type, s.n, s.k, rows, 81 + s.n + s.k + rows, "tc ");
        }
        expectEverySplitMatchesReference(tc, type, 91, "tc ");
    }
    // Refused, with a named error: float32, and K that is not a multiple of 32.
    const at::Tensor x32 = kt::randn({4, 64}, 93).cuda(), w32 = kt::randn({40, 64}, 94).cuda();
    LECTOR_CHECK(throws([&] { lector::gpu::skinnyLinear(at::empty({4, 40}, x32.options()), x32, w32, false, tc); }));
    const at::Tensor xh = kt::randn({4, 48}, 95, at::kHalf).cuda(), wh = kt::randn({40, 48}, 96, at::kHalf).cuda();
    LECTOR_CHECK(throws([&] { lector::gpu::skinnyLinear(at::empty({4, 40}, xh.options()), xh, wh, false, tc); }));
}

// Its SiLU-mul input, add + RMSNorm prologue (new residual written once, the input left alone) and
// float32 out, against the reference compositions, at the decoder's shapes and odd ones.
LECTOR_TEST(tensorCoreEngineVariantsMatchReference)
{
    requireSm90();
    constexpr auto tc = lector::gpu::SkinnyEngine::TensorCore;
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        for (int rows : {3, 16, 45, 64}) {
            for (int k : {96, 3584}) {  // SiLU-mul input
                const uint64_t seed = 101 + rows + k;
                const at::Tensor gu = kt::randn({rows, 2 * k}, seed, type, 2.0), w = kt::randn({1027, k}, seed + 1, type);
                const at::Tensor ref = siluThenReference(gu.to(at::kFloat), w.to(at::kFloat));
                const at::Tensor out = at::full({rows, 1027}, NAN, gu.options()).cuda();
                lector::gpu::skinnyLinear(out, gu.cuda(), w.cuda(), true, tc);
                kt::expectClose("tc " + kt::typeName(type) + " silu input, rows " + std::to_string(rows) + " k " +
                                    std::to_string(k),
                                out.cpu(), ref, kt::nmseBound(type));
            }
            // add + RMSNorm prologue; gate/up's 7168 columns at up to 16 rows take a split of 2, whose second
            // stage of weights waits in shared memory
            for (const auto& [k, n] : {std::pair{64, 4101}, std::pair{1024, 4101}, std::pair{1024, 7168}}) {
                const uint64_t seed = 111 + rows + k + n;
                const at::Tensor delta = kt::randn({rows, k}, seed, type);
                const at::Tensor residual = kt::randn({rows, k}, seed + 1, type, 3.0);
                const at::Tensor normWeight = (kt::randn({k}, seed + 2) * 0.2 + 1.0).to(type);
                const at::Tensor w = kt::randn({n, k}, seed + 3, type);
                const at::Tensor wantResidual = residual.clone(), want = at::empty({rows, n}, delta.options());
                lector::gpu::skinnyLinearAddRmsNorm(want, delta, residual, wantResidual, normWeight, 1e-5, w, tc);  // CPU
                const at::Tensor resIn = residual.cuda(), resOut = at::full_like(resIn, NAN);
                const at::Tensor out = at::full({rows, n}, NAN, resIn.options());
                lector::gpu::skinnyLinearAddRmsNorm(out, delta.cuda(), resIn, resOut, normWeight.cuda(), 1e-5, w.cuda(), tc);
                const std::string what = "tc " + kt::typeName(type) + " add+norm, rows " + std::to_string(rows) + " k " +
                                         std::to_string(k) + " n " + std::to_string(n);
                kt::expectClose(what, out.cpu(), want.to(at::kFloat), kt::nmseBound(type));
                LECTOR_CHECK_MSG(at::equal(resOut.cpu(), wantResidual), what << ": residual differs");
                LECTOR_CHECK(at::equal(resIn.cpu(), residual));
            }
            // float32 out: the rounded product widened, bit for bit against the kernel's own dtype output.
            const at::Tensor x = kt::randn({rows, 1024}, 121 + rows, type).cuda();
            const at::Tensor w = kt::randn({3001, 1024}, 122, type, 0.05).cuda();
            const at::Tensor rounded = at::empty({rows, 3001}, x.options());
            const at::Tensor widened = at::full({rows, 3001}, NAN, x.options().dtype(at::kFloat));
            lector::gpu::skinnyLinear(rounded, x, w, false, tc);
            lector::gpu::skinnyLinear(widened, x, w, false, tc);
            LECTOR_CHECK(at::equal(widened, rounded.to(at::kFloat)));
            kt::expectClose("tc " + kt::typeName(type) + " float32 out, rows " + std::to_string(rows), widened.cpu(),
                            runReference(x.cpu(), w.cpu()).to(at::kFloat), kt::nmseBound(type));
        }
    }
}

// --- the warp-group engine (SkinnyEngine::WarpGroup, sm_90a) ---

// Against the reference: 1..64 rows (each padded width of 16, 32 and 64, and partial ones), output counts
// that are not multiples of its 64 columns, K from one stage of 64 to the decoder's 3584 (many refills of
// its ring), strided rows of x, every split of K and float32 out (the rounded product, widened).
LECTOR_TEST(warpGroupEngineMatchesReference)
{
    requireSm90();
    constexpr auto wg = lector::gpu::SkinnyEngine::WarpGroup;
    struct Shape { int n, k; };
    const Shape shapes[] = {{37, 64}, {1000, 192}, {4101, 1024}, {1027, 3584}, {64, 2048}};
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        for (const Shape& s : shapes)
            for (int rows : {1, 9, 16, 17, 33, 64})
                expectEngineMatchesReference(wg, type, s.n, s.k, rows, 131 + s.n + s.k + rows, "wg ");
        expectEverySplitMatchesReference(wg, type, 141, "wg ");
        // float32 out: the rounded product widened, bit for bit, and against the reference.
        const at::Tensor x40 = kt::randn({40, 1024}, 143, type).cuda(), w3 = kt::randn({3001, 1024}, 144, type, 0.05).cuda();
        const at::Tensor rounded = at::empty({40, 3001}, x40.options());
        const at::Tensor widened = at::full({40, 3001}, NAN, x40.options().dtype(at::kFloat));
        lector::gpu::skinnyLinear(rounded, x40, w3, false, wg);
        lector::gpu::skinnyLinear(widened, x40, w3, false, wg);
        LECTOR_CHECK(at::equal(widened, rounded.to(at::kFloat)));
        kt::expectClose("wg " + kt::typeName(type) + " float32 out", widened.cpu(),
                        runReference(x40.cpu(), w3.cpu()).to(at::kFloat), kt::nmseBound(type));
    }
    // Refused, with a named error: float32, K not a multiple of 64, and the SiLU-mul input.
    const at::Tensor x32 = kt::randn({4, 64}, 145).cuda(), w32 = kt::randn({40, 64}, 146).cuda();
    LECTOR_CHECK(throws([&] { lector::gpu::skinnyLinear(at::empty({4, 40}, x32.options()), x32, w32, false, wg); }));
    const at::Tensor xh = kt::randn({4, 96}, 147, at::kHalf).cuda(), wh = kt::randn({40, 96}, 148, at::kHalf).cuda();
    LECTOR_CHECK(throws([&] { lector::gpu::skinnyLinear(at::empty({4, 40}, xh.options()), xh, wh, false, wg); }));
    const at::Tensor gu = kt::randn({4, 128}, 149, at::kHalf).cuda(), wd = kt::randn({40, 64}, 150, at::kHalf).cuda();
    LECTOR_CHECK(throws([&] { lector::gpu::skinnyLinear(at::empty({4, 40}, gu.options()), gu, wd, true, wg); }));
}

#endif  // LECTOR_HAVE_CUDA
