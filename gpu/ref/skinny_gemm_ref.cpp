// Reference skinny GEMM: out[r, n] = sum_k x[r, k] * weight[n, k] (x[r, k] = silu(gate) * up, rounded,
// with siluMulInput).
#include "gpu/ref/skinny_gemm_ref.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gpu/ref/element_ref.h"
#include "gpu/ref/rms_norm_ref.h"

namespace lector::gpu::ref {

void skinnyGemmRef(const SkinnyGemmParams& p)
{
    if (p.normWeight) {
        // By definition: residualOut = residualIn, then rms_norm's fused add + RMSNorm into a buffer of
        // normalised rows, then the plain product of those.
        for (int r = 0; r < p.rows; ++r)
            for (int k = 0; k < p.k; ++k)
                storeElem(p.residualOut, r * p.residualStride + k, p.dtype,
                          loadElem(p.residualIn, r * p.residualStride + k, p.dtype));
        RmsNormParams n;
        n.dtype = p.dtype;
        n.input = p.x;
        n.inputStride = p.xStride;
        n.residual = p.residualOut;
        n.residualStride = p.residualStride;
        n.weight = p.normWeight;
        n.numTokens = p.rows;
        n.hidden = p.k;
        n.eps = p.eps;
        // rmsNormRef stores into out in p.dtype; keep a dtype-typed buffer and read it back as x.
        std::vector<uint8_t> out(static_cast<size_t>(p.rows) * p.k * 4);
        n.out = out.data();
        n.outStride = p.k;
        rmsNormRef(n);
        SkinnyGemmParams plain = p;
        plain.normWeight = nullptr;
        plain.x = out.data();
        plain.xStride = p.k;
        skinnyGemmRef(plain);
        return;
    }
    for (int r = 0; r < p.rows; ++r) {
        for (int n = 0; n < p.n; ++n) {
            double sum = 0.0;
            for (int k = 0; k < p.k; ++k) {
                double xk = loadElem(p.x, r * p.xStride + k, p.dtype);
                if (p.siluMulInput) {
                    const double up = loadElem(p.x, r * p.xStride + p.k + k, p.dtype);
                    xk = roundTo(p.dtype, static_cast<float>(xk / (1.0 + std::exp(-xk)) * up));
                }
                sum += xk * loadElem(p.weight, n * p.weightStride + k, p.dtype);
            }
            const float rounded = roundTo(p.dtype, static_cast<float>(sum));
            if (p.outFloat) static_cast<float*>(p.out)[r * p.outStride + n] = rounded;
            else storeElem(p.out, r * p.outStride + n, p.dtype, rounded);
        }
    }
}

}  // namespace lector::gpu::ref
