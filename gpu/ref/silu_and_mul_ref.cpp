// Reference SwiGLU: out = silu(gate) * up.
#include "gpu/ref/silu_and_mul_ref.h"

#include <cmath>

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {

void siluAndMulRef(const SiluAndMulParams& p)
{
    for (int t = 0; t < p.numTokens; ++t) {
        for (int i = 0; i < p.d; ++i) {
            const double g = loadElem(p.input, t * p.inputStride + i, p.dtype);
            const double u = loadElem(p.input, t * p.inputStride + p.d + i, p.dtype);
            storeElem(p.out, t * p.outStride + i, p.dtype, static_cast<float>(g / (1.0 + std::exp(-g)) * u));
        }
    }
}

}  // namespace lector::gpu::ref
