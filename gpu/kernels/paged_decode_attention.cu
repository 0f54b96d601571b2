// Paged decode attention: the SIMT kernel of paged_attention_simt.cuh with one row per sequence.
#include "gpu/kernels/paged_attention_simt.cuh"
#include "gpu/kernels/paged_decode_attention.cuh"

namespace lector::gpu {

cudaError_t launchPagedDecodeAttention(const PagedDecodeAttentionParams& p, cudaStream_t stream)
{
    if (p.numSeqs < 0 || p.maxContextLen < 0 || p.partitionSize < 0 || p.partitionSize % kKvBlockSize != 0 ||
        p.clusterPartitions < 0 || p.rowPartitions < 0 || p.rowPartitions > kDecodeMaxRowPartitions ||
        (p.clusterPartitions > 0 && p.rowPartitions > 0))
        return cudaErrorInvalidValue;
    const bool cluster = p.clusterPartitions > 0;
    const int numPartitions = pagedDecodeLaunchPartitions(p);
    detail::SimtArgs a{};
    a.query = p.query;
    a.out = p.out;
    a.keyCache = p.keyCache;
    a.valueCache = p.valueCache;
    a.blockTable = p.blockTable;
    a.contextLens = p.contextLens;
    a.cuSeqlensQ = nullptr;
    a.workspace = p.workspace;
    a.counters = p.counters;
    a.queryRowStride = p.querySeqStride;
    a.outRowStride = p.outSeqStride;
    a.blockTableStride = p.blockTableStride;
    a.numRows = p.numSeqs;
    a.numSeqs = p.numSeqs;
    a.numQHeads = p.numQHeads;
    a.numKvHeads = p.numKvHeads;
    a.numBlocks = p.numBlocks;
    // Row partitions: the longest row's share (what the variant choice and the checks see).
    a.partitionLen = cluster || p.rowPartitions > 0 ? pagedDecodeClusterPartitionLen(p.maxContextLen, numPartitions)
                     : numPartitions > 1           ? p.partitionSize
                                         : int(ceilDiv(std::max(p.maxContextLen, 1), kKvBlockSize)) * kKvBlockSize;
    a.numPartitions = numPartitions;
    a.rowPartitions = p.rowPartitions;
    a.scale = p.scale;
    a.rope = p.rope;
    return dispatchDType(p.dtype,
                         [&]<class T>() { return detail::launchPagedAttentionSimt<T>(a, p.headDim, stream, cluster); });
}

bool pagedDecodeClusterFits(DType dtype, int clusterPartitions, int groupSize, int headDim, int maxContextLen)
{
    bool fits = false;
    dispatchDType(dtype, [&]<class T>() {
        fits = detail::pagedAttentionClusterFits<T>(clusterPartitions, groupSize, headDim,
                                                     pagedDecodeClusterPartitionLen(maxContextLen, clusterPartitions));
        return cudaSuccess;
    });
    return fits;
}

}  // namespace lector::gpu
