// Paged KV cache bookkeeping (docs/architecture.md: core/kv): fixed-size blocks of `blockSize` token
// slots, a pool with reference counts and a FIFO free-block queue, and per-sequence block tables. Block
// ids only: the model runner (core/runner) owns the K/V storage, [numBlocks * blockSize] slots per layer.
// Slot of token i of a sequence = table.blocks[i / blockSize] * blockSize + i % blockSize.
// Threads: engine thread only (not thread-safe). No torch, no CUDA.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace lector::kv {

// Bytes one block takes over all layers, K and V: 2 * layers * kvHeads * headDim * blockSize * elementBytes.
std::int64_t bytesPerBlock(int numLayers, int numKvHeads, int headDim, int blockSize, int elementBytes);

// Blocks that fit in `utilization` (0..1] of `totalBytes` once `usedBytes` (weights, activations) are
// taken: floor((totalBytes * utilization - usedBytes) / blockBytes), at least 0.
std::int64_t blocksForMemory(std::int64_t totalBytes, std::int64_t usedBytes, double utilization, std::int64_t blockBytes);

class BlockPool {
public:
    explicit BlockPool(int numBlocks, int blockSize = 16);

    int numBlocks() const { return static_cast<int>(m_refs.size()); }
    int blockSize() const { return m_blockSize; }
    int numFree() const { return static_cast<int>(m_free.size()); }
    int numUsed() const { return numBlocks() - numFree(); }

    // Takes the oldest free block (reference count 1), or nullopt when none is free.
    std::optional<int> allocate();
    // Reference counting (a block shared by two sequences, e.g. a common prefix).
    void retain(int block);
    // Drops one reference; at zero the block goes to the back of the free queue.
    void release(int block);
    int refCount(int block) const;

private:
    int m_blockSize;
    std::vector<int> m_refs;
    std::deque<int> m_free;
};

// The blocks of one sequence, in token order.
class BlockTable {
public:
    const std::vector<int>& blocks() const { return m_blocks; }
    // Token slots the table can hold: blocks().size() * blockSize.
    std::int64_t capacity(int blockSize) const { return static_cast<std::int64_t>(m_blocks.size()) * blockSize; }
    // Blocks still to allocate so that `tokens` tokens fit.
    int blocksNeeded(std::int64_t tokens, int blockSize) const;
    // Grows the table until `tokens` tokens fit. All or nothing: false (and the table unchanged, no block
    // taken) when the pool has too few free blocks.
    bool reserve(BlockPool& pool, std::int64_t tokens);
    // Releases every block to the pool; the table becomes empty.
    void releaseAll(BlockPool& pool);
    // Cache slot of token index `token` (must be < capacity).
    std::int64_t slot(std::int64_t token, int blockSize) const;

private:
    std::vector<int> m_blocks;
};

}  // namespace lector::kv
