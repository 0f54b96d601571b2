// The vision tower's input on the device: an image's RGB bytes normalised ((u8 / 255 - mean) / std, in
// float32, rounded once to the dtype) and cut into patch x patch squares, written as the patch
// embedding reads them: rows of patches in raster order, each channel-major (c * patch^2 + y * patch + x).
// The same float operations as core/model/hunyuan/preprocess.cpp's patchify(), so the values are equal
// to the bit. Copying 3 bytes a pixel to the GPU instead of 6 (float16 patches) or 12 (float32), and no
// pass over the page on a host core. Engine thread.
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

struct PatchifyParams {
    DType dtype = DType::F16;
    void* out = nullptr;              // [gridH * gridW, 3 * patch * patch], contiguous
    const uint8_t* rgb = nullptr;     // [gridH * patch, gridW * patch, 3] interleaved R G B, contiguous
    int gridH = 0;                    // patches per column
    int gridW = 0;                    // patches per row
    int patch = 0;                    // side of a patch in pixels
    float mean[3] = {0, 0, 0};        // per channel, on the 0..1 scale
    float std[3] = {1, 1, 1};
};

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
cudaError_t launchPatchify(const PatchifyParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
