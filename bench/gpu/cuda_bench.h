// What the torch-free GPU benchmarks (bench_persistent_decode, bench_skinny_gemm, bench_decode_attention,
// bench_decode_step, bench_prefill) share: a CUDA error check that ends the program, a device buffer
// (uploaded, or filled with random float16 on the device), random float16 on the host, the error of a
// float16 result against the CPU reference's, the device-to-device copy bandwidth their tables are
// measured against, the median time of a launch, of an instantiated graph and of a captured sequence of launches, a list argument and the RoPE table of
// the decoder's kernels. CUDA runtime only; header-only, so each bench still builds with one nvcc line.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>  // program_invocation_short_name (glibc)
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "gpu/ref/element_ref.h"

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

template <class T>
std::unique_ptr<DeviceBuffer> upload(const std::vector<T>& v)
{
    auto b = std::make_unique<DeviceBuffer>(v.size() * sizeof(T));
    check(cudaMemcpy(b->ptr, v.data(), b->bytes, cudaMemcpyHostToDevice), "upload");
    return b;
}

// Uniform values in [offset - scale, offset + scale] from a hash of the index: a gigabyte of weights
// without a host copy.
__global__ void fillHalvesKernel(__half* dst, size_t n, uint32_t seed, float scale, float offset)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        uint32_t h = uint32_t(i) * 2654435761u ^ seed * 0x9e3779b9u ^ uint32_t(i >> 32);
        h ^= h >> 15;
        h *= 0x2c1b3c6du;
        h ^= h >> 12;
        dst[i] = __float2half(offset + scale * (float(h & 0xffffff) / float(0x800000) - 1.0f));
    }
}

inline std::unique_ptr<DeviceBuffer> halves(size_t n, uint32_t seed, float scale, float offset = 0.0f)
{
    auto b = std::make_unique<DeviceBuffer>(n * 2);
    fillHalvesKernel<<<1024, 256>>>(static_cast<__half*>(b->ptr), n, seed, scale, offset);
    check(cudaGetLastError(), "fill");
    return b;
}

// n standard normal values as float16 bits, from a seeded generator on the host.
inline std::vector<uint16_t> randomHalfBits(size_t n, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> u(0.0f, 1.0f);
    std::vector<uint16_t> bits(n);
    for (auto& b : bits) b = gpu::ref::floatToHalfBits(u(rng));
    return bits;
}

// sum (got - want)^2 / sum want^2 over float16 bits; a non-finite element of got makes it infinite.
inline double halfNmse(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want)
{
    double err = 0, norm = 0;
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
        const double a = gpu::ref::halfBitsToFloat(got[i]), b = gpu::ref::halfBitsToFloat(want[i]);
        err += std::isfinite(a) ? (a - b) * (a - b) : INFINITY;
        norm += b * b;
    }
    return err / std::max(norm, 1e-30);
}

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

// Median milliseconds of `reps` event-timed runs of `launch` on the default stream, after 3 warm-up runs.
inline double medianLaunchMs(const std::function<void()>& launch, int reps)
{
    for (int i = 0; i < 3; ++i) launch();
    check(cudaDeviceSynchronize(), "warm-up");
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) {
        cudaEventRecord(e0);
        launch();
        cudaEventRecord(e1);
        check(cudaEventSynchronize(e1), "timed run");
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// Milliseconds of one launch of an instantiated graph: 8 launches, the median of the last 7; `before`
// (if any) queues work ahead of each launch, outside the timing.
inline double graphExecMs(cudaGraphExec_t exec, cudaStream_t stream, const std::function<void()>& before = {})
{
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int rep = 0; rep < 8; ++rep) {
        if (before) before();
        cudaEventRecord(e0, stream);
        check(cudaGraphLaunch(exec, stream), "replay");
        cudaEventRecord(e1, stream);
        check(cudaEventSynchronize(e1), "replay");
        float m = 0;
        cudaEventElapsedTime(&m, e0, e1);
        if (rep > 0) ms.push_back(m);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

// Microseconds per call: call(0 .. calls - 1) captured in one CUDA graph (kernels launched with PDL
// chain as in a decode step), replayed 8 times, the median of the last 7. NaN when a call fails (the
// error is cleared).
inline double graphMicros(cudaStream_t stream, int calls, const std::function<bool(int)>& call)
{
    cudaGraph_t graph;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    bool ok = true;
    for (int i = 0; i < calls; ++i) ok = call(i) && ok;
    check(cudaStreamEndCapture(stream, &graph), "capture");
    if (!ok) {
        cudaGraphDestroy(graph);
        cudaGetLastError();
        return NAN;
    }
    cudaGraphExec_t exec;
    check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    const double ms = graphExecMs(exec, stream);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return ms * 1000.0 / calls;
}

// "1,2,32" -> {1, 2, 32}: the benches' lists of batch sizes.
inline std::vector<int> parseList(const char* s)
{
    std::vector<int> out;
    for (const char* p = s; *p;) {
        out.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
    }
    return out;
}

// The rotary table the decoder's kernels read (gpu/kernels/qk_norm_rope.cuh): for each position p,
// cos(p * 10000^(-2j / headDim)) at j and its sine at headDim / 2 + j, j < headDim / 2.
inline std::vector<float> ropeTable(int positions, int headDim)
{
    std::vector<float> cs(size_t(positions) * headDim);
    for (int p = 0; p < positions; ++p)
        for (int j = 0; j < headDim / 2; ++j) {
            const double a = p * std::pow(10000.0, -2.0 * j / headDim);
            cs[size_t(p) * headDim + j] = float(std::cos(a));
            cs[size_t(p) * headDim + headDim / 2 + j] = float(std::sin(a));
        }
    return cs;
}

}  // namespace lector::bench
