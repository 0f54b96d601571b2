// Reference normalise-and-patchify.
#include "gpu/ref/patchify_ref.h"

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {

void patchifyRef(const PatchifyParams& p)
{
    const int64_t pp = p.patch, width = int64_t{p.gridW} * pp;
    for (int64_t py = 0; py < p.gridH; ++py)
        for (int64_t px = 0; px < p.gridW; ++px) {
            const int64_t base = (py * p.gridW + px) * 3 * pp * pp;
            for (int c = 0; c < 3; ++c)
                for (int64_t y = 0; y < pp; ++y)
                    for (int64_t x = 0; x < pp; ++x) {
                        const uint8_t v = p.rgb[((py * pp + y) * width + px * pp + x) * 3 + c];
                        const float value = (static_cast<float>(v) / 255.0f - p.mean[c]) / p.std[c];
                        storeElem(p.out, base + (c * pp + y) * pp + x, p.dtype, value);
                    }
        }
}

}  // namespace lector::gpu::ref
