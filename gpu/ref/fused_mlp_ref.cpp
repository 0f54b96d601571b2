// Reference of the fused MLP block: the chain's four steps.
#include "gpu/ref/fused_mlp_ref.h"

#include <cstring>
#include <vector>

#include "gpu/kernels/rms_norm.cuh"
#include "gpu/kernels/silu_and_mul.cuh"
#include "gpu/kernels/skinny_gemm.cuh"
#include "gpu/ref/rms_norm_ref.h"
#include "gpu/ref/silu_and_mul_ref.h"
#include "gpu/ref/skinny_gemm_ref.h"

namespace lector::gpu::ref {

void fusedMlpRef(const FusedMlpParams& p)
{
    const size_t e = dtypeBytes(p.dtype), rows = p.rows, hidden = p.hidden, inter = p.intermediate;
    // residualOut = round(residualIn + delta); x = its norm (rms_norm.cuh's fused add, in place).
    std::memcpy(p.residualOut, p.residualIn, rows * hidden * e);
    std::vector<uint8_t> x(rows * hidden * e), gateUp(rows * 2 * inter * e), act(rows * inter * e);
    RmsNormParams n;
    n.dtype = p.dtype;
    n.out = x.data();
    n.input = p.delta;
    n.residual = p.residualOut;
    n.weight = p.normWeight;
    n.outStride = n.inputStride = n.residualStride = p.hidden;
    n.numTokens = p.rows;
    n.hidden = p.hidden;
    n.eps = p.eps;
    rmsNormRef(n);
    auto product = [&](void* out, const void* in, const void* weight, int n, int k) {
        SkinnyGemmParams g;
        g.dtype = p.dtype;
        g.out = out;
        g.x = in;
        g.weight = weight;
        g.outStride = n;
        g.xStride = k;
        g.weightStride = k;
        g.rows = p.rows;
        g.n = n;
        g.k = k;
        skinnyGemmRef(g);
    };
    product(gateUp.data(), x.data(), p.gateUp, 2 * p.intermediate, p.hidden);
    SiluAndMulParams s;
    s.dtype = p.dtype;
    s.out = act.data();
    s.input = gateUp.data();
    s.outStride = p.intermediate;
    s.inputStride = 2 * p.intermediate;
    s.numTokens = p.rows;
    s.d = p.intermediate;
    siluAndMulRef(s);
    product(p.out, act.data(), p.down, p.hidden, p.intermediate);
}

}  // namespace lector::gpu::ref
