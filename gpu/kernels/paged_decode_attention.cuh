// Paged attention for decode steps: one query token per sequence against that sequence's whole
// paged KV context. GQA-aware: a CTA owns one KV head and computes all of its query heads, so each
// KV head is read once per step. Long contexts are split into partitions (split-K) that run as
// separate CTAs; the last of them to finish merges their partial softmax results, or, with
// clusterPartitions (sm_90), a fixed number of partitions per sequence split its own context and merge
// through distributed shared memory (paged_attention_simt.cuh).
// Called by the model runner on the engine thread once per layer; the runner picks the partition
// size once per step (choosePagedDecodePartitionSize) and reuses it in every layer.
//
// Contract under PDL (common.cuh): with partitions of at most 64 keys (paged_attention_simt.cuh) it loads K
// and V before waiting for the previous kernel on the stream, and reloads only each sequence's newest
// token after the wait, so the previous kernel may write that slot and no other.
//
// Page table: blockTable [numSeqs, maxBlocksPerSeq] of int32 block ids; token t of sequence s lives
// in block blockTable[s][t / kKvBlockSize] at offset t % kKvBlockSize. Cache layout as in
// kv_cache_write.cuh.
#pragma once

#include "gpu/kernels/qk_norm_rope.cuh"
#include "gpu/kernels/types.h"

namespace lector::gpu {

struct PagedDecodeAttentionParams {
    DType dtype = DType::F16;          // of query, out and the caches
    void* out = nullptr;               // [numSeqs, numQHeads, headDim], outSeqStride, heads contiguous
    const void* query = nullptr;       // [numSeqs, numQHeads, headDim], querySeqStride, heads contiguous
    const void* keyCache = nullptr;    // [numBlocks, kKvBlockSize, numKvHeads, headDim] contiguous
    const void* valueCache = nullptr;  // [numBlocks, kKvBlockSize, numKvHeads, headDim] contiguous
    const int32_t* blockTable = nullptr;   // [numSeqs, blockTableStride]
    const int32_t* contextLens = nullptr;  // [numSeqs]: keys each query attends to (<= maxContextLen)
    float* workspace = nullptr;        // pagedDecodeWorkspaceFloats() floats; unused with one partition
    int32_t* counters = nullptr;       // [numSeqs * numKvHeads] split-K tickets, zero (and left zero); split only
    int64_t querySeqStride = 0;        // elements
    int64_t outSeqStride = 0;
    int64_t blockTableStride = 0;
    int numSeqs = 0;
    int numQHeads = 0;
    int numKvHeads = 0;                // numQHeads / numKvHeads in {1, 2, 4, 8}
    int headDim = 0;                   // 128 (the decoder's)
    int numBlocks = 0;                 // pool size: block ids outside [0, numBlocks) are read as masked
    int maxContextLen = 0;             // host-side bound on contextLens: sizes the grid
    int partitionSize = 0;             // split-K tokens per CTA: a multiple of kKvBlockSize, or 0 = no split
    // > 0 (2..16, sm_90): instead of partitionSize, this many partitions per (sequence, KV head), one
    // thread-block cluster, each a share of the sequence's own context (the grid does not grow with
    // maxContextLen); no workspace or counters. Check pagedDecodeClusterFits() first.
    int clusterPartitions = 0;
    // > 0 (and no cluster): instead of partitionSize, this many split-K partitions per (sequence, KV
    // head), each an equal share of the sequence's own context (fewer where it has fewer blocks), merged
    // by the ticket; the grid does not grow with maxContextLen. See pagedDecodeRowPartitions().
    int rowPartitions = 0;
    float scale = 1.0f;                // softmax scale, usually 1/sqrt(headDim)
    // rope.key set (decode rows, the one-pass variant: row partitions or long partitions): QK-norm +
    // XD-RoPE of each sequence's new token and its K/V write into the caches, done by this kernel instead
    // of by qkNormRopeWriteKv (qk_norm_rope.cuh) just before it, one kernel and one dependency less a
    // layer, with that kernel's arithmetic. query is then raw (left so in its buffer), rope.key the raw
    // keys, rope.value the values; the CTA whose partition ends at the newest token writes its rotated key
    // and value to the cache slot (rope.slotMapping, one a sequence) and attends to them from shared memory,
    // never reading the slot back. rope's query, token and head counts are unused; its caches must be these.
    QkNormRopeParams rope;
};

// Below 256 the automatic choice takes 64: one KV block per warp, the variant that loads K and V before
// waiting for the previous kernel (H200, batch 1, context 1076: 8.5 us per layer against 10.6 at 128
// and 13.8 at 256).
constexpr int kDecodeMinPartition = 64;
constexpr int kDecodeShortPartitionLimit = 256;
// Shared-memory bound of one partition's logits, for the variants that keep them (partitions of up to
// kDecodeMinPartition keys, and the cluster merge). Longer split-K partitions make one pass with online
// softmax and have no bound.
constexpr int kDecodeMaxPartition = 1024;
// The automatic choice stops at 512: on an H200 at batch 64 / context 4096 partitions of 256 or 512
// reached 90% of copy bandwidth and 1024 only 85% (fewer, longer CTAs leave a ragged last wave).
constexpr int kDecodeAutoMaxPartition = 512;

// Most partitions of the cluster merge: a cluster of 16 CTAs is non-portable (H100/H200 run it).
constexpr int kDecodeMaxClusterPartitions = 16;

// CTAs of the one-pass variant resident per SM (16-bit K/V, up to 2 query heads per KV head: its launch
// bounds), and the most row partitions a launch takes.
constexpr int kDecodeOnlineCtasPerSm = 4;
constexpr int kDecodeMaxRowPartitions = 64;

// Row partitions for decode steps of numRows sequences whatever their context (the graphed steps of
// more than a few sequences): as many whole partitions per (sequence, KV head) as one wave of CTAs holds,
// numSms * kDecodeOnlineCtasPerSm, at least one. On an H200 at contexts of 1076-1332 one wave of long
// CTAs beat every fixed partition length at 16 to 128 sequences (perf.md, device calls 56-58): batch 32
// gets 2, batch 64 and up 1. Rounding to the nearest instead (before call 89) gave batch 24 three
// partitions (576 CTAs) and batch 40 two (640): a second wave of 48 or 112 CTAs, and attention at 59 and
// 67 % of copy bandwidth against 86 % at 32 (perf.md, calls 84-88).
constexpr int pagedDecodeRowPartitions(int numRows, int numKvHeads, int numSms)
{
    const int64_t base = int64_t(numRows) * numKvHeads;
    if (base <= 0) return 1;
    const int64_t parts = int64_t(numSms) * kDecodeOnlineCtasPerSm / base;  // whole partitions in one wave
    return static_cast<int>(parts < 1 ? 1 : parts > kDecodeMaxRowPartitions ? kDecodeMaxRowPartitions : parts);
}

// The automatic split (partitionSize < 0) takes row partitions from this many (sequence, KV head) pairs
// up, where they come to at most 4 per sequence on an H200; below, partition sizes
// (choosePagedDecodePartitionSize), whose many short CTAs suit a few long sequences.
constexpr int kDecodeAutoRowPartitionsMinPairs = 128;

// The automatic split's row partitions for numRows sequences: pagedDecodeRowPartitions() from
// kDecodeAutoRowPartitionsMinPairs pairs, else 0 (a partition size instead).
constexpr int pagedDecodeAutoRowPartitions(int numRows, int numKvHeads, int numSms)
{
    return int64_t(numRows) * numKvHeads >= kDecodeAutoRowPartitionsMinPairs
               ? pagedDecodeRowPartitions(numRows, numKvHeads, numSms)
               : 0;
}

// Keys per partition of the cluster merge: the longest sequence's share, whole blocks.
constexpr int pagedDecodeClusterPartitionLen(int maxContextLen, int clusterPartitions)
{
    const int64_t blocks = ceilDiv(maxContextLen > 0 ? maxContextLen : 1, kKvBlockSize);
    return static_cast<int>(ceilDiv(blocks, clusterPartitions > 0 ? clusterPartitions : 1)) * kKvBlockSize;
}

// Partitions the launch will use (1 when partitionSize is 0 or covers maxContextLen).
constexpr int pagedDecodeNumPartitions(int maxContextLen, int partitionSize)
{
    if (partitionSize <= 0 || maxContextLen <= partitionSize) return 1;
    return static_cast<int>(ceilDiv(maxContextLen, partitionSize));
}

// Floats of workspace for the split-K partial results: [rows, numQHeads, numPartitions] x (headDim + 2).
// rows = numSeqs for decode, numTokens for the SIMT prefill path. Zero when there is one partition.
constexpr int64_t pagedAttentionWorkspaceFloats(int rows, int numQHeads, int headDim, int numPartitions)
{
    return numPartitions <= 1 ? 0 : int64_t(rows) * numQHeads * numPartitions * (headDim + 2);
}

// Partitions per (sequence, KV head) the launch takes: the cluster's, the row partitions, or as many
// partitionSize-key partitions as maxContextLen needs.
inline int pagedDecodeLaunchPartitions(const PagedDecodeAttentionParams& p)
{
    return p.clusterPartitions > 0 ? p.clusterPartitions
           : p.rowPartitions > 0   ? p.rowPartitions
                                   : pagedDecodeNumPartitions(p.maxContextLen, p.partitionSize);
}

inline int64_t pagedDecodeWorkspaceFloats(const PagedDecodeAttentionParams& p)
{
    if (p.clusterPartitions > 0) return 0;
    return pagedAttentionWorkspaceFloats(p.numSeqs, p.numQHeads, p.headDim, pagedDecodeLaunchPartitions(p));
}

// A partition size that gives about two CTAs per SM, at most kDecodeAutoMaxPartition tokens: no split
// when the context fits one partition.
constexpr int choosePagedDecodePartitionSize(int numRows, int numKvHeads, int maxContextLen, int numSms)
{
    const int64_t base = int64_t(numRows) * numKvHeads;
    if (base <= 0 || maxContextLen <= kDecodeMinPartition) return 0;
    const int64_t wanted = ceilDiv(2 * int64_t(numSms), base);  // partitions per (row, KV head)
    int64_t size = ceilDiv(maxContextLen, wanted < 1 ? 1 : wanted);
    size = ceilDiv(size, kKvBlockSize) * kKvBlockSize;
    if (size < kDecodeShortPartitionLimit) size = kDecodeMinPartition;
    if (size > kDecodeAutoMaxPartition) size = kDecodeAutoMaxPartition;
    return size >= maxContextLen ? 0 : static_cast<int>(size);
}

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// Asynchronous on `stream`. cudaErrorInvalidValue for an unsupported head dim (128), group size
// (1, 2, 4, 8), partition size, or a missing workspace when the launch splits.
cudaError_t launchPagedDecodeAttention(const PagedDecodeAttentionParams& p, cudaStream_t stream);

// Whether the current device runs clusterPartitions-CTA clusters of the cluster-merge kernel for this
// dtype, group size, head dim and context bound (sm_90 and newer; 16 needs non-portable cluster sizes).
bool pagedDecodeClusterFits(DType dtype, int clusterPartitions, int groupSize, int headDim, int maxContextLen);
#endif

}  // namespace lector::gpu
