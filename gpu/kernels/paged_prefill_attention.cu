// Paged prefill attention.
//
// Tensor-core path (fp16/bf16, sm_80+): FlashAttention-2 style with mma.sync m16n8k16. Row = token * G
// + head within the group, so the K/V tiles a CTA stages serve every query head of its KV head.
//   - A CTA is two warp groups of 4 warps, 16 rows a warp. They either split each 64-key tile over the
//     same 64 rows and merge through shared memory at the end (few CTAs: the last rows' long key range
//     is the critical path), or take 64 rows each (many CTAs: each tile read from L2 serves 128 rows).
//   - Keys arrive in tiles of 64 by cp.async into a ring of 3 stages (2 where shared memory is
//     smaller); K fragments by ldmatrix, V by ldmatrix.trans; online softmax with ex2.approx and the
//     scale folded into one FMA; the causal mask only on the steps that need it.
//   - Tiles count back from each sequence's last row, and the grid holds only tiles with rows, rank
//     major (tileOfSlot): every sequence's heaviest tile is in the first wave and no CTA is empty.
//     Warps whose 16 rows are all padding only help copy.
// docs/perf.md (device calls 93 to 98) has the measurements behind each of these.
// SIMT path: paged_attention_simt.cuh with one row per new token.
#include <algorithm>
#include <type_traits>

#include "gpu/kernels/paged_attention_simt.cuh"
#include "gpu/kernels/paged_prefill_attention.cuh"

namespace lector::gpu {
namespace {

constexpr int kTcThreads = 256;  // two warp groups
constexpr int kGroupThreads = 128;
constexpr int kGroupRows = 64;   // (token, head) rows of a warp group: 16 per warp
constexpr int kTileKeys = 64;    // keys per shared-memory stage: four KV blocks
constexpr int kTileBlocks = kTileKeys / kKvBlockSize;
constexpr int kSmemPad = 8;      // elements of padding per row: conflict-free ldmatrix rows
static_assert(kTileKeys % kKvBlockSize == 0 && kTileBlocks <= 8, "validity bits of a stage in 8 bits");

// Shared memory of one CTA: kStages stages of a K and a V tile (the split's merge reuses them).
template <class T, int D>
constexpr int kTileElems = kTileKeys * (D + kSmemPad);
template <class T, int D, int kStages>
constexpr size_t kTcSmemBytes = size_t(kStages) * 2 * kTileElems<T, D> * sizeof(T);

// The KV block ids of tile `tile` (-1 past the CTA's last key) and which of them hold keys to read: bit
// j for block j inside the pool and before kvEnd.
struct TileBlocks {
    int32_t id[kTileBlocks];
};

__device__ __forceinline__ TileBlocks tileBlocks(const int32_t* table, int tile, int kvEnd)
{
    TileBlocks b;
#pragma unroll
    for (int j = 0; j < kTileBlocks; ++j) {
        const int idx = tile * kTileBlocks + j;
        b.id[j] = idx * kKvBlockSize < kvEnd ? table[idx] : -1;
    }
    return b;
}

__device__ __forceinline__ unsigned validBits(const TileBlocks& b, int numBlocks)
{
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < kTileBlocks; ++j) bits |= unsigned(b.id[j] >= 0 && b.id[j] < numBlocks) << j;
    return bits;
}

// Issues the copies of keys [k0, k0 + kTileKeys) of one KV head into one stage; keys at or past kvEnd,
// or in a block outside the pool, land as zeros (and are masked): zeros keep P V free of garbage NaNs.
template <class T, int D>
__device__ __forceinline__ void issueTile(T* kDst, T* vDst, const PagedPrefillAttentionParams& p,
                                          const TileBlocks& b, int kvHead, int k0, int kvEnd)
{
    constexpr int kVec = kVecElems<T>, kStride = D + kSmemPad, kChunksPerRow = D / kVec;
    constexpr int kPerThread = kTileKeys * kChunksPerRow / kTcThreads;
    constexpr int kKeysPerPass = kTcThreads / kChunksPerRow;
    static_assert(kTcThreads % kChunksPerRow == 0 && kKvBlockSize % kKeysPerPass == 0, "a pass stays in one block");
    const T* keys = static_cast<const T*>(p.keyCache);
    const T* values = static_cast<const T*>(p.valueCache);
    const int chunk = threadIdx.x % kChunksPerRow;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
        const int key = threadIdx.x / kChunksPerRow + i * kKeysPerPass;
        const int32_t block = b.id[i * kKeysPerPass / kKvBlockSize];  // the same block for the whole pass
        const bool ok = k0 + key < kvEnd && block >= 0 && block < p.numBlocks;
        const int64_t off =
            ok ? ((int64_t(block) * kKvBlockSize + key % kKvBlockSize) * p.numKvHeads + kvHead) * D + chunk * kVec : 0;
        cpAsync16(kDst + key * kStride + chunk * kVec, keys + off, ok);
        cpAsync16(vDst + key * kStride + chunk * kVec, values + off, ok);
    }
}

// One thread's share of a warp's 16 rows: the output accumulators (rows gq and gq + 8, the "A" and "B"
// rows of the fragments) and the running max (raw logits, before the scale) and sum of each.
template <int D>
struct RowState {
    float o[D / 8][4];
    float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;
};

// Attends a warp's rows to kStepKeys keys staged at kStep / vStep (key kBase first). `masked`: some key
// may lie past a row's position or in a block outside the pool (bit j of stepBits: block j is inside).
template <class T, int D, int kStepKeys>
__device__ __forceinline__ void attendStep(RowState<D>& r, const uint32_t (&qFrag)[D / 16][4], const T* kStep,
                                           const T* vStep, bool masked, unsigned stepBits, int kBase, int posA,
                                           int posB, float scaleLog2)
{
    constexpr int kStride = D + kSmemPad, kKSteps = D / 16, kDimTiles = D / 8, kKeyTiles = kStepKeys / 8;
    const int lane = threadIdx.x & 31, tq = lane & 3;
    // S = Q K^T for tiles of 8 keys; one ldmatrix gives the B fragments of two k-steps.
    float s[kKeyTiles][4];
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
        s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
        const T* kRow = kStep + (nt * 8 + (lane & 7)) * kStride + ((lane >> 3) & 1) * 8 + (lane >> 4) * 16;
#pragma unroll
        for (int ks = 0; ks < kKSteps; ks += 2) {
            uint32_t b[4];
            ldmatrixX4(b, kRow + ks * 16);
            mmaM16N8K16<T>(s[nt], qFrag[ks][0], qFrag[ks][1], qFrag[ks][2], qFrag[ks][3], b[0], b[1]);
            mmaM16N8K16<T>(s[nt], qFrag[ks + 1][0], qFrag[ks + 1][1], qFrag[ks + 1][2], qFrag[ks + 1][3], b[2], b[3]);
        }
    }
    if (masked) {
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int keyInStep = nt * 8 + 2 * tq + (e & 1);
                const bool inPool = (stepBits >> (keyInStep / kKvBlockSize)) & 1u;
                if (!inPool || kBase + keyInStep > (e < 2 ? posA : posB)) s[nt][e] = -INFINITY;
            }
    }
    // Row maxima (rows spread over the 4 threads of a quad), then the rescale of what came before.
    float maxA = r.mA, maxB = r.mB;
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
        maxA = fmaxf(maxA, fmaxf(s[nt][0], s[nt][1]));
        maxB = fmaxf(maxB, fmaxf(s[nt][2], s[nt][3]));
    }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
        maxA = fmaxf(maxA, __shfl_xor_sync(0xffffffffu, maxA, off));
        maxB = fmaxf(maxB, __shfl_xor_sync(0xffffffffu, maxB, off));
    }
    // In log2 units; a row with no key yet keeps base 0, so its exponentials stay 0 instead of NaN.
    const float baseA = maxA == -INFINITY ? 0.0f : maxA * scaleLog2;
    const float baseB = maxB == -INFINITY ? 0.0f : maxB * scaleLog2;
    const float alphaA = fastExp2(r.mA * scaleLog2 - baseA), alphaB = fastExp2(r.mB * scaleLog2 - baseB);
    r.mA = maxA;
    r.mB = maxB;
    r.lA *= alphaA;
    r.lB *= alphaB;
#pragma unroll
    for (int dn = 0; dn < kDimTiles; ++dn) {
        r.o[dn][0] *= alphaA;
        r.o[dn][1] *= alphaA;
        r.o[dn][2] *= alphaB;
        r.o[dn][3] *= alphaB;
    }
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
        s[nt][0] = fastExp2(fmaf(s[nt][0], scaleLog2, -baseA));
        s[nt][1] = fastExp2(fmaf(s[nt][1], scaleLog2, -baseA));
        s[nt][2] = fastExp2(fmaf(s[nt][2], scaleLog2, -baseB));
        s[nt][3] = fastExp2(fmaf(s[nt][3], scaleLog2, -baseB));
        r.lA += s[nt][0] + s[nt][1];
        r.lB += s[nt][2] + s[nt][3];
    }
    // O += P V: the S accumulators of key tiles 2j, 2j+1 are exactly the A fragment of k-step j.
#pragma unroll
    for (int j = 0; j < kStepKeys / 16; ++j) {
        const uint32_t pFrag[4] = {packPair<T>(s[2 * j][0], s[2 * j][1]), packPair<T>(s[2 * j][2], s[2 * j][3]),
                                   packPair<T>(s[2 * j + 1][0], s[2 * j + 1][1]),
                                   packPair<T>(s[2 * j + 1][2], s[2 * j + 1][3])};
        const T* vRow = vStep + (j * 16 + (lane & 15)) * kStride + (lane >> 4) * 8;
#pragma unroll
        for (int dn = 0; dn < kDimTiles; dn += 2) {
            uint32_t b[4];
            ldmatrixX4Trans(b, vRow + dn * 8);
            mmaM16N8K16<T>(r.o[dn], pFrag[0], pFrag[1], pFrag[2], pFrag[3], b[0], b[1]);
            mmaM16N8K16<T>(r.o[dn + 1], pFrag[0], pFrag[1], pFrag[2], pFrag[3], b[2], b[3]);
        }
    }
}

// Tiles of kCtaRows rows a sequence has (its query rows, G per token).
template <int G, int kCtaRows>
__device__ __forceinline__ int tilesOf(const PagedPrefillAttentionParams& p, int seq)
{
    return (max(p.cuSeqlensQ[seq + 1] - p.cuSeqlensQ[seq], 0) * G + kCtaRows - 1) / kCtaRows;
}

// The grid holds only tiles with rows, rank-major: slots [C(r), C(r + 1)) hold rank r of every sequence
// with more than r tiles, in sequence order, where C(r) = sum over sequences of min(tiles, r). So every
// sequence's heaviest tile comes first, and a step of many decodes beside a prompt launches no empty
// CTAs. Called by one whole warp; returns (rank, sequence), sequence -1 past the last slot.
// Up to 32 sequences (every step of the runner but one of many short prompts) each lane holds one
// sequence's tile count after one load, and 32 ranks at a time are tested by shuffles alone; a CTA
// finds its tile in a few hundred cycles, not a dozen dependent loads.
template <int G, int kCtaRows>
__device__ int2 tileOfSlot(const PagedPrefillAttentionParams& p, int slot)
{
    const int lane = threadIdx.x & 31;
    if (p.numSeqs <= 32) {
        const int tiles = lane < p.numSeqs ? tilesOf<G, kCtaRows>(p, lane) : 0;
        int most = tiles;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) most = max(most, __shfl_xor_sync(0xffffffffu, most, off));
        for (int base = 0; base < most; base += 32) {
            const int r = base + lane;  // this lane tests rank r: C(r) <= slot < C(r + 1)
            int below = 0, upTo = 0;    // C(r), C(r + 1)
            for (int s = 0; s < p.numSeqs; ++s) {
                const int t = __shfl_sync(0xffffffffu, tiles, s);
                below += min(t, r);
                upTo += min(t, r + 1);
            }
            const unsigned past = __ballot_sync(0xffffffffu, upTo > slot);
            if (past == 0) continue;
            const int rankLane = __ffs(past) - 1;
            const int rank = base + rankLane;
            int want = slot - __shfl_sync(0xffffffffu, below, rankLane);
            unsigned has = __ballot_sync(0xffffffffu, tiles > rank);  // sequences with a tile of this rank
            for (; want > 0; --want) has &= has - 1;                     // drop the lowest `want` of them
            return make_int2(rank, __ffs(has) - 1);
        }
        return make_int2(0, -1);
    }
    auto slotsBelow = [&](int r) {  // C(r)
        int sum = 0;
        for (int s = lane; s < p.numSeqs; s += 32) sum += min(tilesOf<G, kCtaRows>(p, s), r);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        return sum;
    };
    // The rank: the smallest r with C(r + 1) > slot, by bisection over [0, the longest query's tiles).
    int lo = 0, hi = (p.maxQueryLen * G + kCtaRows - 1) / kCtaRows;
    if (slotsBelow(hi) <= slot) return make_int2(0, -1);
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (slotsBelow(mid + 1) > slot) hi = mid;
        else lo = mid + 1;
    }
    // The sequence: the (slot - C(lo))-th, in order, of those with more than lo tiles.
    int want = slot - slotsBelow(lo);
    for (int base = 0; base < p.numSeqs; base += 32) {
        const int s = base + lane;
        const unsigned has = __ballot_sync(0xffffffffu, s < p.numSeqs && tilesOf<G, kCtaRows>(p, s) > lo);
        const int n = __popc(has);
        if (want < n) {
            unsigned bits = has;
            for (int i = 0; i < want; ++i) bits &= bits - 1;  // drop the lowest `want` set bits
            return make_int2(lo, base + __ffs(bits) - 1);
        }
        want -= n;
    }
    return make_int2(0, -1);
}

// kSplitKeys: both warp groups own the same 64 rows, group g taking keys [32 g, 32 g + 32) of every
// tile, merged through shared memory at the end; else group g owns rows [64 g, 64 g + 64) of the CTA's
// 128 over every key. A one-dimensional grid of (slot, KV head), KV head fastest; a slot is a tile of
// rows (tileOfSlot).
template <class T, int D, int G, bool kSplitKeys, int kStages>
__global__ void __launch_bounds__(kTcThreads) prefillTensorCoreKernel(PagedPrefillAttentionParams p)
{
    constexpr int kKSteps = D / 16;
    constexpr int kDimTiles = D / 8;
    constexpr int kCtaRows = kSplitKeys ? kGroupRows : 2 * kGroupRows;
    constexpr int kStepKeys = kSplitKeys ? kTileKeys / 2 : kTileKeys;  // keys a warp group takes per tile
    static_assert(D % 16 == 0, "head dim must be a multiple of 16");
    extern __shared__ __align__(16) unsigned char smemRaw[];
    T* const stage0 = reinterpret_cast<T*>(smemRaw);  // stage s: K at s * 2 tiles, V right after

    // This CTA's (rank, sequence): see tileOfSlot. Warp 0 finds it; the others wait at the barrier.
    // Before the PDL wait: the step's metadata (cuSeqlensQ, contextLens, the block table) is copied
    // from the host before the step's first kernel, so only Q and the new K/V need the previous kernel.
    __shared__ int2 slotTile;
    const int kvHead = blockIdx.x % p.numKvHeads;
    if (threadIdx.x < 32) {
        const int2 t = tileOfSlot<G, kCtaRows>(p, static_cast<int>(blockIdx.x / p.numKvHeads));
        if (threadIdx.x == 0) slotTile = t;
    }
    __syncthreads();
    const int rank = slotTile.x, seq = slotTile.y;
    if (seq < 0) return;  // past the last tile (the grid is an upper bound)
    const int qStart = p.cuSeqlensQ[seq];
    const int queryLen = p.cuSeqlensQ[seq + 1] - qStart;
    // Tiles count back from each sequence's last row, so rank 0 is every sequence's heaviest tile (a
    // decode token's only one, too) and the partial tile is the first, lightest one: rows below 0 are
    // padding.
    const int numRows = queryLen * G;
    const int ctaRowBase = numRows - (rank + 1) * kCtaRows;
    const int contextLen = p.contextLens[seq];
    const int cachedLen = contextLen - queryLen;
    const int lane = threadIdx.x & 31, group = threadIdx.x / kGroupThreads, warp = (threadIdx.x / 32) % 4;
    const int gq = lane >> 2, tq = lane & 3;

    // This thread's two rows (fragment rows gq and gq + 8 of its warp's 16).
    const int rowBase = ctaRowBase + (kSplitKeys ? 0 : group * kGroupRows);
    const int warpRow = rowBase + warp * 16;
    const int rowA = warpRow + gq, rowB = rowA + 8;
    const bool validA = rowA >= 0 && rowA < numRows, validB = rowB >= 0 && rowB < numRows;
    const int tokA = validA ? rowA / G : 0, tokB = validB ? rowB / G : 0;
    const int headA = kvHead * G + (validA ? rowA % G : 0), headB = kvHead * G + (validB ? rowB % G : 0);
    const int posA = cachedLen + tokA, posB = cachedLen + tokB;
    // A warp whose 16 rows are all padding only helps copy the tiles.
    const bool warpActive = warpRow + 15 >= 0 && warpRow < numRows;
    // Keys at or below every row of this warp can see: steps below it need no causal mask.
    const int warpMinPos = cachedLen + max(warpRow, 0) / G;

    // Keys any row of this CTA may see: up to its last row's position.
    const int kvEnd = min(contextLen, cachedLen + (ctaRowBase + kCtaRows - 1) / G + 1);
    const int numTiles = kvEnd > 0 ? (kvEnd + kTileKeys - 1) / kTileKeys : 0;
    const int32_t* table = p.blockTable + int64_t(seq) * p.blockTableStride;

    // The first kStages - 1 tiles in flight before the query fragments load; the ids of the next behind
    // them. Bits 8s..8s+kTileBlocks-1 of `valid` are validBits() of the tile in stage s.
    TileBlocks blocks = tileBlocks(table, 0, kvEnd);
    unsigned valid = 0;
    gridDependencyWait();  // the keys and values of the new tokens, and Q, come from the kernels before
    allowDependentLaunch();
#pragma unroll
    for (int st = 0; st < kStages - 1; ++st) {
        if (st < numTiles) {
            T* const kDst = stage0 + st * 2 * kTileElems<T, D>;
            issueTile<T, D>(kDst, kDst + kTileElems<T, D>, p, blocks, kvHead, st * kTileKeys, kvEnd);
            valid |= validBits(blocks, p.numBlocks) << (8 * st);
        }
        cpAsyncCommit();
        if (st + 1 < numTiles) blocks = tileBlocks(table, st + 1, kvEnd);
    }

    const T* qA = static_cast<const T*>(p.query) + (qStart + tokA) * p.queryTokenStride + headA * D;
    const T* qB = static_cast<const T*>(p.query) + (qStart + tokB) * p.queryTokenStride + headB * D;
    uint32_t qFrag[kKSteps][4];
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
        qFrag[ks][0] = validA ? load32(qA + ks * 16 + 2 * tq) : 0u;
        qFrag[ks][1] = validB ? load32(qB + ks * 16 + 2 * tq) : 0u;
        qFrag[ks][2] = validA ? load32(qA + ks * 16 + 8 + 2 * tq) : 0u;
        qFrag[ks][3] = validB ? load32(qB + ks * 16 + 8 + 2 * tq) : 0u;
    }
    const float scaleLog2 = p.scale * 1.4426950408889634f;

    RowState<D> r;
#pragma unroll
    for (int dn = 0; dn < kDimTiles; ++dn) r.o[dn][0] = r.o[dn][1] = r.o[dn][2] = r.o[dn][3] = 0.0f;

    constexpr unsigned kStepMask = (1u << (kStepKeys / kKvBlockSize)) - 1;
    const int stepOffset = kSplitKeys ? group * kStepKeys : 0;  // this group's keys within a tile
    for (int t = 0; t < numTiles; ++t) {
        const int stage = t % kStages;
        const T* const kTile = stage0 + stage * 2 * kTileElems<T, D>;
        const T* const vTile = kTile + kTileElems<T, D>;
        const unsigned tileBits = (valid >> (8 * stage)) & 0xffu;
        // The tile kStages - 1 ahead, into the stage the barrier that ended tile t - 1 released.
        if (const int ahead = t + kStages - 1; ahead < numTiles) {
            const int aheadStage = ahead % kStages;
            T* const kDst = stage0 + aheadStage * 2 * kTileElems<T, D>;
            issueTile<T, D>(kDst, kDst + kTileElems<T, D>, p, blocks, kvHead, ahead * kTileKeys, kvEnd);
            valid = (valid & ~(0xffu << (8 * aheadStage))) | validBits(blocks, p.numBlocks) << (8 * aheadStage);
            if (ahead + 1 < numTiles) blocks = tileBlocks(table, ahead + 1, kvEnd);
        }
        cpAsyncCommit();  // possibly empty: the wait below always leaves the newest kStages - 1 groups in flight
        cpAsyncWait<kStages - 1>();
        __syncthreads();  // every thread's copies of tile t have landed

        const int kBase = t * kTileKeys + stepOffset;
        if (warpActive && kBase < kvEnd) {
            const unsigned stepBits = (tileBits >> (stepOffset / kKvBlockSize)) & kStepMask;
            const bool masked = kBase + kStepKeys - 1 > warpMinPos || stepBits != kStepMask;
            attendStep<T, D, kStepKeys>(r, qFrag, kTile + stepOffset * (D + kSmemPad), vTile + stepOffset * (D + kSmemPad),
                                        masked, stepBits, kBase, posA, posB, scaleLog2);
        }
        __syncthreads();  // this stage is consumed: the next iteration's copies may overwrite it
    }

#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
        r.lA += __shfl_xor_sync(0xffffffffu, r.lA, off);
        r.lB += __shfl_xor_sync(0xffffffffu, r.lB, off);
    }
    if constexpr (kSplitKeys) {
        // Group 1 hands its partial rows to the thread of group 0 with the same fragment layout, through
        // the stages (every copy landed: the loop waited for each tile). Word k of thread i at k * 128 + i.
        constexpr int kWords = 4 * kDimTiles + 4;
        static_assert(kWords * kGroupThreads * sizeof(float) <= kTcSmemBytes<T, D, kStages>, "the merge fits the stages");
        float* const merge = reinterpret_cast<float*>(smemRaw);
        const int i = threadIdx.x % kGroupThreads;
        if (group == 1) {
#pragma unroll
            for (int dn = 0; dn < kDimTiles; ++dn)
#pragma unroll
                for (int e = 0; e < 4; ++e) merge[(4 * dn + e) * kGroupThreads + i] = r.o[dn][e];
            merge[(4 * kDimTiles + 0) * kGroupThreads + i] = r.mA;
            merge[(4 * kDimTiles + 1) * kGroupThreads + i] = r.mB;
            merge[(4 * kDimTiles + 2) * kGroupThreads + i] = r.lA;
            merge[(4 * kDimTiles + 3) * kGroupThreads + i] = r.lB;
        }
        __syncthreads();
        if (group == 1) return;
        const float mA1 = merge[(4 * kDimTiles + 0) * kGroupThreads + i], mB1 = merge[(4 * kDimTiles + 1) * kGroupThreads + i];
        const float mA = fmaxf(r.mA, mA1), mB = fmaxf(r.mB, mB1);
        const float baseA = mA == -INFINITY ? 0.0f : mA * scaleLog2, baseB = mB == -INFINITY ? 0.0f : mB * scaleLog2;
        const float a0 = fastExp2(r.mA * scaleLog2 - baseA), a1 = fastExp2(mA1 * scaleLog2 - baseA);
        const float b0 = fastExp2(r.mB * scaleLog2 - baseB), b1 = fastExp2(mB1 * scaleLog2 - baseB);
        r.lA = r.lA * a0 + merge[(4 * kDimTiles + 2) * kGroupThreads + i] * a1;
        r.lB = r.lB * b0 + merge[(4 * kDimTiles + 3) * kGroupThreads + i] * b1;
#pragma unroll
        for (int dn = 0; dn < kDimTiles; ++dn) {
            r.o[dn][0] = r.o[dn][0] * a0 + merge[(4 * dn + 0) * kGroupThreads + i] * a1;
            r.o[dn][1] = r.o[dn][1] * a0 + merge[(4 * dn + 1) * kGroupThreads + i] * a1;
            r.o[dn][2] = r.o[dn][2] * b0 + merge[(4 * dn + 2) * kGroupThreads + i] * b1;
            r.o[dn][3] = r.o[dn][3] * b0 + merge[(4 * dn + 3) * kGroupThreads + i] * b1;
        }
    }
    const float invA = r.lA > 0.0f ? 1.0f / r.lA : 0.0f, invB = r.lB > 0.0f ? 1.0f / r.lB : 0.0f;
    T* outA = static_cast<T*>(p.out) + (qStart + tokA) * p.outTokenStride + headA * D + 2 * tq;
    T* outB = static_cast<T*>(p.out) + (qStart + tokB) * p.outTokenStride + headB * D + 2 * tq;
#pragma unroll
    for (int dn = 0; dn < kDimTiles; ++dn) {
        if (validA) *reinterpret_cast<uint32_t*>(outA + dn * 8) = packPair<T>(r.o[dn][0] * invA, r.o[dn][1] * invA);
        if (validB) *reinterpret_cast<uint32_t*>(outB + dn * 8) = packPair<T>(r.o[dn][2] * invB, r.o[dn][3] * invB);
    }
}

// Tiles of `rows` rows the grid holds a KV head: at most the longest query's tiles for every sequence,
// and at most one partial tile a sequence beyond the whole tiles of all their rows.
inline int64_t gridSlots(const PagedPrefillAttentionParams& p, int group, int rows)
{
    return std::min(ceilDiv(int64_t(p.maxQueryLen) * group, rows) * p.numSeqs,
                    ceilDiv(int64_t(p.numTokens) * group, rows) + p.numSeqs);
}

// Whether the two warp groups split the keys (few CTAs) or the rows (many). H200, 16 / 8 heads, us a
// layer, rows / keys (bench_prefill, docs/perf.md call 99): one 1076-token prompt (272 CTAs of 64 rows)
// 41.8 / 40.5, two 54.7 / 77.1, eight 205 / 299; a chunk of 300 over 776 cached with a decode and a
// 77-token prompt (120 CTAs) 40.3 / 30.5; a prompt of 200 and a chunk of 90 beside 20 decodes (256
// CTAs) 53.5 / 43.1; 63 decodes beside a prompt (800 CTAs) 161 / 173. So keys up to about three waves
// of one CTA per SM.
constexpr int kSplitWaves = 3;

inline bool splitKeys(const PagedPrefillAttentionParams& p, int group)
{
    if (p.impl == PrefillImpl::TensorCoreSplitKeys) return true;
    if (p.impl == PrefillImpl::TensorCoreSplitRows) return false;
    static const int sms = std::max(currentDeviceAttribute(cudaDevAttrMultiProcessorCount), 1);
    return gridSlots(p, group, kGroupRows) * p.numKvHeads <= int64_t(kSplitWaves) * sms;
}

template <class T, int D, int G, bool kSplit, int kStages>
cudaError_t launchTensorCoreWith(const PagedPrefillAttentionParams& p, cudaStream_t stream)
{
    const int64_t ctas = gridSlots(p, G, kSplit ? kGroupRows : 2 * kGroupRows) * p.numKvHeads;
    if (ctas > 0x7fffffff) return cudaErrorInvalidValue;
    if (ctas == 0) return cudaSuccess;
    auto* kernel = prefillTensorCoreKernel<T, D, G, kSplit, kStages>;
    // Above the 48 KB default: opted in once per instantiation.
    static const cudaError_t allowed =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kTcSmemBytes<T, D, kStages>));
    if (allowed != cudaSuccess) return allowed;
    return launchKernel(kernel, static_cast<unsigned>(ctas), kTcThreads, kTcSmemBytes<T, D, kStages>, stream, p);
}

template <class T>
cudaError_t launchTensorCore(const PagedPrefillAttentionParams& p, cudaStream_t stream)
{
    if constexpr (std::is_same_v<T, float>) {
        return cudaErrorInvalidValue;  // mma.sync f16/bf16 only; float32 takes the SIMT path
    } else {
        return dispatchHeadDim(p.headDim, [&]<int D>() {
            return dispatchGroupSize(p.numQHeads / p.numKvHeads, [&]<int G>() {
                // Three stages where the device's shared memory holds them (sm_80, sm_90), else two.
                static const bool three =
                    currentDeviceAttribute(cudaDevAttrMaxSharedMemoryPerBlockOptin) >= int(kTcSmemBytes<T, D, 3>);
                const bool split = splitKeys(p, G);
                if (three) return split ? launchTensorCoreWith<T, D, G, true, 3>(p, stream)
                                        : launchTensorCoreWith<T, D, G, false, 3>(p, stream);
                return split ? launchTensorCoreWith<T, D, G, true, 2>(p, stream)
                             : launchTensorCoreWith<T, D, G, false, 2>(p, stream);
            });
        });
    }
}

}  // namespace

cudaError_t launchPagedPrefillAttention(const PagedPrefillAttentionParams& p, cudaStream_t stream)
{
    if (p.numTokens < 0 || p.numSeqs < 0 || p.numQHeads <= 0 || p.numKvHeads <= 0 ||
        p.numQHeads % p.numKvHeads != 0 || p.maxQueryLen < 0 || p.maxContextLen < 0 || p.partitionSize < 0 ||
        p.partitionSize % kKvBlockSize != 0)
        return cudaErrorInvalidValue;
    if (p.dtype == DType::F32 && prefillForcesTensorCores(p.impl)) return cudaErrorInvalidValue;
    if (p.numTokens == 0 || p.numSeqs == 0) return cudaSuccess;
    return dispatchDType(p.dtype, [&]<class T>() {
        constexpr int kVec = kVecElems<T>;
        if (p.queryTokenStride % kVec != 0 || p.outTokenStride % kVec != 0 || !aligned16(p.query) ||
            !aligned16(p.out) || !aligned16(p.keyCache) || !aligned16(p.valueCache))
            return cudaErrorInvalidValue;
        if (prefillUsesTensorCores(p)) return launchTensorCore<T>(p, stream);
        const int numPartitions = pagedDecodeNumPartitions(p.maxContextLen, p.partitionSize);
        detail::SimtArgs a{};
        a.query = p.query;
        a.out = p.out;
        a.keyCache = p.keyCache;
        a.valueCache = p.valueCache;
        a.blockTable = p.blockTable;
        a.contextLens = p.contextLens;
        a.cuSeqlensQ = p.cuSeqlensQ;
        a.workspace = p.workspace;
        a.counters = p.counters;
        a.queryRowStride = p.queryTokenStride;
        a.outRowStride = p.outTokenStride;
        a.blockTableStride = p.blockTableStride;
        a.numRows = p.numTokens;
        a.numSeqs = p.numSeqs;
        a.numQHeads = p.numQHeads;
        a.numKvHeads = p.numKvHeads;
        a.numBlocks = p.numBlocks;
        a.partitionLen = numPartitions > 1
                             ? p.partitionSize
                             : int(ceilDiv(std::max(p.maxContextLen, 1), kKvBlockSize)) * kKvBlockSize;
        a.numPartitions = numPartitions;
        a.scale = p.scale;
        return detail::launchPagedAttentionSimt<T>(a, p.headDim, stream);
    });
}

}  // namespace lector::gpu
