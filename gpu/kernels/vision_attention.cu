// Vision-tower attention on Hopper (declarations and the design: vision_attention.cuh).
//
// A CTA is kWarpGroups warp groups of kBlocks m64 blocks of query rows each (shape 0: 2 x 2, 256 rows)
// of one (image, head). Per key tile of 64:
//   - K and V arrive by cp.async into a ring of kStages stages, kLookahead tiles ahead. A tile's 64 keys
//     x 9 chunks of 8 dims are copied key by key (a warp reads whole rows: full 32-byte sectors of L2)
//     into wgmma's canonical layout without swizzle: chunk c of key k at c * kRegion + k * 16, so every
//     8 keys x 8 dims core matrix is 128 contiguous bytes. Q sits in shared memory the same way.
//   - S = Q K^T for each block (both operands from shared memory, K-major). Five k-steps of 16 dims;
//     Q's and the K tiles' chunk of dims 72..79 is zeroed shared memory, never loaded.
//   - Block b's online softmax (base 2, running max and sum per row) runs while later blocks' S are
//     still on the tensor cores; then O += P V for it (P from the S registers, rounded to T, as the A
//     operand; V as the shared-memory operand, MN-major, n = 72) runs beside the next block's softmax.
// The grid holds every (row block, head, image); row blocks past an image's end exit.
//
// Where it stands (docs/perf.md, calls 103-106): correct, but 7.2 ms a page against libtorch's SDPA at
// 5.7-6.3, so the tower keeps SDPA unless LECTOR_VISION_ATTENTION=kernel. ncu: with 128 rows a CTA
// the kernel is bound by L2 throughput (75-81 %: every CTA streams its head's K/V in 16-byte copies);
// with 256 rows that halves and the per-tile chain (barrier, S, softmax, PV, all warps in step) bounds
// it. FlashAttention-3's remedies are the next step: TMA bulk loads by a producer warp, and warp groups
// that alternate softmax and products instead of meeting at a barrier every tile.
#include "gpu/kernels/vision_attention.cuh"

#include "gpu/kernels/common.cuh"

// The wgmma code exists only in the sm_90a pass (wgmma needs the arch-specific target); the CMake target
// of this file builds only that, and the launcher runs it only on compute capability 9.0.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LECTOR_VISION_WGMMA 1
#else
// The host pass sees constants that only the device-only body uses.
#pragma nv_diag_suppress 177
#endif

namespace lector::gpu {
namespace {

constexpr int kKeys = 64;                       // keys per tile
constexpr int kDim = kVisionAttentionHeadDim;   // 72
constexpr int kChunks = kDim / 8;               // 16-byte chunks of a head's row
constexpr int kQkSteps = 5;                     // k-steps of 16 dims: 0..79, the last half zero
constexpr int kPvSteps = kKeys / 16;
constexpr int kSAcc = kKeys / 2;                // S accumulators a thread: m64n64
constexpr int kOAcc = kDim / 2;                 // O accumulators a thread: m64n72
constexpr int kRegion = kKeys * 16;             // bytes of one chunk of all of a tile's keys
constexpr int kGroupBytes = 128;                // one core matrix: 8 keys (rows) x 16 bytes
constexpr int kKBytes = (kChunks + 1) * kRegion;  // K with its zero chunk of dims 72..79
constexpr int kVBytes = kChunks * kRegion;
constexpr int kStageBytes = kKBytes + kVBytes;
constexpr int kQBlockBytes = kKBytes;            // a block's 64 rows of Q, laid out like a K tile
static_assert(kStageBytes % 128 == 0 && kQkSteps * 16 >= kDim && kKeys == 64, "an m64 block of Q is one K tile");

// A CTA's shape: kWarpGroups warp groups of kBlocks m64 blocks of query rows each, sharing a ring of
// kStages K/V stages; kMinCtas CTAs an SM (bounds the registers).
template <int kWarpGroups_, int kBlocks_, int kStages_, int kMinCtas_>
struct Shape {
    static constexpr int kWarpGroups = kWarpGroups_, kBlocks = kBlocks_, kStages = kStages_, kMinCtas = kMinCtas_;
    static constexpr int kThreads = 128 * kWarpGroups;
    static constexpr int kRows = 64 * kBlocks * kWarpGroups;
    static constexpr int kLookahead = kStages - 2;  // the tile in use and the one PV may still read
    static constexpr int kQBytes = kBlocks * kWarpGroups * kQBlockBytes;
    static constexpr int kSmemBytes = kQBytes + kStages * kStageBytes;
    static_assert(kStages >= 3 && kSmemBytes <= 227 * 1024);
};

// --- wgmma (sm_90a) ---

// A shared-memory matrix descriptor without swizzle: start address, the byte distance between core
// matrices along K (leading) and along M/N (stride).
__device__ __forceinline__ uint64_t smemDescriptor(uint32_t addr, uint32_t leadingBytes, uint32_t strideBytes)
{
    return uint64_t((addr & 0x3FFFFu) >> 4) | uint64_t(leadingBytes >> 4) << 16 | uint64_t(strideBytes >> 4) << 32;
}

__device__ __forceinline__ void wgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmmaCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N of the warp group's committed wgmma groups are in flight.
template <int N>
__device__ __forceinline__ void wgmmaWait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// Keeps the compiler from moving reads or writes of accumulators across a wgmma wait: the asynchronous
// products own those registers until the wait returns.
template <int N>
__device__ __forceinline__ void pinRegisters(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
// And P's fragments: computed before the fence that starts their products (else ptxas serializes every
// wgmma of the kernel, C7513).
template <int M, int N>
__device__ __forceinline__ void pinRegisters(uint32_t (&r)[M][N])
{
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
        for (int j = 0; j < N; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}

// Makes this thread's generic-proxy shared-memory writes (cp.async, stores) visible to wgmma's reads.
__device__ __forceinline__ void fenceAsyncProxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// The operand lists of the two wgmma shapes (one "+f" per accumulator register).
#define LECTOR_WGMMA_D32_REGS "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define LECTOR_WGMMA_D32_OPERANDS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define LECTOR_WGMMA_D36_REGS "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35"
#define LECTOR_WGMMA_D36_OPERANDS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])

// d (+)= A B for m64n64k16: A = the K-major shared-memory tile `descA`, B = the K-major shared-memory
// tile `descB`. scaleD == 0 overwrites d.
template <class T>
__device__ __forceinline__ void wgmmaM64N64(float (&d)[32], uint64_t descA, uint64_t descB, int scaleD)
{
#ifdef LECTOR_VISION_WGMMA
    if constexpr (std::is_same_v<T, __half>)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" LECTOR_WGMMA_D32_REGS "}, "
                     "%32, %33, p, 1, 1, 0, 0;\n}\n"
                     : LECTOR_WGMMA_D32_OPERANDS
                     : "l"(descA), "l"(descB), "r"(scaleD));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" LECTOR_WGMMA_D32_REGS "}, "
                     "%32, %33, p, 1, 1, 0, 0;\n}\n"
                     : LECTOR_WGMMA_D32_OPERANDS
                     : "l"(descA), "l"(descB), "r"(scaleD));
#else
    (void)d, (void)descA, (void)descB, (void)scaleD;
#endif
}

// d += A B for m64n72k16, B = the MN-major shared-memory tile `desc` (transposed: n runs along memory).
template <class T>
__device__ __forceinline__ void wgmmaM64N72(float (&d)[36], const uint32_t (&a)[4], uint64_t desc)
{
#ifdef LECTOR_VISION_WGMMA
    if constexpr (std::is_same_v<T, __half>)
        asm volatile("{\n"
                     "wgmma.mma_async.sync.aligned.m64n72k16.f32.f16.f16 {" LECTOR_WGMMA_D36_REGS "}, "
                     "{%36, %37, %38, %39}, %40, 1, 1, 1, 1;\n}\n"
                     : LECTOR_WGMMA_D36_OPERANDS
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
    else
        asm volatile("{\n"
                     "wgmma.mma_async.sync.aligned.m64n72k16.f32.bf16.bf16 {" LECTOR_WGMMA_D36_REGS "}, "
                     "{%36, %37, %38, %39}, %40, 1, 1, 1, 1;\n}\n"
                     : LECTOR_WGMMA_D36_OPERANDS
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
#else
    (void)d, (void)a, (void)desc;
#endif
}

// --- the kernel ---

// One block's online softmax over a tile: s holds its scores (m64n64 layout: s[4j + 2h + e] is row
// group + 8h, key 8j + 2 quad + e), masked past `validKeys`. Rescales o and the running max and sum,
// and leaves P = 2^(s * scaleLog2 - max), rounded to T, in pf, the A-operand fragments of PV's four
// k-steps: the accumulator layout of keys 16t..16t+15 is the A layout of k-step t, so the pair (j, h)
// lands in pf[j / 2][2 (j % 2) + h]. (Exponentials of packed pairs in T, two per instruction, were
// slower: calls 104-106 in docs/perf.md.)
template <class T>
__device__ __forceinline__ void softmaxTile(float (&s)[kSAcc], float (&o)[kOAcc], float (&rowMax)[2], float (&rowSum)[2],
                                            uint32_t (&pf)[kPvSteps][4], int validKeys, int quad, float scaleLog2)
{
    if (validKeys < kKeys) {
#pragma unroll
        for (int i = 0; i < kSAcc; ++i)
            if ((i / 4) * 8 + 2 * quad + (i & 1) >= validKeys) s[i] = -INFINITY;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = rowMax[h];
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // Every tile holds a valid key, so mx is finite; the first tile's correction is exp2(-inf) = 0.
        const float corr = fastExp2((rowMax[h] - mx) * scaleLog2);
        rowMax[h] = mx;
        const float bias = mx * scaleLog2;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j) {
            const float x0 = fmaf(s[4 * j + 2 * h], scaleLog2, -bias), x1 = fmaf(s[4 * j + 2 * h + 1], scaleLog2, -bias);
            const float p0 = fastExp2(x0), p1 = fastExp2(x1);
            pf[j / 2][2 * (j % 2) + h] = packPair<T>(p0, p1);
            sum += p0 + p1;
        }
        rowSum[h] = rowSum[h] * corr + sum;  // this thread's columns; the quad is summed at the end
#pragma unroll
        for (int j = 0; j < kChunks; ++j) {
            o[4 * j + 2 * h] *= corr;
            o[4 * j + 2 * h + 1] *= corr;
        }
    }
}

template <class T, class S>
__global__ void __launch_bounds__(S::kThreads, S::kMinCtas) visionAttentionKernel(const VisionAttentionParams p)
{
#ifdef LECTOR_VISION_WGMMA
    constexpr int kThreads = S::kThreads, kRows = S::kRows, kBlocks = S::kBlocks, kStages = S::kStages;
    constexpr int kLookahead = S::kLookahead, kQBytes = S::kQBytes;
    extern __shared__ __align__(128) uint8_t smem[];
    gridDependencyWait();
    const int image = blockIdx.z, head = blockIdx.y;
    const int first = p.cuSeqlens[image];
    const int len = p.cuSeqlens[image + 1] - first;
    const int rowBase = blockIdx.x * kRows;
    if (rowBase >= len) return;
    allowDependentLaunch();
    const int tid = threadIdx.x, warp = (tid >> 5) & 3, lane = tid & 31, quad = lane & 3, group = lane >> 2;
    const int firstBlock = (tid >> 7) * kBlocks;  // this warp group's blocks of the CTA's rows
    const int64_t ld = p.qkvRowStride;
    const T* rows = static_cast<const T*>(p.qkv) + int64_t(first) * ld;
    const T* keys = rows + (p.numHeads + head) * kDim;
    const T* values = rows + (2 * p.numHeads + head) * kDim;
    const uint32_t smemBase = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    const int numTiles = (len + kKeys - 1) / kKeys;

    uint8_t* const ring = smem + kQBytes;
    for (int i = tid; i < kStages * kKeys; i += kThreads)
        *reinterpret_cast<uint4*>(ring + (i / kKeys) * kStageBytes + kChunks * kRegion + (i % kKeys) * 16) =
            make_uint4(0, 0, 0, 0);

    // Q's rows (rows past the image are zeros, never stored), with the K tiles' layout; dims 72..79
    // zero. In the first commit group, with tile 0.
    for (int i = tid; i < kRows * (kChunks + 1); i += kThreads) {
        const int r = i / (kChunks + 1), c = i % (kChunks + 1);
        uint8_t* dst = smem + (r / 64) * kQBlockBytes + c * kRegion + (r % 64) * 16;
        if (c == kChunks) {
            *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
            continue;
        }
        const bool valid = rowBase + r < len;
        cpAsync16(dst, rows + int64_t(valid ? rowBase + r : 0) * ld + head * kDim + c * 8, valid);
    }

    // Tile `tile`'s K and V into its stage (one commit group either way, so the waits count tiles).
    auto loadTile = [&](int tile) {
        if (tile < numTiles) {
            uint8_t* stage = ring + (tile % kStages) * kStageBytes;
            const int key0 = tile * kKeys;
#pragma unroll
            for (int i = tid; i < 2 * kKeys * kChunks; i += kThreads) {  // K's copies, then V's, key by key
                const bool isV = i >= kKeys * kChunks;
                const int j = isV ? i - kKeys * kChunks : i;
                const int key = j / kChunks, c = j % kChunks;
                const bool valid = key0 + key < len;
                const T* src = (isV ? values : keys) + int64_t(valid ? key0 + key : 0) * ld + c * 8;
                cpAsync16(stage + (isV ? kKBytes : 0) + c * kRegion + key * 16, src, valid);
            }
        }
        cpAsyncCommit();
    };
#pragma unroll
    for (int t = 0; t < kLookahead; ++t) loadTile(t);

    const float scaleLog2 = p.scale * 1.4426950408889634f;
    float s[kBlocks][kSAcc];
    float o[kBlocks][kOAcc];
    float rowMax[kBlocks][2], rowSum[kBlocks][2];
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) {
#pragma unroll
        for (int i = 0; i < kOAcc; ++i) o[b][i] = 0.0f;
        rowMax[b][0] = rowMax[b][1] = -INFINITY;
        rowSum[b][0] = rowSum[b][1] = 0.0f;
    }
    uint32_t pf[kBlocks][kPvSteps][4];  // a set per block: block 1's softmax runs beside block 0's PV

    for (int tile = 0; tile < numTiles; ++tile) {
        cpAsyncWait<kLookahead - 1>();  // this thread's copies of `tile` have landed
        fenceAsyncProxy();
        __syncthreads();                // everyone's have, and every PV of the tile before is done
        loadTile(tile + kLookahead);
        const uint32_t kTile = smemBase + kQBytes + (tile % kStages) * kStageBytes, vTile = kTile + kKBytes;
        const int validKeys = len - tile * kKeys;

        // Descriptors: a Q block or K tile for QK^T is K-major (along K the next 8 dims are kRegion on,
        // along M/N the next 8 rows kGroupBytes on); a V tile for PV is MN-major (along K the next 8 keys
        // kGroupBytes on, along N the next 8 dims kRegion on).
        wgmmaFence();
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) {
#pragma unroll
            for (int st = 0; st < kQkSteps; ++st)
                wgmmaM64N64<T>(s[b], smemDescriptor(smemBase + (firstBlock + b) * kQBlockBytes + st * 2 * kRegion, kRegion, kGroupBytes),
                               smemDescriptor(kTile + st * 2 * kRegion, kRegion, kGroupBytes), st);
            wgmmaCommit();
            pinRegisters(s[b]);
        }
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) {
            // Block b's S is done; the kBlocks - 1 groups after it (later blocks' S, earlier blocks'
            // PV) may still run.
            wgmmaWait<kBlocks - 1>();
            pinRegisters(s[b]);
            pinRegisters(o[b]);
            softmaxTile<T>(s[b], o[b], rowMax[b], rowSum[b], pf[b], validKeys, quad, scaleLog2);
            pinRegisters(pf[b]);
            pinRegisters(o[b]);
            wgmmaFence();
#pragma unroll
            for (int t = 0; t < kPvSteps; ++t)
                wgmmaM64N72<T>(o[b], pf[b][t], smemDescriptor(vTile + t * 2 * 128, kGroupBytes, kRegion));
            wgmmaCommit();
            pinRegisters(pf[b]);
            pinRegisters(o[b]);
        }
        // Nothing stays in flight across the loop's back edge: ptxas cannot follow wgmma groups pending
        // over it and then serializes every wgmma of the kernel (C7514; call 103 ran that way, 8.9 ms a
        // page). Block 1's PV still overlaps the other CTA on the SM.
        wgmmaWait<0>();
    }
    T* out = static_cast<T*>(p.out);
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) {
        pinRegisters(o[b]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float l = rowSum[b][h];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = 1.0f / l;
            const int r = rowBase + 64 * (firstBlock + b) + 16 * warp + group + 8 * h;
            if (r >= len) continue;
            T* dst = out + int64_t(first + r) * p.outRowStride + head * kDim + 2 * quad;
#pragma unroll
            for (int j = 0; j < kChunks; ++j)
                *reinterpret_cast<uint32_t*>(dst + 8 * j) = packPair<T>(o[b][4 * j + 2 * h] * inv, o[b][4 * j + 2 * h + 1] * inv);
        }
    }
#else
    (void)p;
#endif
}

}  // namespace

bool visionAttentionSupported(int device)
{
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
        return false;
    return major == 9 && minor == 0;
}

cudaError_t launchVisionAttention(const VisionAttentionParams& p, cudaStream_t stream)
{
    if ((p.dtype != DType::F16 && p.dtype != DType::BF16) || p.headDim != kDim || p.numHeads <= 0 ||
        p.numImages < 0 || p.maxSeqlen < 0 || p.qkvRowStride < 3 * int64_t(p.numHeads) * kDim ||
        p.outRowStride < int64_t(p.numHeads) * kDim || p.qkvRowStride % 8 != 0 || p.outRowStride % 2 != 0 ||
        !aligned16(p.qkv) || (reinterpret_cast<uintptr_t>(p.out) & 3u) != 0 || !p.cuSeqlens)
        return cudaErrorInvalidValue;
    if (p.numRows == 0 || p.numImages == 0 || p.maxSeqlen == 0) return cudaSuccess;
    int device = 0;
    LECTOR_CUDA_TRY(cudaGetDevice(&device));
    if (!visionAttentionSupported(device)) return cudaErrorInvalidValue;
    auto launch = [&]<class T, class S>() -> cudaError_t {
        static const cudaError_t attr = cudaFuncSetAttribute(visionAttentionKernel<T, S>,
                                                             cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes);
        LECTOR_CUDA_TRY(attr);
        const dim3 grid(unsigned(ceilDiv(p.maxSeqlen, S::kRows)), unsigned(p.numHeads), unsigned(p.numImages));
        return launchKernel(visionAttentionKernel<T, S>, grid, dim3(S::kThreads), S::kSmemBytes, stream, p);
    };
    // The shapes of VisionAttentionParams::shape (call 106: 7.2, 8.3 and 7.3 ms a page at 8 pages).
    auto byShape = [&]<class T>() -> cudaError_t {
        switch (p.shape) {
        case 0: return launch.template operator()<T, Shape<2, 2, 3, 1>>();
        case 1: return launch.template operator()<T, Shape<1, 2, 4, 2>>();
        case 2: return launch.template operator()<T, Shape<4, 1, 3, 1>>();
        }
        return cudaErrorInvalidValue;
    };
    return p.dtype == DType::F16 ? byShape.template operator()<__half>() : byShape.template operator()<__nv_bfloat16>();
}

}  // namespace lector::gpu
