// Reference (fused residual add +) RMSNorm.
#include "gpu/ref/rms_norm_ref.h"

#include <cmath>
#include <vector>

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {

void rmsNormRef(const RmsNormParams& p)
{
    std::vector<float> h(p.hidden);
    for (int t = 0; t < p.numTokens; ++t) {
        double sumSq = 0.0;
        for (int i = 0; i < p.hidden; ++i) {
            float v = loadElem(p.input, t * p.inputStride + i, p.dtype);
            if (p.residual) {
                // The sum is stored in the element type, and the norm reads the stored value.
                v = roundTo(p.dtype, v + loadElem(p.residual, t * p.residualStride + i, p.dtype));
                storeElem(p.residual, t * p.residualStride + i, p.dtype, v);
            }
            h[i] = v;
            sumSq += double(v) * v;
        }
        const double inv = 1.0 / std::sqrt(sumSq / p.hidden + p.eps);
        for (int i = 0; i < p.hidden; ++i)
            storeElem(p.out, t * p.outStride + i, p.dtype,
                      static_cast<float>(h[i] * inv * loadElem(p.weight, i, p.dtype)));
    }
}

}  // namespace lector::gpu::ref
