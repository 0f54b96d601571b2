// What the torch-free GPU benchmarks (bench_persistent_decode, bench_skinny_gemm) share: a CUDA error
// check that ends the program, a device buffer, and the device-to-device copy bandwidth their tables are
// measured against. CUDA runtime only; header-only, so each bench still builds with one nvcc line.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>  // program_invocation_short_name (glibc)
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace lector::bench {

// Prints "<program>: <what>: <CUDA error>" and exits 1 on any error.
inline void check(cudaError_t err, const char* what)
{
    if (err == cudaSuccess) return;
    std::fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, cudaGetErrorString(err));
    std::exit(1);
}

struct DeviceBuffer {
    void* ptr = nullptr;
    size_t bytes = 0;
    explicit DeviceBuffer(size_t n) : bytes(n) { check(cudaMalloc(&ptr, std::max<size_t>(n, 16)), "cudaMalloc"); }
    ~DeviceBuffer() { cudaFree(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Bytes per second read + written by a 2 GiB device-to-device copy: median of 10 copies after 2 warm-up.
inline double copyBandwidth()
{
    const size_t bytes = size_t(2) << 30;
    DeviceBuffer a(bytes), b(bytes);
    check(cudaMemset(a.ptr, 1, bytes), "memset");
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int i = 0; i < 12; ++i) {
        cudaEventRecord(e0);
        check(cudaMemcpyAsync(b.ptr, a.ptr, bytes, cudaMemcpyDeviceToDevice), "copy");
        cudaEventRecord(e1);
        check(cudaEventSynchronize(e1), "copy");
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        if (i >= 2) ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    std::sort(ms.begin(), ms.end());
    return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3);
}

}  // namespace lector::bench
