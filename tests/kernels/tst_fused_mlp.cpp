// The fused MLP block (residual add + RMSNorm, gate/up, SiLU-and-mul, down for decode rows): the reference
// against libtorch float64 at odd shapes, and the CUDA kernel against the reference at the decoder's
// shapes (1 to 32 rows, partial and whole 8-row tiles), with the output over the delta, twice in a row (the
// same bits: its tickets reset), and unsupported shapes rejected by name.
#include <ATen/ATen.h>

#include "gpu/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace kt = lector::test::kernels;

namespace {

struct Block {
    at::Tensor residual, delta, normWeight, gateUp, down;
};

Block makeBlock(int64_t rows, int64_t hidden, int64_t inter, at::ScalarType type, uint64_t seed)
{
    Block b;
    b.residual = kt::randn({rows, hidden}, seed, type, 1.0);
    b.delta = kt::randn({rows, hidden}, seed + 1, type, 0.5);
    b.normWeight = (kt::randn({hidden}, seed + 2, at::kFloat, 0.1) + 1.0).to(type);
    b.gateUp = kt::randn({2 * inter, hidden}, seed + 3, type, 1.0 / std::sqrt(double(hidden)));
    b.down = kt::randn({hidden, inter}, seed + 4, type, 1.0 / std::sqrt(double(inter)));
    return b;
}

Block to(const Block& b, const c10::Device& d)
{
    return {b.residual.to(d), b.delta.to(d), b.normWeight.to(d), b.gateUp.to(d), b.down.to(d)};
}

// out and residualOut of gpu::fusedMlp on the block's device.
std::pair<at::Tensor, at::Tensor> run(const Block& b, bool outOverDelta = false)
{
    const at::Tensor residualOut = at::full_like(b.residual, NAN);
    const at::Tensor delta = b.delta.clone();
    const at::Tensor out = outOverDelta ? delta : at::full_like(b.delta, NAN);
    lector::gpu::fusedMlp(out, delta, b.residual, residualOut, b.normWeight, 1e-5, b.gateUp, b.down);
    return {out, residualOut};
}

// The block in float64 from the float32 inputs, rounding nothing.
std::pair<at::Tensor, at::Tensor> naive(const Block& b)
{
    const at::Tensor r = b.residual.to(at::kDouble) + b.delta.to(at::kDouble);
    const at::Tensor x = r * at::rsqrt(r.pow(2).mean(-1, true) + 1e-5) * b.normWeight.to(at::kDouble);
    const at::Tensor gu = at::matmul(x, b.gateUp.to(at::kDouble).t());
    const int64_t inter = b.down.size(1);
    const at::Tensor act = at::silu(gu.narrow(1, 0, inter)) * gu.narrow(1, inter, inter);
    return {at::matmul(act, b.down.to(at::kDouble).t()), r};
}

}  // namespace

LECTOR_TEST(referenceMatchesFloat64)
{
    for (auto [rows, hidden, inter] : {std::tuple{1, 64, 96}, {3, 40, 24}, {5, 128, 200}}) {
        const Block b = makeBlock(rows, hidden, inter, at::kFloat, 31 + rows);
        const auto [out, residual] = run(b);
        const auto [wantOut, wantResidual] = naive(b);
        const std::string what = std::to_string(rows) + " x " + std::to_string(hidden) + ", intermediate " + std::to_string(inter);
        kt::expectClose("ref out vs float64, " + what, out, wantOut, 1e-10);
        kt::expectClose("ref residual vs float64, " + what, residual, wantResidual, 1e-12);
    }
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReference)
{
    kt::requireCuda();
    const c10::Device cuda(c10::kCUDA, 0);
    if (!lector::gpu::fusedMlpAvailable(cuda, at::kHalf, 1024, 3584)) {
        std::printf("  SKIP: this device does not run the fused MLP (sm_90 with clusters of 16)\n");
        return;
    }
    for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
        const std::vector<int> rowCounts = type == at::kHalf ? std::vector<int>{1, 2, 7, 8, 9, 17, 24, 31, 32}
                                                             : std::vector<int>{3, 16, 29};
        for (int rows : rowCounts) {
            const Block cpu = makeBlock(rows, 1024, 3584, type, 100 + rows);
            const auto [refOut, refResidual] = run(cpu);  // the reference, in the dtype
            const Block gpu = to(cpu, cuda);
            const bool over = rows % 2 == 1;
            const auto [out, residual] = run(gpu, over);
            const std::string what = kt::typeName(type) + " rows " + std::to_string(rows) + (over ? " (out over delta)" : "");
            kt::expectClose(what + " out", out.cpu().to(at::kFloat), refOut.to(at::kFloat), kt::nmseBound(type));
            LECTOR_CHECK_MSG(at::equal(residual.cpu(), refResidual), what << ": the residual differs from round(residual + delta)");
            const auto [again, unused] = run(gpu, over);
            LECTOR_CHECK_MSG(at::equal(again.cpu(), out.cpu()), what << ": a second launch gave other bits");
        }
    }
}

LECTOR_TEST(cudaRejectsUnsupportedShapes)
{
    kt::requireCuda();
    const c10::Device cuda(c10::kCUDA, 0);
    auto rejects = [&](int rows, int hidden, int inter, const std::string& expect) {
        const Block b = to(makeBlock(rows, hidden, inter, at::kHalf, 7), cuda);
        std::string message;
        try {
            run(b);
        } catch (const c10::Error& e) {
            message = e.what();
        }
        std::printf("  %d x %d, intermediate %d: %s\n", rows, hidden, inter, message.substr(0, 120).c_str());
        LECTOR_CHECK_MSG(message.find(expect) != std::string::npos, "expected '" << expect << "', got '" << message << "'");
    };
    rejects(33, 1024, 3584, "1 to 32 rows");
    rejects(4, 512, 3584, "hidden 1024 and intermediate 3584");
}

#endif  // LECTOR_HAVE_CUDA
