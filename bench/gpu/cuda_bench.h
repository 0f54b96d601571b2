// What the torch-free GPU benchmarks (bench_persistent_decode, bench_skinny_gemm, bench_decode_attention,
// bench_decode_step) share: a CUDA error check that ends the program, a device buffer, the
// device-to-device copy bandwidth their tables are measured against, the time of a captured sequence of
// launches, a list argument and the RoPE table of the decoder's kernels. CUDA runtime only; header-only, so each bench still builds with one
// nvcc line.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>  // program_invocation_short_name (glibc)
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <functional>
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
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int rep = 0; rep < 8; ++rep) {
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
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] * 1000.0 / calls;
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
