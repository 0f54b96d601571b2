// bench_sync_latency: what one dependency between all the multiprocessors costs on this card, the
// unit a decode step at one sequence is made of (24 layers x 5 to 7 such dependencies, docs/serving.md).
// The step's kernel chain pays it as kernel boundaries under PDL; a persistent decoder (perf.md calls 25
// to 36) pays it as waits on counters in global memory, or inside a thread-block cluster as cluster
// barriers. Each way is timed here with the data exchange a real dependency has (every CTA writes one
// partial, every CTA then reads all of them: an L2 round trip), and without it, on one CTA per
// multiprocessor, as us per dependency:
//   - kernel boundary: a graph of 240 launches of one kernel, each reading the partials its predecessor
//     wrote, with PDL (wait, then let the next launch) and without;
//   - grid barrier: one persistent kernel (a cooperative launch, so every CTA is resident) looping over
//     2400 dependencies; each CTA's first thread adds to a counter (release) and spins until every CTA
//     has (acquire), the ordering a persistent decoder needs;
//   - group barrier: the same among 16 CTAs at a time (a KV head's attention waits only for its rows);
//   - cluster barrier: clusters of 16 CTAs (non-portable size) meeting by barrier.cluster and reading each
//     other's partial through distributed shared memory.
// No model, no weights: this is the floor under any design with that many dependencies a step. Without
// libtorch:
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_sync_latency.cu \
//        -o build-gpu/bench_sync_latency
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/common.cuh"

namespace gpu = lector::gpu;
namespace bench = lector::bench;
namespace cg = cooperative_groups;

namespace {

using bench::check;
using gpu::addRelease;
using gpu::loadAcquire;

constexpr int kThreads = 256;
constexpr int kGroup = 16;

// The sum of `n` partials by the CTA (a warp's shuffles, then one exchange between the warps through
// shared memory): what a norm or a merge over every CTA's result reads after its dependency. Calls
// alternate `row` (0, 1), so consecutive calls need no second barrier between them.
__device__ float sumPartials(const float* partials, int n, int row)
{
    __shared__ float scratch[2][kThreads / 32];
    float v = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += __ldcg(partials + i);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) scratch[row][threadIdx.x >> 5] = v;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) total += scratch[row][w];
    return total;
}

// One dependency as a kernel boundary: read what the previous launch wrote, write this CTA's partial.
__global__ void __launch_bounds__(kThreads) boundaryKernel(const float* in, float* out, int exchange)
{
    gpu::gridDependencyWait();
    gpu::allowDependentLaunch();
    const float s = exchange ? sumPartials(in, gridDim.x, 0) : 1.0f;
    if (threadIdx.x == 0) out[blockIdx.x] = s * (1.0f / gridDim.x) + 1e-3f * blockIdx.x;
}

// `iters` dependencies inside one kernel, among groups of `group` consecutive CTAs (gridDim.x: all of
// them), each through its group's counter. Partials alternate between two buffers so a fast CTA never
// overwrites what a slow one still reads.
__global__ void __launch_bounds__(kThreads) barrierKernel(float* partials, unsigned* counters, int iters, int group, int exchange)
{
    const int g = blockIdx.x / group, first = g * group;
    unsigned* counter = counters + g * 32;  // one 128-byte line per group
    float s = 1.0f;
    for (int i = 0; i < iters; ++i) {
        float* buf = partials + (i & 1) * gridDim.x;
        if (threadIdx.x == 0) {
            if (exchange) buf[blockIdx.x] = s * (1.0f / group) + 1e-3f * blockIdx.x;
            addRelease(counter, 1);
            const unsigned target = unsigned(i + 1) * unsigned(group);
            while (loadAcquire(counter) < target) {
            }
        }
        __syncthreads();
        if (exchange) s = sumPartials(buf + first, group, i & 1);
    }
    if (threadIdx.x == 0 && s < 0.0f) partials[0] = s;  // keeps the sums
}

// `iters` dependencies among the CTAs of a cluster: barrier.cluster, then every partial by DSMEM.
__global__ void __launch_bounds__(kThreads) clusterKernel(float* sink, int iters, int exchange)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    (void)sink, (void)iters, (void)exchange;
    __trap();  // clusters are sm_90 and later; the launch fails before this on older cards
#else
    __shared__ float mine[2];
    const cg::cluster_group cluster = cg::this_cluster();
    const int n = static_cast<int>(cluster.num_blocks());
    float s = 1.0f;
    for (int i = 0; i < iters; ++i) {
        if (threadIdx.x == 0) mine[i & 1] = s * (1.0f / n) + 1e-3f * cluster.block_rank();
        cluster.sync();
        if (exchange) {
            float v = threadIdx.x < n ? *cluster.map_shared_rank(&mine[i & 1], threadIdx.x) : 0.0f;
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            s = v;  // lanes of warp 0 hold the sum; the others' s is not read
        }
    }
    cluster.sync();  // no CTA leaves while another may still read its shared memory
    if (threadIdx.x == 0 && s < 0.0f) sink[0] = s;
#endif
}

// About `us` microseconds of busy work on every multiprocessor: the clocks come up before the timings.
__global__ void spinKernel(long long cycles, float* sink)
{
    const long long start = clock64();
    float x = threadIdx.x;
    while (clock64() - start < cycles) x = x * 0.999f + 1.0f;
    if (x < 0.0f) sink[0] = x;
}

}  // namespace

int main()
{
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    bench::DeviceBuffer partials(size_t(4) * 2 * 1024), counters(size_t(4) * 32 * 64);
    float* bufs = static_cast<float*>(partials.ptr);
    check(cudaMemset(partials.ptr, 0, partials.bytes), "memset");
    spinKernel<<<sms * 4, 256>>>(1000000000LL, bufs);  // ~0.5 s at 2 GHz
    check(cudaDeviceSynchronize(), "warm-up");
    std::printf("# bench_sync_latency: one dependency among CTAs, one CTA of %d threads per multiprocessor (%d)\n",
                kThreads, sms);
    std::printf("| way | CTAs | us per dependency, exchanging partials | without the exchange |\n|---|---|---|---|\n");

    // Kernel boundaries: 240 launches in a graph, with and without PDL.
    constexpr int kLaunches = 240;
    for (const bool pdl : {true, false}) {
        double us[2];
        for (int exchange = 1; exchange >= 0; --exchange)
            us[exchange] = bench::graphMicros(stream, kLaunches, [&](int i) {
                const float* in = bufs + (i & 1) * 1024;
                float* out = bufs + ((i + 1) & 1) * 1024;
                if (pdl) return gpu::launchKernel(boundaryKernel, dim3(sms), dim3(kThreads), 0, stream, in, out, exchange) == cudaSuccess;
                boundaryKernel<<<sms, kThreads, 0, stream>>>(in, out, exchange);
                return cudaGetLastError() == cudaSuccess;
            });
        std::printf("| kernel boundary, %s | %d | %.2f | %.2f |\n", pdl ? "PDL" : "no PDL", sms, us[1], us[0]);
    }

    // Barriers inside one persistent kernel (on the default stream, which medianLaunchMs times): every
    // CTA, then groups of 16. us per dependency: the median launch over its kIters dependencies.
    constexpr int kIters = 2400, kReps = 7;
    auto* counterPtr = static_cast<unsigned*>(counters.ptr);
    for (const int group : {sms, kGroup}) {
        const int ctas = group == sms ? sms : (sms / kGroup) * kGroup;
        double us[2];
        for (int exchange = 1; exchange >= 0; --exchange) {
            auto launch = [&] {
                check(cudaMemsetAsync(counters.ptr, 0, counters.bytes), "memset");
                int iters = kIters, g = group, ex = exchange;
                void* args[] = {&bufs, &counterPtr, &iters, &g, &ex};
                check(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(barrierKernel), dim3(ctas), dim3(kThreads), args, 0, nullptr),
                      "cooperative launch");
            };
            us[exchange] = 1000.0 / kIters * bench::medianLaunchMs(launch, kReps);
        }
        std::printf("| grid barrier on counters, groups of %d | %d | %.2f | %.2f |\n", group, ctas, us[1], us[0]);
    }

    // Cluster barriers: clusters of 16 (non-portable, one GPC's worth) and of 8.
    for (const int size : {16, 8}) {
        if (size > 8)
            check(cudaFuncSetAttribute(clusterKernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), "non-portable clusters");
        const int ctas = (sms / size) * size;
        double us[2];
        bool ok = true;
        for (int exchange = 1; exchange >= 0 && ok; --exchange) {
            auto launch = [&] {
                if (ok && gpu::launchKernelInClusters(clusterKernel, dim3(ctas), dim3(kThreads), 0, nullptr, dim3(size, 1, 1), bufs,
                                                      kIters, exchange) != cudaSuccess) {
                    ok = false;
                    cudaGetLastError();
                }
            };
            us[exchange] = 1000.0 / kIters * bench::medianLaunchMs(launch, kReps);
        }
        if (ok) std::printf("| cluster barrier, clusters of %d | %d | %.2f | %.2f |\n", size, ctas, us[1], us[0]);
        else std::printf("| cluster barrier, clusters of %d | %d | did not launch | |\n", size, ctas);
    }
    check(cudaDeviceSynchronize(), "end");
    return 0;
}
