// The one idea (vLLM v1): there are no prefill and decode modes. Every sequence has target tokens
// (prompt + generated) and computed tokens (K/V in the cache); each step lets computed catch up with
// target under a token budget. A decode is a catch-up of one token, a prefill chunk one of many, and a
// preempted sequence simply has computed reset to 0. Image tokens are prompt tokens; the vision tower
// has its own per-step budget and only gates when a prompt may start.
//
// Priority, highest first: running sequences in admission order, then the waiting queue in order. A
// sequence that needs blocks may only take them from lower-priority ones, and never from a sequence
// already scheduled this step, so a plan's slots are never handed to two sequences. The oldest running
// sequence (or, with none running, the first ready waiting one) can always evict everyone behind it,
// and add() guarantees its prompt fits the pool: the scheduler never deadlocks.
#include "core/engine/scheduler.h"

#include <algorithm>
#include <utility>

#include "core/common/assert.h"

namespace lector::engine {

Scheduler::Scheduler(SchedulerConfig config, int numBlocks, int blockSize)
    : m_config(config), m_pool(numBlocks, blockSize)
{
}

Result<void> Scheduler::add(const SeqSpec& spec)
{
    if (spec.promptTokens < 1)
        return makeError("bad_request", "sequence " + std::to_string(spec.id) + ": empty prompt (" +
                                            std::to_string(spec.promptTokens) + " tokens)");
    if (m_seqs.count(spec.id))
        return makeError("bad_request", "sequence " + std::to_string(spec.id) + " is already scheduled");
    // +1: the first generated token is the first decode's input, so it needs a slot too.
    if (spec.promptTokens + 1 > poolTokens())
        return makeError("prompt_too_long",
                         "prompt of " + std::to_string(spec.promptTokens) + " tokens (+1 to generate) does not fit the KV cache of " +
                             std::to_string(poolTokens()) + " tokens (" + std::to_string(m_pool.numBlocks()) + " blocks of " +
                             std::to_string(m_pool.blockSize()) + ")");
    Seq seq;
    seq.spec = spec;
    m_seqs.emplace(spec.id, std::move(seq));
    m_waiting.push_back(spec.id);
    return {};
}

void Scheduler::cancel(SeqId id)
{
    if (!m_seqs.count(id)) return;
    remove(id);
    // A later sequence reusing the id must not receive this one's pending chunks.
    std::erase_if(m_lastChunks, [id](const StepChunk& c) { return c.id == id; });
}

StepPlan Scheduler::schedule()
{
    StepPlan plan;
    int tokensLeft = m_config.maxTokensPerStep;
    scheduleDecodes(plan, tokensLeft);
    // Blocks just freed by a preemption would otherwise be refilled by the victim's own recompute in this
    // very step, only to be taken back in the next (vLLM skips waiting requests after a preemption too).
    if (plan.preempted.empty()) schedulePrefills(plan, tokensLeft);
    scheduleVision(plan);
    m_lastChunks = plan.chunks;
    return plan;
}

bool Scheduler::reserveAhead(SeqId id, std::int64_t tokens)
{
    auto it = m_seqs.find(id);
    if (it == m_seqs.end() || std::find(m_running.begin(), m_running.end(), id) == m_running.end()) return false;
    return it->second.table.reserve(m_pool, tokens);  // all or nothing
}

void Scheduler::visionDone(const std::vector<SeqId>& ids)
{
    for (SeqId id : ids) {
        auto it = m_seqs.find(id);
        if (it != m_seqs.end()) it->second.visionReady = true;
    }
}

void Scheduler::completeStep(const std::vector<SeqOutcome>& outcomes)
{
    for (const StepChunk& chunk : m_lastChunks) {
        auto it = std::find_if(outcomes.begin(), outcomes.end(), [&](const SeqOutcome& o) { return o.id == chunk.id; });
        applyChunk(chunk, it == outcomes.end() ? nullptr : &*it);
    }
    m_lastChunks.clear();
    for (const SeqOutcome& outcome : outcomes)
        if (outcome.finished && m_seqs.count(outcome.id)) remove(outcome.id);
}

std::int64_t Scheduler::computedTokens(SeqId id) const
{
    auto it = m_seqs.find(id);
    return it == m_seqs.end() ? -1 : it->second.computed;
}

std::vector<std::int64_t> Scheduler::slots(SeqId id, std::int64_t numTokens) const
{
    std::vector<std::int64_t> out;
    auto it = m_seqs.find(id);
    if (it == m_seqs.end()) return out;
    LECTOR_ASSERT(numTokens <= it->second.table.capacity(m_pool.blockSize()));
    out.reserve(static_cast<size_t>(numTokens));
    for (std::int64_t i = 0; i < numTokens; ++i) out.push_back(it->second.table.slot(i, m_pool.blockSize()));
    return out;
}

const std::vector<int>& Scheduler::blocks(SeqId id) const
{
    static const std::vector<int> none;
    auto it = m_seqs.find(id);
    return it == m_seqs.end() ? none : it->second.table.blocks();
}

// --- private ---

std::int64_t Scheduler::targetTokens(const Seq& s) const
{
    return s.spec.promptTokens + s.generated;
}

std::int64_t Scheduler::poolTokens() const
{
    return static_cast<std::int64_t>(m_pool.numBlocks()) * m_pool.blockSize();
}

void Scheduler::preempt(SeqId id)
{
    Seq& s = m_seqs.at(id);
    s.table.releaseAll(m_pool);
    s.computed = 0;
    ++m_numPreemptions;
    auto it = std::find(m_running.begin(), m_running.end(), id);
    if (it == m_running.end()) return;  // a partial prefill keeps its place in the waiting queue
    m_running.erase(it);
    m_waiting.push_front(id);
    // The backend drops vision outputs once the prefill completes, and the recompute needs them again.
    s.visionReady = false;
    s.visionScheduled = false;
}

void Scheduler::remove(SeqId id)
{
    m_seqs.at(id).table.releaseAll(m_pool);
    m_seqs.erase(id);
    std::erase(m_waiting, id);
    std::erase(m_running, id);
}

// Decodes first, oldest admitted first. Walks by index because eviction pops later entries and an
// out-of-memory sequence removes the current one.
void Scheduler::scheduleDecodes(StepPlan& plan, int& tokensLeft)
{
    std::size_t i = 0;
    while (i < m_running.size() && tokensLeft > 0 && static_cast<int>(plan.chunks.size()) < m_config.maxSeqsPerStep) {
        const SeqId id = m_running[i];
        const std::int64_t needed = m_seqs.at(id).computed + 1;
        if (needed > poolTokens()) {  // even alone in the pool it cannot take one more token
            remove(id);
            plan.outOfMemory.push_back(id);
            continue;
        }
        if (!reserveOrPreempt(id, needed, true, plan)) {
            // Everyone younger is gone and the older ones, already scheduled, hold the rest: step aside.
            preempt(id);
            plan.preempted.push_back(id);
            break;
        }
        plan.chunks.push_back(makeChunk(id, 1, true, false));
        --tokensLeft;
        ++i;
    }
}

// Prefill chunks for ready waiting sequences, in queue order. Strictly first come first served: when
// the first ready sequence cannot get its blocks, younger ones wait too rather than take them.
void Scheduler::schedulePrefills(StepPlan& plan, int& tokensLeft)
{
    for (std::size_t i = 0; i < m_waiting.size(); ++i) {
        if (tokensLeft <= 0 || static_cast<int>(plan.chunks.size()) >= m_config.maxSeqsPerStep) break;
        const SeqId id = m_waiting[i];
        const Seq& s = m_seqs.at(id);
        if (s.spec.needsVision && !s.visionReady) continue;
        const std::int64_t remaining = targetTokens(s) - s.computed;
        LECTOR_ASSERT(remaining > 0);
        const std::int64_t length = std::min<std::int64_t>(remaining, tokensLeft);
        if (!reserveOrPreempt(id, s.computed + length, false, plan)) break;
        plan.chunks.push_back(makeChunk(id, length, false, length == remaining));
        tokensLeft -= static_cast<int>(length);
        // Same rule as after a decode preemption: a victim is not recomputed in the step that evicted it.
        if (!plan.preempted.empty()) break;
    }
}

// Vision for waiting sequences in queue order, each image once (until a preemption makes it stale).
void Scheduler::scheduleVision(StepPlan& plan)
{
    for (SeqId id : m_waiting) {
        if (static_cast<int>(plan.vision.size()) >= m_config.maxImagesPerStep) break;
        Seq& s = m_seqs.at(id);
        if (!s.spec.needsVision || s.visionReady || s.visionScheduled) continue;
        s.visionScheduled = true;
        plan.vision.push_back(id);
    }
}

// Grows the table of `id` to `tokens`, preempting lower-priority sequences while the pool is short.
bool Scheduler::reserveOrPreempt(SeqId id, std::int64_t tokens, bool isRunning, StepPlan& plan)
{
    Seq& s = m_seqs.at(id);
    while (!s.table.reserve(m_pool, tokens)) {
        const std::optional<SeqId> victim = pickVictim(id, isRunning);
        if (!victim) return false;
        preempt(*victim);
        plan.preempted.push_back(*victim);
    }
    return true;
}

// The lowest-priority sequence holding blocks behind `requester`: partial prefills from the back of the
// waiting queue first (in vLLM they would be the most recently admitted), then the most recently admitted
// running one. Both phases walk in priority order, so nothing returned here is scheduled this step.
std::optional<SeqId> Scheduler::pickVictim(SeqId requester, bool requesterRunning) const
{
    for (auto it = m_waiting.rbegin(); it != m_waiting.rend() && *it != requester; ++it)
        if (!m_seqs.at(*it).table.blocks().empty()) return *it;
    if (requesterRunning && m_running.back() != requester) return m_running.back();
    return std::nullopt;
}

StepChunk Scheduler::makeChunk(SeqId id, std::int64_t length, bool isDecode, bool completesPrefill) const
{
    const Seq& s = m_seqs.at(id);
    StepChunk chunk;
    chunk.id = id;
    chunk.start = s.computed;
    chunk.length = length;
    chunk.isDecode = isDecode;
    chunk.completesPrefill = completesPrefill;
    chunk.slots.reserve(static_cast<std::size_t>(length));
    for (std::int64_t t = chunk.start; t < chunk.start + length; ++t)
        chunk.slots.push_back(s.table.slot(t, m_pool.blockSize()));
    return chunk;
}

void Scheduler::applyChunk(const StepChunk& chunk, const SeqOutcome* outcome)
{
    auto it = m_seqs.find(chunk.id);
    if (it == m_seqs.end()) return;  // cancelled since schedule()
    Seq& s = it->second;
    s.computed = chunk.start + chunk.length;
    if (!chunk.isDecode && !chunk.completesPrefill) return;
    if (!outcome || !outcome->sampledToken) {
        // Nothing sampled (a backend that skipped the sample): leave the chunk's last token uncomputed so
        // that the next step feeds it again and samples, keeping computed = target - 1 while decoding.
        --s.computed;
        return;
    }
    ++s.generated;
    if (chunk.completesPrefill) {
        std::erase(m_waiting, chunk.id);
        m_running.push_back(chunk.id);
    }
}

}  // namespace lector::engine
