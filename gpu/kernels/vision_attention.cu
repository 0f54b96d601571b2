// Vision-tower attention on Hopper (declarations and the design: vision_attention.cuh).
//
// A CTA owns kRows query rows of one (image, head): kWarpGroups consumer warp groups of kBlocks m64
// blocks each (shape 0: 2 x 2, 256 rows), and a producer warp group. Per key tile of kKeys:
//   - The producer's first lane loads K and V by TMA into a ring of kStages stages (a 2-D tensor map over
//     the qkv rows; one box of 8 dims x kKeys rows per 16-byte chunk lands as one region of wgmma's
//     canonical layout without swizzle: chunk c of key k at c * kRegion + k * 16, so every 8 x 8 core
//     matrix is 128 contiguous bytes). A stage completes on its "full" mbarrier, and the consumer warps
//     free it through its "empty" one: no consumer issues a copy or meets the others at __syncthreads.
//     Q is loaded once the same way; the chunk of dims 72..79 of Q and of every K stage is zeroed
//     shared memory, never loaded, so QK^T runs five k-steps of 16.
//   - A consumer warp group's iteration t, in FlashAttention-3's order (the prologue ran S(0) and its
//     softmax): issue S(t) = Q K(t)^T, rescale O by tile t-1's correction, issue O += P(t-1) V(t-1)
//     (P from registers as the A operand, V MN-major with n = 72); wait for S(t) and run softmax(t) in
//     place (base 2, running max and sum per row) beside PV(t-1); wait for PV(t-1), free stage t-1 and
//     round P(t) into PV's A fragments. Nothing stays in flight across the back edge: ptxas cannot follow
//     wgmma groups pending over it and then serializes every wgmma of the kernel (C7514).
//   - With ping-pong the two warp groups take turns issuing their products (named barriers 8 and 9), so
//     one's softmax runs while the other's products hold the tensor cores. With the lazy rescale a row
//     keeps its running max until a tile's exceeds it by more than 2^8 (FlashAttention-4's conditional
//     rescale): O is then rescaled only where some row of the warp moved, and P stays at most 256.
//   - The producer warp group gives its registers to the consumers (setmaxnreg): with a lone producer
//     warp, the SM sub-partition that holds three warps would cap every thread at 168 registers.
// The grid holds every (row block, head, image); row blocks past an image's end exit.
//
// Where it stands (docs/perf.md, calls 109 and 110): 4.9 ms a page at 8 pages and 5.1 at one, against
// libtorch's SDPA at 5.7-6.1 alone and 6.3-7.2 as the tower ran it (per image, with copies). The cp.async
// kernel it replaced (one CTA-wide barrier a tile, 16-byte copies by every thread) took 7.1-7.4.
#include "gpu/kernels/vision_attention.cuh"

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/tensor_map.cuh"
#include "gpu/kernels/wgmma.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

// The wgmma code exists only in the sm_90a pass (wgmma.cuh); the CMake target of this file builds only
// that, and the launcher runs it only on compute capability 9.0.
#ifdef LECTOR_HAVE_WGMMA
#define LECTOR_VISION_WGMMA 1
#else
// The host pass sees constants that only the device-only body uses.
#pragma nv_diag_suppress 177
#endif

namespace lector::gpu {
namespace {

constexpr int kDim = kVisionAttentionHeadDim;   // 72
constexpr int kChunks = kDim / 8;               // 16-byte chunks of a head's row
constexpr int kQkSteps = 5;                     // k-steps of 16 dims: 0..79, the last half zero
constexpr int kOAcc = kDim / 2;                 // O accumulators a thread: m64n72
constexpr int kGroupBytes = 128;                // one core matrix: 8 rows x 16 bytes
constexpr int kQRegion = 64 * 16;               // one 16-byte chunk of an m64 block's rows of Q
constexpr int kQBlockBytes = (kChunks + 1) * kQRegion;  // with its zero chunk of dims 72..79
static_assert(kQkSteps * 16 >= kDim);

// --- wgmma (sm_90a) ---

using wgmma::fenceAsyncProxy;
using wgmma::pinRegisters;
using wgmma::smemDescriptor;

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

// The operand lists of the vision kernel's own wgmma shapes (one "+f" per accumulator register).
#define LECTOR_WGMMA_D36_REGS "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35"
#define LECTOR_WGMMA_D36_OPERANDS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])

#define LECTOR_WGMMA_D64_REGS "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define LECTOR_WGMMA_D64_OPERANDS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// d (+)= A B for m64n128k16 (S for a tile of 128 keys), both K-major shared-memory tiles.
template <class T>
__device__ __forceinline__ void wgmmaM64N128(float (&d)[64], uint64_t descA, uint64_t descB, int scaleD)
{
#ifdef LECTOR_VISION_WGMMA
    if constexpr (std::is_same_v<T, __half>)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" LECTOR_WGMMA_D64_REGS "}, "
                     "%64, %65, p, 1, 1, 0, 0;\n}\n"
                     : LECTOR_WGMMA_D64_OPERANDS
                     : "l"(descA), "l"(descB), "r"(scaleD));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" LECTOR_WGMMA_D64_REGS "}, "
                     "%64, %65, p, 1, 1, 0, 0;\n}\n"
                     : LECTOR_WGMMA_D64_OPERANDS
                     : "l"(descA), "l"(descB), "r"(scaleD));
#else
    (void)d, (void)descA, (void)descB, (void)scaleD;
#endif
}

// S (+)= Q K^T for a tile of kKeys keys.
template <class T, int kKeys>
__device__ __forceinline__ void wgmmaScores(float (&d)[kKeys / 2], uint64_t descA, uint64_t descB, int scaleD)
{
    if constexpr (kKeys == 64) wgmma::mmaSS<T, 64>(d, descA, descB, scaleD);
    else wgmmaM64N128<T>(d, descA, descB, scaleD);
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

// --- the kernel (the design: the top of this file) ---

template <int kWarpGroups_, int kBlocks_, int kKeys_, int kStages_, bool kPingPong_, bool kLazy_>
struct Shape {
    static constexpr int kWarpGroups = kWarpGroups_, kBlocks = kBlocks_, kKeys = kKeys_, kStages = kStages_;
    static constexpr bool kPingPong = kPingPong_;
    static constexpr bool kLazy = kLazy_;
    static constexpr int kConsumerWarps = 4 * kWarpGroups;
    static constexpr int kThreads = 128 * (kWarpGroups + 1);
    static constexpr int kMinCtas = 1;
    static constexpr int kProducerRegisters = 24;
    // Per thread what a scheduler's 16384 registers leave (rounded down to 8) beside the producer's.
    static constexpr int kConsumerRegisters = ((16384 / 32 - kProducerRegisters) / kWarpGroups) / 8 * 8;
    static constexpr int kRows = 64 * kBlocks * kWarpGroups;
    static constexpr int kRegion = kKeys * 16;                 // one 16-byte chunk of all of a tile's keys
    static constexpr int kKTileBytes = (kChunks + 1) * kRegion;  // K with its zero chunk of dims 72..79
    static constexpr int kStageBytes = kKTileBytes + kChunks * kRegion;
    static constexpr int kLoadBytes = 2 * kChunks * kRegion;     // what TMA writes into a stage
    static constexpr int kQBytes = kBlocks * kWarpGroups * kQBlockBytes;
    static constexpr int kBarriers = 2 * kStages + 1;          // full[], empty[], Q
    static constexpr int kSmemBytes = kQBytes + kStages * kStageBytes + kBarriers * 8;
    static_assert(kKeys == 64 || kKeys == 128, "S is m64n64 or m64n128");
    static_assert(!kPingPong || kWarpGroups == 2, "ping-pong takes two warp groups");
    static_assert(kStages >= 2 && kSmemBytes <= 227 * 1024);
};

__device__ __forceinline__ void namedBarrierSync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void namedBarrierArrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Tile softmax for the warp-specialized kernel: masks keys past validKeys, updates the running max and
// sum, leaves 2^(s * scaleLog2 - max) in s and the factor the output must still be scaled by in corr
// (applied before the next product: O is busy with PV(t-1) meanwhile).
template <int kKeys, bool kLazy>
__device__ __forceinline__ void softmaxInPlace(float (&s)[kKeys / 2], float (&rowMax)[2], float (&rowSum)[2],
                                               float (&corr)[2], int validKeys, int quad, float scaleLog2)
{
    if (validKeys < kKeys) {
#pragma unroll
        for (int i = 0; i < kKeys / 2; ++i)
            if ((i / 4) * 8 + 2 * quad + (i & 1) >= validKeys) s[i] = -INFINITY;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = rowMax[h];
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        if (kLazy && (mx - rowMax[h]) * scaleLog2 <= 8.0f) {
            corr[h] = 1.0f;  // every row of the quad decides alike: they share mx
        } else {
            corr[h] = fastExp2((rowMax[h] - mx) * scaleLog2);  // the first tile's: exp2(-inf) = 0
            rowMax[h] = mx;
        }
        mx = rowMax[h];
        const float bias = mx * scaleLog2;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float& x = s[4 * j + 2 * h + e];
                x = fastExp2(fmaf(x, scaleLog2, -bias));
                sum += x;
            }
        }
        rowSum[h] = rowSum[h] * corr[h] + sum;  // this thread's columns; the quad is summed at the end
    }
}

// P's A fragments for PV's k-steps from the tile's probabilities: the accumulator layout of keys
// 16t..16t+15 is the A layout of k-step t (s[4j + 2h + e] is row group + 8h, key 8j + 2 quad + e), so the
// pair (j, h) lands in pf[j / 2][2 (j % 2) + h].
template <class T, int kKeys>
__device__ __forceinline__ void packProbabilities(const float (&s)[kKeys / 2], uint32_t (&pf)[kKeys / 16][4])
{
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) pf[j / 2][2 * (j % 2) + h] = packPair<T>(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]);
}

template <class T, class S>
__global__ void __launch_bounds__(S::kThreads, S::kMinCtas)
    visionAttentionKernel(const __grid_constant__ CUtensorMap qMap, const __grid_constant__ CUtensorMap kvMap,
                             const VisionAttentionParams p)
{
#ifdef LECTOR_VISION_WGMMA
    constexpr int kBlocks = S::kBlocks, kStages = S::kStages, kTileKeys = S::kKeys, kRegionBytes = S::kRegion;
    constexpr int kScores = kTileKeys / 2, kSteps = kTileKeys / 16;
    extern __shared__ __align__(128) uint8_t smem[];
    gridDependencyWait();
    const int image = blockIdx.z, head = blockIdx.y;
    const int first = p.cuSeqlens[image];
    const int len = p.cuSeqlens[image + 1] - first;
    const int rowBase = blockIdx.x * S::kRows;
    if (rowBase >= len) return;
    allowDependentLaunch();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int numTiles = (len + kTileKeys - 1) / kTileKeys;
    uint8_t* const ring = smem + S::kQBytes;
    uint64_t* const full = reinterpret_cast<uint64_t*>(ring + kStages * S::kStageBytes);
    uint64_t* const empty = full + kStages;
    uint64_t* const qFull = empty + kStages;

    // Zero chunks (dims 72..79) of Q and of every stage's K, written once: TMA never touches them.
    for (int i = tid; i < (S::kBlocks * S::kWarpGroups) * 64; i += S::kThreads)
        *reinterpret_cast<uint4*>(smem + (i / 64) * kQBlockBytes + kChunks * kQRegion + (i % 64) * 16) = make_uint4(0, 0, 0, 0);
    for (int i = tid; i < kStages * kTileKeys; i += S::kThreads)
        *reinterpret_cast<uint4*>(ring + (i / kTileKeys) * S::kStageBytes + kChunks * kRegionBytes + (i % kTileKeys) * 16) =
            make_uint4(0, 0, 0, 0);
    if (tid == 0) {
        for (int st = 0; st < kStages; ++st) {
            mbarInit(full + st, 1);
            mbarInit(empty + st, S::kConsumerWarps);
        }
        mbarInit(qFull, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    fenceAsyncProxy();  // the zeros, for wgmma's reads
    __syncthreads();

    if (warp >= S::kConsumerWarps) {
        // The producer. Columns of the tensor maps: q of head h at h * 72, k at (H + h) * 72, v at (2H + h) * 72.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(S::kProducerRegisters));
        if (warp != S::kConsumerWarps || lane != 0) return;
        const int qx = head * kDim, kx = (p.numHeads + head) * kDim, vx = (2 * p.numHeads + head) * kDim;
        mbarArriveExpectTx(qFull, S::kBlocks * S::kWarpGroups * kChunks * kQRegion);
        for (int b = 0; b < S::kBlocks * S::kWarpGroups; ++b)
#pragma unroll
            for (int c = 0; c < kChunks; ++c)
                tmaLoad2d(smem + b * kQBlockBytes + c * kQRegion, &qMap, qx + 8 * c, first + rowBase + 64 * b, qFull);
        for (int tile = 0; tile < numTiles; ++tile) {
            const int st = tile % kStages;
            if (tile >= kStages) mbarWait(empty + st, ((tile / kStages) - 1) & 1, true);
            uint8_t* stage = ring + st * S::kStageBytes;
            const int y = first + tile * kTileKeys;
            mbarArriveExpectTx(full + st, S::kLoadBytes);
#pragma unroll
            for (int c = 0; c < kChunks; ++c) {
                tmaLoad2d(stage + c * kRegionBytes, &kvMap, kx + 8 * c, y, full + st);
                tmaLoad2d(stage + S::kKTileBytes + c * kRegionBytes, &kvMap, vx + 8 * c, y, full + st);
            }
        }
        return;
    }

    // The consumers: warp group wg owns blocks wg * kBlocks .. + kBlocks - 1 of the CTA's rows.
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(S::kConsumerRegisters));
    const int wg = warp >> 2, quad = lane & 3, group = lane >> 2;
    const uint32_t smemBase = smemAddr(smem);
    const uint32_t qBase = smemBase + wg * kBlocks * kQBlockBytes;
    const uint32_t ringBase = smemBase + S::kQBytes;
    const float scaleLog2 = p.scale * 1.4426950408889634f;
    constexpr int kTurnThreads = 2 * 128;
    float s[kBlocks][kScores];
    float o[kBlocks][kOAcc];
    float rowMax[kBlocks][2], rowSum[kBlocks][2], corr[kBlocks][2];
    uint32_t pf[kBlocks][kSteps][4];
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) {
#pragma unroll
        for (int i = 0; i < kOAcc; ++i) o[b][i] = 0.0f;
        rowMax[b][0] = rowMax[b][1] = -INFINITY;
        rowSum[b][0] = rowSum[b][1] = 0.0f;
    }
    // S(tile) for every block of this warp group, one commit group.
    auto issueScores = [&](int tile) {
        const uint32_t kTile = ringBase + (tile % kStages) * S::kStageBytes;
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) {
#pragma unroll
            for (int st = 0; st < kQkSteps; ++st)
                wgmmaScores<T, kTileKeys>(s[b], smemDescriptor(qBase + b * kQBlockBytes + st * 2 * kQRegion, kQRegion, kGroupBytes),
                                          smemDescriptor(kTile + st * 2 * kRegionBytes, kRegionBytes, kGroupBytes), st);
        }
        wgmma::commit();
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) pinRegisters(s[b]);
    };
    // O = O * corr + P(tile) V(tile) for every block, one commit group.
    auto issueValues = [&](int tile) {
        const uint32_t vTile = ringBase + (tile % kStages) * S::kStageBytes + S::kKTileBytes;
        bool moved = !S::kLazy;
        if constexpr (S::kLazy) {
#pragma unroll
            for (int b = 0; b < kBlocks; ++b) moved = moved || corr[b][0] != 1.0f || corr[b][1] != 1.0f;
            moved = __any_sync(0xffffffffu, moved);
        }
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) {
            if (moved) {
#pragma unroll
                for (int j = 0; j < kChunks; ++j)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        o[b][4 * j + 2 * h] *= corr[b][h];
                        o[b][4 * j + 2 * h + 1] *= corr[b][h];
                    }
            }
            pinRegisters(o[b]);
            pinRegisters(pf[b]);
        }
        wgmma::fence();
#pragma unroll
        for (int b = 0; b < kBlocks; ++b)
#pragma unroll
            for (int t = 0; t < kSteps; ++t)
                wgmmaM64N72<T>(o[b], pf[b][t], smemDescriptor(vTile + t * 2 * kGroupBytes, kGroupBytes, kRegionBytes));
        wgmma::commit();
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) {
            pinRegisters(o[b]);
            pinRegisters(pf[b]);
        }
    };
    auto softmax = [&](int tile) {
        const int validKeys = len - tile * kTileKeys;
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) {
            pinRegisters(s[b]);
            softmaxInPlace<kTileKeys, S::kLazy>(s[b], rowMax[b], rowSum[b], corr[b], validKeys, quad, scaleLog2);
        }
    };
    auto release = [&](int tile) {
        __syncwarp();
        if (lane == 0) mbarArrive(empty + tile % kStages);
    };
    auto myTurn = [&] {
        if constexpr (S::kPingPong) namedBarrierSync(8 + wg, kTurnThreads);
    };
    auto yourTurn = [&](bool last) {
        if constexpr (S::kPingPong)
            if (!(last && wg == 1)) namedBarrierArrive(8 + (wg ^ 1), kTurnThreads);
    };

    if constexpr (S::kPingPong)
        if (wg == 1) namedBarrierArrive(8, kTurnThreads);  // warp group 0 goes first
    mbarWait(qFull, 0, true);
    mbarWait(full, 0, true);
    myTurn();
    wgmma::fence();
    issueScores(0);
    yourTurn(false);
    wgmma::wait<0>();
    softmax(0);
#pragma unroll
    for (int b = 0; b < kBlocks; ++b) packProbabilities<T, kTileKeys>(s[b], pf[b]);
    for (int tile = 1; tile < numTiles; ++tile) {
        mbarWait(full + tile % kStages, (tile / kStages) & 1, true);
        myTurn();
        wgmma::fence();
        issueScores(tile);
        issueValues(tile - 1);
        yourTurn(false);
        wgmma::wait<1>();  // S(tile); PV(tile - 1) may still run
        softmax(tile);
        wgmma::wait<0>();
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) pinRegisters(o[b]);
        release(tile - 1);
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) packProbabilities<T, kTileKeys>(s[b], pf[b]);
    }
    myTurn();
    issueValues(numTiles - 1);
    yourTurn(true);
    wgmma::wait<0>();
    release(numTiles - 1);

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
            const int r = rowBase + 64 * (wg * kBlocks + b) + 16 * (warp & 3) + group + 8 * h;
            if (r >= len) continue;
            T* dst = out + int64_t(first + r) * p.outRowStride + head * kDim + 2 * quad;
#pragma unroll
            for (int j = 0; j < kChunks; ++j)
                *reinterpret_cast<uint32_t*>(dst + 8 * j) = packPair<T>(o[b][4 * j + 2 * h] * inv, o[b][4 * j + 2 * h + 1] * inv);
        }
    }
#else
    (void)qMap, (void)kvMap, (void)p;
#endif
}

// A 2-D tensor map over the qkv rows ([numRows, 3 x heads x 72] elements, qkvRowStride apart) in boxes
// of one 16-byte chunk x boxRows rows; rows past the end read as zeros.
cudaError_t qkvTensorMap(CUtensorMap& map, const VisionAttentionParams& p, int boxRows)
{
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tensorMapEncoder();
    if (!encode) return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {cuuint64_t(3) * cuuint64_t(p.numHeads) * kDim, cuuint64_t(p.numRows)};
    const cuuint64_t strides[1] = {cuuint64_t(p.qkvRowStride) * 2};
    const cuuint32_t box[2] = {8, cuuint32_t(boxRows)};
    const cuuint32_t elementStrides[2] = {1, 1};
    const CUresult r = encode(&map, p.dtype == DType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                              const_cast<void*>(p.qkv), dims, strides, box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
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
        CUtensorMap qMap, kvMap;
        LECTOR_CUDA_TRY(qkvTensorMap(qMap, p, 64));  // Q's m64 blocks
        if constexpr (S::kKeys == 64) kvMap = qMap;   // K/V tiles of the same box
        else LECTOR_CUDA_TRY(qkvTensorMap(kvMap, p, S::kKeys));
        const dim3 grid(unsigned(ceilDiv(p.maxSeqlen, S::kRows)), unsigned(p.numHeads), unsigned(p.numImages));
        return launchKernel(visionAttentionKernel<T, S>, grid, dim3(S::kThreads), S::kSmemBytes, stream, qMap, kvMap, p);
    };
    // The shapes of VisionAttentionParams::shape (docs/perf.md, call 110: 4.9, 5.0 and 5.3 ms a page at 8 pages).
    auto byShape = [&]<class T>() -> cudaError_t {
        switch (p.shape) {
        case 0: return launch.template operator()<T, Shape<2, 2, 64, 4, true, true>>();
        case 1: return launch.template operator()<T, Shape<2, 2, 64, 4, true, false>>();
        case 2: return launch.template operator()<T, Shape<3, 1, 128, 3, false, true>>();
        }
        return cudaErrorInvalidValue;
    };
    return p.dtype == DType::F16 ? byShape.template operator()<__half>() : byShape.template operator()<__nv_bfloat16>();
}

}  // namespace lector::gpu
