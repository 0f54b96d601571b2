// Plain C++ vocabulary shared by every kernel header, the CPU references and gpu/ops.cpp: element
// types, the paged-KV block size and the host/device function marker. No CUDA or torch header is
// needed to include it, so gpu/ref builds on machines without CUDA.
//
// Launcher declarations (cudaError_t launch<Op>(...)) are visible only where the CUDA runtime headers
// are: in .cu files (nvcc) and in targets linking lector_gpu_kernels (LECTOR_GPU_LAUNCHERS=1).
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(LECTOR_GPU_LAUNCHERS)
#include <cuda_runtime_api.h>
#define LECTOR_GPU_HAVE_LAUNCHERS 1
#endif

#ifdef __CUDACC__
#define LECTOR_HD __host__ __device__
#else
#define LECTOR_HD
#endif

namespace lector::gpu {

// Element type of a kernel's floating-point tensors. Accumulation is always float32.
enum class DType : int32_t { F32, F16, BF16 };

constexpr int dtypeBytes(DType t) { return t == DType::F32 ? 4 : 2; }

constexpr const char* dtypeName(DType t)
{
    return t == DType::F32 ? "float32" : t == DType::F16 ? "float16" : "bfloat16";
}

// Tokens per paged-KV block. Every paged kernel and the KV cache manager share this constant
// (vLLM's and FlashInfer's default page size); the kernels unroll over it.
constexpr int kKvBlockSize = 16;

constexpr int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace lector::gpu
