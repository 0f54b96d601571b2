// Reference skinny GEMM: out[r, n] = sum_k x[r, k] * weight[n, k] (x[r, k] = silu(gate) * up, rounded,
// with siluMulInput).
#include "gpu/ref/skinny_gemm_ref.h"

#include <cmath>

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {

void skinnyGemmRef(const SkinnyGemmParams& p)
{
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
            storeElem(p.out, r * p.outStride + n, p.dtype, static_cast<float>(sum));
        }
    }
}

}  // namespace lector::gpu::ref
