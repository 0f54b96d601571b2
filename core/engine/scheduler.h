// Scheduler: continuous batching for prompt-driven models (HunyuanOCR), vLLM-style, as plain data. Each
// engine step asks schedule() for a StepPlan: which images to run through the vision tower, and which
// token chunks (prefill chunks and single decode tokens) go into one flattened forward; after the
// forward the backend reports each sequence's outcome with completeStep(). The scheduler owns the block
// tables (core/kv) and never touches tensors.
// Policy per step:
//   1. Decodes first: every running sequence whose prompt is fully computed gets one token, if the
//      pool has a slot for it. When the pool is out of blocks, the most recently admitted running
//      sequence is preempted by recompute (its blocks are freed, its computed tokens reset to 0, its
//      generated tokens kept as part of the prompt to recompute) and goes back to the front of the waiting
//      queue; never a crash, never a lost request.
//   2. Then prefill chunks, oldest first, under maxTokensPerStep (decode tokens count against it too):
//      a sequence's remaining prompt is cut into chunks; a chunk is scheduled only if its blocks can be
//      reserved. A sequence needing vision is scheduled for prefill only after its vision ran.
//   3. Vision: up to maxImagesPerStep waiting sequences whose image is not encoded yet (FIFO). Their
//      outputs stay with the backend until the sequence's prefill is complete.
// A sequence whose prompt alone can never fit into the whole pool is rejected at add() with an error
// naming the sizes; one that outgrows the whole pool while decoding alone is reported in outOfMemory.
// Token indices of a sequence: 0..promptTokens-1 are the prompt, then the generated tokens in order.
// While decoding, computed = promptTokens + generated - 1 (the last sampled token is the next decode's
// input). A preempted sequence recomputes prompt + all generated tokens as one "prompt" (chunked like
// any prefill) and then samples its next token. cancel() frees the blocks at once.
// Threads: engine thread only. No torch.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/kv/block_pool.h"

namespace lector::engine {

using SeqId = std::uint64_t;

struct SchedulerConfig {
    int maxTokensPerStep = 8192;  // prefill + decode tokens in one forward
    int maxSeqsPerStep = 256;     // sequences in one forward
    int maxImagesPerStep = 8;     // vision tower budget per step
};

struct SeqSpec {
    SeqId id = 0;
    std::int64_t promptTokens = 0;  // prefill length (image tokens included)
    int maxNewTokens = 0;
    bool needsVision = true;
};

// One contiguous run of a sequence's tokens in the step's flattened batch.
struct StepChunk {
    SeqId id = 0;
    std::int64_t start = 0;          // sequence index of the chunk's first token (= tokens already cached)
    std::int64_t length = 0;         // tokens in the chunk (1 for a decode)
    bool isDecode = false;           // the token is the last sampled one (not a prompt token)
    bool completesPrefill = false;   // prefill chunk that ends the prompt: sample the first token after it
    std::vector<std::int64_t> slots; // cache slot of each of the chunk's tokens (BlockTable::slot)
};

struct StepPlan {
    std::vector<SeqId> vision;        // run the vision tower for these now
    std::vector<StepChunk> chunks;    // in flattened-batch order; decodes first
    std::vector<SeqId> preempted;     // preempted this step (their cached K/V is gone)
    std::vector<SeqId> outOfMemory;   // cannot get a slot even with every other sequence preempted: the
                                      // backend finishes them (finish reason "length"); already removed
    bool empty() const { return vision.empty() && chunks.empty() && outOfMemory.empty(); }
};

// What the backend reports per sequence after the forward of a StepPlan.
struct SeqOutcome {
    SeqId id = 0;
    bool sampledToken = false;  // a token was sampled (a decode, or a prefill that completed the prompt)
    bool finished = false;      // stop id, max tokens, repeat guard or error: the sequence leaves
};

class Scheduler {
public:
    Scheduler(SchedulerConfig config, int numBlocks, int blockSize = 16);

    // Errors "prompt_too_long": promptTokens + 1 does not fit into the whole pool (message gives the
    // token count and the pool's capacity); "bad_request": duplicate id or promptTokens < 1.
    Result<void> add(const SeqSpec& spec);
    // Drops a sequence wherever it is; frees its blocks at once. Unknown ids are ignored.
    void cancel(SeqId id);

    StepPlan schedule();
    // Grows a running sequence's block table to hold `tokens` tokens from free blocks alone (no
    // preemption), so that the backend can run its next decode steps in one launch (a decode graph of
    // several steps); each of those steps is still one schedule() / completeStep() round, which then
    // finds its slot reserved. False, changing nothing, when the free blocks do not suffice or `id` is
    // not running.
    bool reserveAhead(SeqId id, std::int64_t tokens);
    // Vision done for these sequences (they become eligible for prefill).
    void visionDone(const std::vector<SeqId>& ids);
    // Applies the outcomes of the last plan: advances computed tokens of every scheduled chunk, counts
    // sampled tokens, removes finished sequences and frees their blocks.
    void completeStep(const std::vector<SeqOutcome>& outcomes);

    bool hasWork() const { return !m_seqs.empty(); }
    int numWaiting() const { return static_cast<int>(m_waiting.size()); }
    int numRunning() const { return static_cast<int>(m_running.size()); }
    const kv::BlockPool& pool() const { return m_pool; }
    // Sequence index of the next token of `id` (prompt + generated tokens with cached K/V), -1 if unknown.
    std::int64_t computedTokens(SeqId id) const;
    // Cache slots of tokens 0 .. numTokens-1 of `id`, from its block table (after schedule(), every chunk
    // of the plan has its blocks through start + length). Empty for an unknown id.
    std::vector<std::int64_t> slots(SeqId id, std::int64_t numTokens) const;
    // The block ids of `id`'s table in token order (empty for an unknown id): token t lives in slot
    // blocks[t / blockSize] * blockSize + t % blockSize.
    const std::vector<int>& blocks(SeqId id) const;
    // Number of preemptions so far (metrics, tests).
    int numPreemptions() const { return m_numPreemptions; }

private:
    struct Seq {
        SeqSpec spec;
        std::int64_t computed = 0;   // tokens whose K/V is in the cache
        int generated = 0;           // tokens sampled so far
        bool visionReady = false;
        bool visionScheduled = false;
        kv::BlockTable table;
    };
    // Every known token of the sequence: prompt + generated. computed catches up with it; a decoding
    // sequence sits at target - 1 (its last sampled token is the next decode's input), a preempted one
    // recomputes all of it as its "prompt".
    std::int64_t targetTokens(const Seq& s) const;
    void preempt(SeqId id);

    // --- schedule() phases and helpers (scheduler.cpp) ---
    void scheduleDecodes(StepPlan& plan, int& tokensLeft);
    void schedulePrefills(StepPlan& plan, int& tokensLeft);
    void scheduleVision(StepPlan& plan);
    bool reserveOrPreempt(SeqId id, std::int64_t tokens, bool isRunning, StepPlan& plan);
    std::optional<SeqId> pickVictim(SeqId requester, bool requesterRunning) const;
    StepChunk makeChunk(SeqId id, std::int64_t length, bool isDecode, bool completesPrefill) const;
    void applyChunk(const StepChunk& chunk, const SeqOutcome* outcome);
    void remove(SeqId id);
    std::int64_t poolTokens() const;

    SchedulerConfig m_config;
    kv::BlockPool m_pool;
    std::map<SeqId, Seq> m_seqs;
    std::deque<SeqId> m_waiting;   // not fully prefilled, FIFO (preempted ones at the front)
    std::vector<SeqId> m_running;  // prefill complete, decoding; admission order
    std::vector<StepChunk> m_lastChunks;
    int m_numPreemptions = 0;
};

}  // namespace lector::engine
