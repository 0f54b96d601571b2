// bench_persistent_skeleton: how fast could a persistent batch-1 decoder be on this card? The decode
// step's skeleton without the model's arithmetic: per layer five stages with the decoder's bytes (qkv
// 8 MB, the K/V of a 1076-token context 4.4 MB, o 4 MB, gate/up 14.7 MB, down 7.3 MB), each a dot of every
// CTA's slice of them against the stage's input vector, and between stages the dependency the real step
// has: every CTA writes its outputs, waits until every CTA has (a grid-wide counter, release / acquire),
// then reads the whole vector the next stage multiplies. 24 layers in one cooperative kernel, one CTA of
// 256 threads a multiprocessor (-DLECTOR_SKELETON_THREADS, -DLECTOR_SKELETON_CTAS_PER_SM change that).
//
// The question is how much of the weight stream can hide under the dependencies (perf.md, call 135:
// ~1.3 us each, ~200 us of the step whatever makes them). Each thread keeps its share of a stage's
// weights in registers (16-byte loads), issued
//   - after the stage's wait (nothing hidden),
//   - before the stage's wait,
//   - one stage ahead: the next stage's loads go out before this stage's wait (two stages in registers),
// against the same kernel without the waits (the stream alone) and without the weights (the waits alone),
// and a producer warp streaming the slices into a ring of shared memory by bulk copies (the scheme of
// gpu/kernels/persistent_decode.cu). On the H200 (perf.md, calls 136-140) the best took 18.0-18.4 us a
// layer, against 9.3 for the waits alone and 9.3 for the bytes at copy bandwidth. Not a decoder: the dots are summed per thread, not per row (the same loads, conversions and FMAs as a
// row-wise product, fewer shuffles), and attention is one more product over the K/V bytes. Without
// libtorch:
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_persistent_skeleton.cu \
//        -o build-gpu/bench_persistent_skeleton
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/common.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#pragma nv_diag_suppress 177  // the ring's helpers are unused where the ring is a trap
#endif

namespace bench = lector::bench;
namespace gpu = lector::gpu;

namespace {

using bench::check;
using gpu::addRelease;
using gpu::loadAcquire;

// Threads of the register variants' CTA (-DLECTOR_SKELETON_THREADS=512: twice the loads in flight, half
// the registers a thread).
#ifndef LECTOR_SKELETON_THREADS
#define LECTOR_SKELETON_THREADS 256
#endif
constexpr int kThreads = LECTOR_SKELETON_THREADS;
// CTAs a multiprocessor for the register variants (-DLECTOR_SKELETON_CTAS_PER_SM=2: one CTA's serial part
// of a stage beside the other's loads).
#ifndef LECTOR_SKELETON_CTAS_PER_SM
#define LECTOR_SKELETON_CTAS_PER_SM 1
#endif
constexpr int kCtasPerSm = LECTOR_SKELETON_CTAS_PER_SM;
constexpr int kLayers = 24;
constexpr int kStages = 5;  // qkv, attention, o, gate/up, down
constexpr int kMaxInput = 4096;

// Bytes of a layer's stage, and the length of the vector it multiplies (what the stage before wrote).
__host__ __device__ constexpr long long stageBytes(int s)
{
    return s == 0 ? 4096LL * 1024 * 2 : s == 1 ? 1076LL * 8 * 128 * 2 * 2 : s == 2 ? 1024LL * 2048 * 2
         : s == 3 ? 7168LL * 1024 * 2 : 1024LL * 3584 * 2;
}
__host__ __device__ constexpr int inputLen(int s) { return s == 0 ? 1024 : s == 1 ? 4096 : s == 2 ? 2048 : s == 3 ? 1024 : 3584; }
__host__ __device__ constexpr int outputLen(int s) { return s == 0 ? 4096 : s == 1 ? 2048 : s == 2 ? 1024 : s == 3 ? 3584 : 1024; }

// 16-byte vectors a thread holds of a stage on 132 multiprocessors.
constexpr int vecsPerThread(int s)
{
    const long long perCta = (stageBytes(s) / 16 + 132 * kCtasPerSm - 1) / (132 * kCtasPerSm);
    return int((perCta + kThreads - 1) / kThreads);
}
constexpr int kVec0 = vecsPerThread(0), kVec1 = vecsPerThread(1), kVec2 = vecsPerThread(2), kVec3 = vecsPerThread(3),
              kVec4 = vecsPerThread(4);

enum Mode : int { kAfterWait, kBeforeWait, kStageAhead, kNoWaits, kNoWeights };

struct Params {
    const uint4* weights[kStages];  // [kLayers][stage bytes / 16]
    __half* vectors;                // [kStages][kMaxInput]: stage s writes vectors[s]
    unsigned* counters;             // [kLayers][kStages], one 128-byte line each
    float* sink;
};

// This CTA's slice of layer l's stage s: the stage's bytes split evenly over the grid.
struct Slice {
    const uint4* base;
    int vecs;  // 16-byte vectors of this CTA's slice
};

__device__ __forceinline__ Slice sliceOf(const Params& p, int s, int l)
{
    const long long total = stageBytes(s) / 16, slice = (total + gridDim.x - 1) / gridDim.x;
    const long long first = blockIdx.x * slice;
    return {p.weights[s] + l * total + first, int(max(0LL, min(slice, total - first)))};
}

// The counter of the stage before stage s of layer l (none before the first).
__device__ __forceinline__ const unsigned* previousCounter(const Params& p, int s, int l)
{
    if (s == 0 && l == 0) return nullptr;
    return p.counters + (s == 0 ? (l - 1) * kStages + kStages - 1 : l * kStages + s - 1) * 32;
}

// Until every CTA has finished the stage behind `counter`; thread 0 polls, `sync` meets the others.
template <class Sync>
__device__ void waitFor(const unsigned* counter, Sync sync)
{
    if (threadIdx.x == 0)
        while (loadAcquire(counter) < gridDim.x) {
        }
    sync();
}

__device__ void arrive(unsigned* counter)
{
    __syncthreads();  // every thread's outputs are written
    if (threadIdx.x == 0) addRelease(counter, 1);
}

template <int N>
struct Regs {
    uint4 v[N];
};

// The thread's share of layer l's stage s: vector i of the CTA's slice is i * kThreads + thread.
template <int N>
__device__ __forceinline__ void loadStage(Regs<N>& r, const Params& p, int s, int l)
{
    const Slice sl = sliceOf(p, s, l);
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int at = i * kThreads + threadIdx.x;
        r.v[i] = at < sl.vecs ? __ldcs(sl.base + at) : make_uint4(0, 0, 0, 0);
    }
}

// The stage's input vector (what the stage before wrote) into shared memory as float32, by `threads`
// threads; the caller syncs them. Through the L2 (ld.cg): other multiprocessors wrote it, and L1 is not
// coherent.
__device__ void fillInput(float* x, const Params& p, int s, int threads)
{
    const __half* src = p.vectors + ((s + kStages - 1) % kStages) * kMaxInput;
    for (int i = threadIdx.x; i < inputLen(s) / 2; i += threads) {
        const float2 f = __half22float2(__ldcg(reinterpret_cast<const __half2*>(src) + i));
        x[2 * i] = f.x;
        x[2 * i + 1] = f.y;
    }
}

__device__ void loadInput(float* x, const Params& p, int s)
{
    fillInput(x, p, s, kThreads);
    __syncthreads();
}

// acc + the dot of 8 weights with x[col .. col + 8) (float32 in shared memory, 16-byte aligned).
__device__ __forceinline__ float dot8(const uint4& raw, const float* x, int col, float acc)
{
    float xs[8];
    *reinterpret_cast<float4*>(xs) = *reinterpret_cast<const float4*>(x + col);
    *reinterpret_cast<float4*>(xs + 4) = *reinterpret_cast<const float4*>(x + col + 4);
    const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const float2 f = __half22float2(h[j]);
        acc = fmaf(f.x, xs[2 * j], acc);
        acc = fmaf(f.y, xs[2 * j + 1], acc);
    }
    return acc;
}

// The CTA's sum of its threads' dots (`kWarps` warps, met by `sync`) written as its rows of the stage's
// output (the real step writes one value a row it owns); warpSums is free again when it returns.
template <int kWarps, class Sync>
__device__ void writeStage(float acc, float* warpSums, const Params& p, int s, Sync sync)
{
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) warpSums[threadIdx.x >> 5] = acc;
    sync();
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += warpSums[w];
    const int per = (outputLen(s) + gridDim.x - 1) / gridDim.x, first = blockIdx.x * per;
    if (threadIdx.x < per && first + threadIdx.x < outputLen(s))
        p.vectors[s * kMaxInput + first + threadIdx.x] = __float2half(total * 1e-6f);
    sync();
}

// The dot of the thread's weights against x, the CTA's sum, and the CTA's share of the stage's output.
template <int N>
__device__ void computeStage(const Regs<N>& r, const float* x, const Params& p, int s)
{
    __shared__ float warpSums[kThreads / 32];
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        acc = dot8(r.v[i], x, ((i * kThreads + threadIdx.x) * 8) % inputLen(s), acc);
    }
    writeStage<kThreads / 32>(acc, warpSums, p, s, [] { __syncthreads(); });
}

template <int kMode>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) skeletonKernel(Params p)
{
    __shared__ __align__(16) float x[kMaxInput];
    // Without waits the stream runs one stage ahead; without weights the products run on zeros.
    constexpr bool waits = kMode != kNoWaits, weights = kMode != kNoWeights;
    constexpr bool ahead = kMode == kStageAhead || kMode == kNoWaits;
    Regs<kVec0> w0{};
    Regs<kVec1> w1{};
    Regs<kVec2> w2{};
    Regs<kVec3> w3{};
    Regs<kVec4> w4{};
    // One stage: its weights (where the mode says), its wait, its input, its product, its arrival.
    auto stage = [&]<int kN>(Regs<kN>& r, int s, int l, auto loadNext) {
        const unsigned* previous = previousCounter(p, s, l);
        if (weights && kMode == kBeforeWait) loadStage(r, p, s, l);
        if (weights && ahead) loadNext();
        if (waits && previous) waitFor(previous, [] { __syncthreads(); });
        if (weights && kMode == kAfterWait) loadStage(r, p, s, l);
        loadInput(x, p, s);
        computeStage(r, x, p, s);
        arrive(p.counters + (l * kStages + s) * 32);
    };
    if (weights && ahead) loadStage(w0, p, 0, 0);
    for (int l = 0; l < kLayers; ++l) {
        stage(w0, 0, l, [&] { loadStage(w1, p, 1, l); });
        stage(w1, 1, l, [&] { loadStage(w2, p, 2, l); });
        stage(w2, 2, l, [&] { loadStage(w3, p, 3, l); });
        stage(w3, 3, l, [&] { loadStage(w4, p, 4, l); });
        stage(w4, 4, l, [&] {
            if (l + 1 < kLayers) loadStage(w0, p, 0, l + 1);
        });
    }
    if (threadIdx.x == 0 && x[0] < -1e30f) p.sink[0] = x[0];
}

// --- the same with a producer warp streaming the weights into a ring of shared memory ---
// (gpu/kernels/persistent_decode.cu's scheme: cp.async.bulk into slots completing on "full" mbarriers,
// the consumer warps releasing each slot through its "empty" one.) The producer runs ahead of the
// consumers by the ring's depth wherever they wait for the other CTAs.

constexpr int kConsumers = 256, kRingThreads = kConsumers + 32;
constexpr int kSlotBytes = 16 * 1024, kSlots = 12;
constexpr int kRingSmem = kSlots * kSlotBytes + 2 * kSlots * 8 + kMaxInput * 4 + 64;

__device__ __forceinline__ void bulkCopy(void* dst, const void* src, uint32_t bytes, uint64_t* bar)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     gpu::smemAddr(dst)),
                 "l"(src), "r"(bytes), "r"(gpu::smemAddr(bar))
                 : "memory");
#else
    (void)dst, (void)src, (void)bytes, (void)bar;
#endif
}

__device__ __forceinline__ void consumerSync() { asm volatile("barrier.sync 1, %0;" ::"n"(kConsumers) : "memory"); }

template <bool kWaits>
__global__ void __launch_bounds__(kRingThreads, 1) ringKernel(Params p)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    (void)p;
    __trap();  // bulk copies and mbarriers are sm_90; main() runs this only there
#else
    extern __shared__ __align__(128) uint8_t smem[];
    uint4* ring = reinterpret_cast<uint4*>(smem);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + kSlots * kSlotBytes);
    uint64_t* empty = full + kSlots;
    float* x = reinterpret_cast<float*>(empty + kSlots);
    __shared__ float warpSums[kConsumers / 32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        for (int i = 0; i < kSlots; ++i) {
            gpu::mbarInit(full + i, 1);
            gpu::mbarInit(empty + i, kConsumers / 32);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    constexpr int kSlotVecs = kSlotBytes / 16;
    if (warp == kConsumers / 32) {  // the producer
        if (lane == 0) {
            uint32_t chunk = 0;
            for (int l = 0; l < kLayers; ++l)
                for (int s = 0; s < kStages; ++s) {
                    const Slice sl = sliceOf(p, s, l);
                    for (int v = 0; v < sl.vecs; v += kSlotVecs, ++chunk) {
                        const uint32_t slot = chunk % kSlots;
                        if (chunk >= kSlots) gpu::mbarWait(empty + slot, ((chunk / kSlots) - 1) & 1);
                        const uint32_t bytes = uint32_t(min(kSlotVecs, sl.vecs - v)) * 16;
                        gpu::mbarArriveExpectTx(full + slot, bytes);
                        bulkCopy(ring + slot * kSlotVecs, sl.base + v, bytes, full + slot);
                    }
                }
        }
        return;
    }
    uint32_t chunk = 0;
    for (int l = 0; l < kLayers; ++l)
        for (int s = 0; s < kStages; ++s) {
            if (const unsigned* previous = previousCounter(p, s, l); kWaits && previous) waitFor(previous, [] { consumerSync(); });
            fillInput(x, p, s, kConsumers);
            consumerSync();
            const Slice sl = sliceOf(p, s, l);
            float acc = 0.0f;
            for (int v = 0; v < sl.vecs; v += kSlotVecs, ++chunk) {
                const uint32_t slot = chunk % kSlots;
                gpu::mbarWait(full + slot, (chunk / kSlots) & 1);
                const int n = min(kSlotVecs, sl.vecs - v);
                const uint4* w = ring + slot * kSlotVecs;
                for (int i = threadIdx.x; i < n; i += kConsumers) acc = dot8(w[i], x, ((v + i) * 8) % inputLen(s), acc);
                __syncwarp();
                if (lane == 0) gpu::mbarArrive(empty + slot);
            }
            writeStage<kConsumers / 32>(acc, warpSums, p, s, [] { consumerSync(); });  // x is free again too
            if (threadIdx.x == 0) addRelease(p.counters + (l * kStages + s) * 32, 1);
        }
#endif
}

}  // namespace

int main()
{
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
    if (sms != 132) std::printf("# note: register shares are sized for 132 multiprocessors, this card has %d\n", sms);
    Params p{};
    std::vector<std::unique_ptr<bench::DeviceBuffer>> buffers;
    long long layerBytes = 0;
    for (int s = 0; s < kStages; ++s) {
        buffers.push_back(bench::halves(size_t(stageBytes(s) / 2) * kLayers, 11 + s, 0.05f));
        p.weights[s] = static_cast<const uint4*>(buffers.back()->ptr);
        layerBytes += stageBytes(s);
    }
    bench::DeviceBuffer vectors(size_t(kStages) * kMaxInput * 2), counters(size_t(kLayers) * kStages * 128), sink(16);
    check(cudaMemset(vectors.ptr, 0, vectors.bytes), "memset");
    p.vectors = static_cast<__half*>(vectors.ptr);
    p.counters = static_cast<unsigned*>(counters.ptr);
    p.sink = static_cast<float*>(sink.ptr);
    const double bandwidth = bench::copyBandwidth();
    const double floorUs = 1e6 * double(layerBytes) * kLayers / bandwidth;
    std::printf("# bench_persistent_skeleton: 24 layers of 5 stages, %.1f MB a layer, %d CTAs of %d threads (the ring: %d of %d)\n",
                layerBytes / 1e6, sms * kCtasPerSm, kThreads, sms, kRingThreads);
    std::printf("copy bandwidth %.0f GB/s: the layers' bytes take %.1f us (%.2f a layer)\n", bandwidth / 1e9, floorUs,
                floorUs / kLayers);
    std::printf("| weights in registers | us for 24 layers, median of 9 | a layer | of copy bandwidth |\n|---|---|---|---|\n");
    // Timed here rather than by bench::medianLaunchMs: the counters' reset stays outside the timed window.
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "event");
    check(cudaEventCreate(&b), "event");
    auto run = [&](auto kernel, const char* name, int threads = kThreads, int smemBytes = 0, int ctas = 0) {
        if (ctas == 0) ctas = sms * kCtasPerSm;
        std::vector<double> us;
        for (int r = 0; r < 10; ++r) {
            check(cudaMemsetAsync(counters.ptr, 0, counters.bytes), "memset");
            check(cudaEventRecord(a), "record");
            void* args[] = {&p};
            check(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kernel), dim3(ctas), dim3(threads), args, smemBytes, nullptr),
                  name);
            check(cudaEventRecord(b), "record");
            check(cudaEventSynchronize(b), name);
            float ms = 0;
            check(cudaEventElapsedTime(&ms, a, b), "elapsed");
            if (r > 0) us.push_back(1000.0 * ms);  // the first run warms up
        }
        std::sort(us.begin(), us.end());
        const double t = us[us.size() / 2];
        std::printf("| %s | %.1f | %.2f | %.0f %% |\n", name, t, t / kLayers, 100.0 * floorUs / t);
    };
    run(skeletonKernel<kNoWeights>, "none (the waits and exchanges alone)");
    run(skeletonKernel<kNoWaits>, "before the product, no waits (the stream alone)");
    run(skeletonKernel<kAfterWait>, "after each wait");
    run(skeletonKernel<kBeforeWait>, "before each wait");
    run(skeletonKernel<kStageAhead>, "one stage ahead");
    int major = 0;
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), "compute capability");
    if (major < 9) return 0;  // the ring needs sm_90's bulk copies
    for (auto* kernel : {ringKernel<false>, ringKernel<true>})
        check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingSmem), "shared memory");
    run(ringKernel<false>, "a producer warp's ring of 12 x 16 KB in shared memory, no waits (the stream alone)",
        kRingThreads, kRingSmem, sms);
    run(ringKernel<true>, "a producer warp's ring of 12 x 16 KB in shared memory", kRingThreads, kRingSmem, sms);
    cudaFuncAttributes attr{};
    check(cudaFuncGetAttributes(&attr, skeletonKernel<kStageAhead>), "attributes");
    std::printf("one stage ahead: %d registers, %zu bytes of local memory a thread\n", attr.numRegs, attr.localSizeBytes);
    return 0;
}
