// Skinny GEMM on Hopper's warp-group products (SkinnyEngine::WarpGroup, sm_90a): out[r, n] =
// sum_k x[r, k] * weight[n, k] for up to 64 decode rows, one pass over the weight.
//
// Why another engine: at 16 to 64 rows the mma.sync engine (skinny_gemm_tc.cu) costs more with every row
// and cuBLAS holds 5 to 16 us a projection, far above the weight's bytes (perf.md, calls 43, 84-87, 113).
// Here the rows of x are wgmma's N (16, 32 or 64, zeros past p.rows), the weight's rows its M: a CTA is
// one warp group and 64 output columns, and the products run asynchronously from shared memory, so the
// row count costs tensor-core time only (a few hundred cycles a CTA).
//
// The CTA streams its slice of the weight through a ring of stages of 64 k by TMA: a box of 64
// weight rows x 64 k (8 KB) and the same k of x's rows (zeros past p.rows), both in the 128-byte swizzled
// K-major layout wgmma reads, completing on the stage's mbarrier. A round of ring stages at a time; the
// first round's weight is in flight before gridDependencyWait() (weights are immutable, common.cuh), x
// follows the wait. (cp.async of 16 bytes by every thread, the first version: about 16 GB/s per
// multiprocessor, the LM head at 1.7 TB/s against the mma.sync engine's 3.8 TB/s; device calls 121-122.)
//
// K is split over a thread-block cluster of `split` CTAs when the columns alone give too few CTAs. The
// partial [rows, 64] tiles meet in distributed shared memory, each CTA summing its share in rank order,
// so the results do not depend on timing.
#include <cooperative_groups.h>

#include <algorithm>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/skinny_gemm.cuh"
#include "gpu/kernels/tensor_map.cuh"
#include "gpu/kernels/wgmma.cuh"

#ifndef LECTOR_HAVE_WGMMA
#pragma nv_diag_suppress 177  // the host pass sees constants only the device body uses
#pragma nv_diag_suppress 550
#endif

namespace lector::gpu {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 128;  // one warp group
constexpr int kCols = 64;      // weight rows a CTA: wgmma's M
constexpr int kStageK = 64;    // k per ring stage: one 128-byte swizzle row of each operand row
constexpr int kWStageBytes = kCols * kStageK * 2;  // 8 KB
constexpr int kSwizzleAtom = 1024;                 // 8 rows x 128 bytes: what a swizzled tile aligns to
constexpr int kMaxSplit = 8;
constexpr int kMaxSmem = 227 * 1024;
constexpr int kTileStride = kCols + 4;  // floats; the fragment stores of a warp land in distinct banks

// Rows of x padded to wgmma's N.
constexpr int paddedRows(int rows) { return rows <= 16 ? 16 : rows <= 32 ? 32 : 64; }
constexpr int kMaxRing = 8;               // stages a round takes at most
constexpr int kDefaultRing = 4;           // 40 to 64 KB of shared memory a CTA
constexpr int kRingBudget = 100 * 1024;   // a longer ring stays within this (the next kernel's CTAs fit beside)
constexpr int stageBytesOf(int paddedN) { return kWStageBytes + paddedN * kStageK * 2; }

struct Layout {
    int kSlice = 0, stages = 0;  // K per CTA, in stages of kStageK
    int stageBytes = 0;          // weight, then x
    int barrierOffset = 0;       // uint64_t full[ring] after the ring or the partial tile
    int total = 0;               // dynamic shared memory, with the slack to align the ring to 1 KB
};

__host__ __device__ inline Layout layoutOf(int paddedN, int ring, int k, int split)
{
    Layout l;
    l.kSlice = k / split;
    l.stages = l.kSlice / kStageK;
    l.stageBytes = stageBytesOf(paddedN);
    const int ringBytes = (ring < l.stages ? ring : l.stages) * l.stageBytes;
    const int tileBytes = paddedN * kTileStride * 4;
    l.barrierOffset = ringBytes > tileBytes ? ringBytes : tileBytes;
    l.total = l.barrierOffset + ring * 8 + kSwizzleAtom;
    return l;
}

// A descriptor of a K-major tile in the 128-byte swizzle (rows of 128 bytes, 8-row atoms 1 KB apart),
// starting `kBytes` into its rows: a k-step of 16 elements moves 32 bytes along the row.
__device__ __forceinline__ uint64_t swizzledDescriptor(uint32_t tileAddr, uint32_t kBytes)
{
    return wgmma::smemDescriptor(tileAddr + kBytes, 16, kSwizzleAtom) | uint64_t(1) << 62;
}

template <class T, int kN>
__global__ void __launch_bounds__(kThreads)
    skinnyWgKernel(const __grid_constant__ CUtensorMap wMap, const __grid_constant__ CUtensorMap xMap, SkinnyGemmParams p)
{
#ifdef LECTOR_HAVE_WGMMA
    const int ring = p.ringStages > 0 && p.ringStages < kMaxRing ? p.ringStages : kMaxRing;  // planOf()
    extern __shared__ __align__(128) uint8_t smemRaw[];
    const cg::cluster_group cluster = cg::this_cluster();
    const int split = static_cast<int>(cluster.num_blocks()), rank = static_cast<int>(cluster.block_rank());
    const Layout l = layoutOf(kN, ring, p.k, split);
    const int k0 = rank * l.kSlice, col0 = blockIdx.y * kCols;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    // The swizzled tiles want 1 KB alignment.
    uint8_t* const smem = smemRaw + ((kSwizzleAtom - (smemAddr(smemRaw) & (kSwizzleAtom - 1))) & (kSwizzleAtom - 1));
    const uint32_t base = smemAddr(smem);
    uint64_t* const full = reinterpret_cast<uint64_t*>(smem + l.barrierOffset);
    const int first = l.stages < ring ? l.stages : ring;
    constexpr uint32_t kXBytes = kN * kStageK * 2;
    auto loadWeight = [&](int slot, int stage) {
        tmaLoad2d(smem + slot * l.stageBytes, &wMap, k0 + stage * kStageK, col0, full + slot);
    };
    auto loadX = [&](int slot, int stage) {
        tmaLoad2d(smem + slot * l.stageBytes + kWStageBytes, &xMap, k0 + stage * kStageK, 0, full + slot);
    };
    if (tid == 0) {
        for (int s = 0; s < ring; ++s) mbarInit(full + s, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        // The first round's weight before the wait: the stage's one arrival expects weight and x.
        for (int s = 0; s < first; ++s) {
            mbarArriveExpectTx(full + s, kWStageBytes + kXBytes);
            loadWeight(s, s);
        }
    }
    gridDependencyWait();
    allowDependentLaunch();
    if (tid == 0)
        for (int s = 0; s < first; ++s) loadX(s, s);
    __syncthreads();  // the barriers are initialised before anyone waits on them

    // Rounds of up to `ring` stages: wait for the round's tiles, issue all of its products as one group,
    // and once they are done refill the ring with the next round.
    float acc[kN / 2];
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) acc[i] = 0.0f;
    for (int round = 0, phase = 0; round < l.stages; round += ring, phase ^= 1) {
        const int count = l.stages - round < ring ? l.stages - round : ring;
        // The round's products with a count known to the compiler: a branch between two wgmmas makes
        // ptxas fence the accumulators at each one (C7519).
        auto issue = [&]<int kCount>() {
#pragma unroll
            for (int s = 0; s < kCount; ++s) mbarWait(full + s, phase);
            wgmma::fence();
#pragma unroll
            for (int s = 0; s < kCount; ++s) {
                const uint32_t w = base + s * l.stageBytes, x = w + kWStageBytes;
#pragma unroll
                for (int kk = 0; kk < kStageK / 16; ++kk)
                    wgmma::mmaSS<T, kN>(acc, swizzledDescriptor(w, kk * 32), swizzledDescriptor(x, kk * 32), 1);
            }
        };
        switch (count) {
        case 1: issue.template operator()<1>(); break;
        case 2: issue.template operator()<2>(); break;
        case 3: issue.template operator()<3>(); break;
        case 4: issue.template operator()<4>(); break;
        case 5: issue.template operator()<5>(); break;
        case 6: issue.template operator()<6>(); break;
        case 7: issue.template operator()<7>(); break;
        default: issue.template operator()<8>(); break;
        }
        wgmma::commit();
        wgmma::wait<0>();
        wgmma::pinRegisters(acc);
        const int next = round + ring;
        if (next < l.stages) {
            __syncthreads();  // every warp is done with the ring
            if (tid == 0) {
                const int refill = l.stages - next < ring ? l.stages - next : ring;
                for (int s = 0; s < refill; ++s) {
                    mbarArriveExpectTx(full + s, kWStageBytes + kXBytes);
                    loadWeight(s, next + s);
                    loadX(s, next + s);
                }
            }
        }
    }
    __syncthreads();  // every warp is past its last product before the tile overwrites the ring

    // The partial tile [kN rows of x][64 columns] in float32 over the ring. Accumulator i of lane (g, q)
    // in warp w: column 16w + g + 8 ((i / 2) % 2), row 8 (i / 4) + 2q + i % 2.
    float* tile = reinterpret_cast<float*>(smem);
    const int g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) {
        const int col = 16 * warp + g + 8 * ((i / 2) % 2), row = 8 * (i / 4) + 2 * q + i % 2;
        tile[row * kTileStride + col] = acc[i];
    }
    cluster.sync();
    // This CTA's share of the sum over the cluster, 64 consecutive columns a row.
    const float* tiles[kMaxSplit];
#pragma unroll
    for (int r = 0; r < kMaxSplit; ++r) tiles[r] = r < split ? cluster.map_shared_rank(tile, r) : tile;
    const int rowsLeft = p.n - col0;
    const int elems = p.rows * kCols, step = split * kThreads;
    for (int e = rank * kThreads + tid; e < elems; e += step) {
        const int row = e / kCols, col = e % kCols, at = row * kTileStride + col;
        float s = 0.0f;
#pragma unroll
        for (int r = 0; r < kMaxSplit; ++r)
            if (r < split) s += tiles[r][at];  // rank order
        if (col < rowsLeft) {
            const int64_t i = int64_t(row) * p.outStride + col0 + col;
            if (p.outFloat) static_cast<float*>(p.out)[i] = toFloat(fromFloat<T>(s));
            else static_cast<T*>(p.out)[i] = fromFloat<T>(s);
        }
    }
    cluster.sync();  // no CTA leaves while another still reads its tile
#else
    (void)wMap, (void)xMap, (void)p;
    __trap();
#endif
}

// How a launch splits K and how many stages its ring holds. The split: none where the columns alone fill
// the multiprocessors (the LM head: 62 against 65 us for the mma.sync engine at one row on the H200, 74
// against 109 at 32; device call 124). Else the smallest power of two whose slice fits one round of the
// ring (all of a CTA's weight in flight before the wait) and whose CTAs cover most multiprocessors (0.8 of
// them), as far as K divides into stages and clusters go (8). The ring: 4 stages, or the whole slice
// within kRingBudget where even the largest split leaves more (the down projection's 7 stages). In the
// batch-32 decode step (bench_decode_step, call 124) a ring of 8 for qkv (97 KB a CTA, split 2) cost
// 290 us a step against 4 stages: the kernels after it could not start beside it.
struct Launch {
    int split = 1, ring = kDefaultRing;
};

Launch planOf(const SkinnyGemmParams& p)
{
    const int paddedN = paddedRows(p.rows);
    const int maxRing = std::min(kMaxRing, kRingBudget / stageBytesOf(paddedN));
    Launch c;
    if (p.ringStages > 0) c.ring = std::min(p.ringStages, kMaxRing);
    const int64_t colBlocks = ceilDiv(p.n, kCols);
    if (p.splitK > 0) {
        c.split = p.splitK;
    } else if (colBlocks < skinnySmCount()) {
        while (c.split < kMaxSplit && p.k % (kStageK * c.split * 2) == 0 &&
               (p.k / c.split > c.ring * kStageK || 5 * colBlocks * c.split < 4 * skinnySmCount()))
            c.split *= 2;
        // Split as far as it goes and still more than a ring: the slice whole, within the budget. (Not
        // where the columns alone fill the SMs: the LM head streams best in rounds of 4, 74 against 84 us
        // at 32 rows with a ring of 8, call 125.)
        const int stages = p.k / c.split / kStageK;
        if (p.ringStages <= 0 && stages > c.ring) c.ring = std::min(stages, maxRing);
    }
    return c;
}

// A 2-D tensor map over [rows, k] elements (rows `stride` elements apart) in boxes of 64 k x boxRows rows,
// 128-byte swizzled; rows past the end read as zeros.
cudaError_t tileMap(CUtensorMap& map, const void* ptr, DType dtype, int k, int rows, int64_t stride, int boxRows)
{
    const PFN_cuTensorMapEncodeTiled_v12000 encode = tensorMapEncoder();
    if (!encode) return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {cuuint64_t(k), cuuint64_t(rows)};
    const cuuint64_t strides[1] = {cuuint64_t(stride) * 2};
    const cuuint32_t box[2] = {kStageK, cuuint32_t(boxRows)};
    const cuuint32_t elementStrides[2] = {1, 1};
    const CUresult r = encode(&map, dtype == DType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                              const_cast<void*>(ptr), dims, strides, box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

template <class T, int kN>
cudaError_t launchPadded(const SkinnyGemmParams& p, int split, cudaStream_t stream)
{
    auto* kernel = skinnyWgKernel<T, kN>;
    static const cudaError_t attr = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem);
    if (attr != cudaSuccess) return attr;
    const Layout l = layoutOf(kN, p.ringStages, p.k, split);
    CUtensorMap wMap, xMap;
    LECTOR_CUDA_TRY(tileMap(wMap, p.weight, p.dtype, p.k, p.n, p.weightStride, kCols));
    LECTOR_CUDA_TRY(tileMap(xMap, p.x, p.dtype, p.k, p.rows, p.xStride, kN));
    const dim3 grid(static_cast<unsigned>(split), static_cast<unsigned>(ceilDiv(p.n, kCols)));
    return launchKernelInClusters(kernel, grid, kThreads, static_cast<size_t>(l.total), stream,
                                  dim3(static_cast<unsigned>(split), 1, 1), wMap, xMap, p);
}

}  // namespace

cudaError_t launchSkinnyGemmWg(const SkinnyGemmParams& p, cudaStream_t stream)
{
    if (p.rows < 0 || p.rows > kSkinnyTcMaxRows || p.n < 0 || p.k < 0) return cudaErrorInvalidValue;
    if (p.rows == 0 || p.n == 0) return cudaSuccess;
    static const bool sm90 = currentDeviceAttribute(cudaDevAttrComputeCapabilityMajor) == 9;
    if (p.dtype == DType::F32 || !sm90 || p.normWeight || p.siluMulInput) return cudaErrorNotSupported;
    const Launch c = planOf(p);
    const int split = c.split;
    SkinnyGemmParams q = p;
    q.ringStages = c.ring;  // the kernel's ring
    if (split < 1 || split > kMaxSplit || (split & (split - 1)) != 0 || p.k % (kStageK * split) != 0 ||
        p.xStride % 8 != 0 || p.weightStride % 8 != 0 || !aligned16(p.x) || !aligned16(p.weight))
        return cudaErrorNotSupported;
    auto run = [&]<class T>() -> cudaError_t {
        const int n = paddedRows(p.rows);
        if (n == 16) return launchPadded<T, 16>(q, split, stream);
        if (n == 32) return launchPadded<T, 32>(q, split, stream);
        return launchPadded<T, 64>(q, split, stream);
    };
    return p.dtype == DType::F16 ? run.template operator()<__half>() : run.template operator()<__nv_bfloat16>();
}

}  // namespace lector::gpu
