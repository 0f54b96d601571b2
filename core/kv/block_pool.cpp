#include "core/kv/block_pool.h"

#include <cmath>

#include "core/common/assert.h"

namespace lector::kv {

std::int64_t bytesPerBlock(int numLayers, int numKvHeads, int headDim, int blockSize, int elementBytes)
{
    // K and V each hold [numLayers, blockSize, numKvHeads, headDim] elements per block.
    return std::int64_t{2} * numLayers * numKvHeads * headDim * blockSize * elementBytes;
}

std::int64_t blocksForMemory(std::int64_t totalBytes, std::int64_t usedBytes, double utilization, std::int64_t blockBytes)
{
    if (blockBytes <= 0) return 0;
    // Flooring the budget first keeps the rest in exact integer arithmetic; usedBytes is whole, so the
    // result equals floor((totalBytes * utilization - usedBytes) / blockBytes).
    const auto budget = static_cast<std::int64_t>(std::floor(static_cast<double>(totalBytes) * utilization));
    const std::int64_t free = budget - usedBytes;
    return free > 0 ? free / blockBytes : 0;
}

// --- BlockPool ---

BlockPool::BlockPool(int numBlocks, int blockSize) : m_blockSize(blockSize), m_refs(static_cast<std::size_t>(numBlocks), 0)
{
    LECTOR_ASSERT(numBlocks >= 0 && blockSize >= 1);
    for (int b = 0; b < numBlocks; ++b) m_free.push_back(b);
}

std::optional<int> BlockPool::allocate()
{
    if (m_free.empty()) return std::nullopt;
    const int block = m_free.front();
    m_free.pop_front();
    LECTOR_ASSERT(m_refs[static_cast<std::size_t>(block)] == 0);
    m_refs[static_cast<std::size_t>(block)] = 1;
    return block;
}

void BlockPool::retain(int block)
{
    LECTOR_ASSERT(block >= 0 && block < numBlocks());
    // A free block has no owner to share it with: retaining it would hand it out twice.
    LECTOR_ASSERT(m_refs[static_cast<std::size_t>(block)] > 0);
    ++m_refs[static_cast<std::size_t>(block)];
}

void BlockPool::release(int block)
{
    LECTOR_ASSERT(block >= 0 && block < numBlocks());
    int& refs = m_refs[static_cast<std::size_t>(block)];
    LECTOR_ASSERT(refs > 0);
    if (--refs == 0) m_free.push_back(block);
}

int BlockPool::refCount(int block) const
{
    LECTOR_ASSERT(block >= 0 && block < numBlocks());
    return m_refs[static_cast<std::size_t>(block)];
}

// --- BlockTable ---

int BlockTable::blocksNeeded(std::int64_t tokens, int blockSize) const
{
    const std::int64_t total = (tokens + blockSize - 1) / blockSize;
    const std::int64_t missing = total - static_cast<std::int64_t>(m_blocks.size());
    return missing > 0 ? static_cast<int>(missing) : 0;
}

bool BlockTable::reserve(BlockPool& pool, std::int64_t tokens)
{
    const int needed = blocksNeeded(tokens, pool.blockSize());
    // Checking up front is what makes this all or nothing: no half-grown table to roll back.
    if (needed > pool.numFree()) return false;
    for (int i = 0; i < needed; ++i) m_blocks.push_back(*pool.allocate());
    return true;
}

void BlockTable::releaseAll(BlockPool& pool)
{
    for (int block : m_blocks) pool.release(block);
    m_blocks.clear();
}

std::int64_t BlockTable::slot(std::int64_t token, int blockSize) const
{
    LECTOR_ASSERT(token >= 0 && token < capacity(blockSize));
    const int block = m_blocks[static_cast<std::size_t>(token / blockSize)];
    return static_cast<std::int64_t>(block) * blockSize + token % blockSize;
}

}  // namespace lector::kv
