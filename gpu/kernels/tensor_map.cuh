// Host side of TMA: cuTensorMapEncodeTiled through the runtime's driver entry point (no link against
// libcuda), for the sm_90a kernels that load tiles with cp.async.bulk.tensor.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

namespace lector::gpu {

// The encoder, or null where the driver does not offer it.
inline PFN_cuTensorMapEncodeTiled_v12000 tensorMapEncoder()
{
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult status{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &status) != cudaSuccess ||
            status != cudaDriverEntryPointSuccess)
            fn = nullptr;
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }();
    return encode;
}

}  // namespace lector::gpu
