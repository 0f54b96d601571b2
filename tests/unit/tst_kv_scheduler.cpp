// core/kv block pool and tables, and the engine's Scheduler, driven by a fake backend (plain data, no
// tensors). Every expected value is worked out by hand in the comments, never taken from the code.
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/engine/scheduler.h"
#include "core/kv/block_pool.h"
#include "tests/support/lector_test.h"

using namespace lector;
using namespace lector::engine;

namespace {

SeqSpec spec(SeqId id, std::int64_t promptTokens, int maxNewTokens, bool needsVision = false)
{
    SeqSpec s;
    s.id = id;
    s.promptTokens = promptTokens;
    s.maxNewTokens = maxNewTokens;
    s.needsVision = needsVision;
    return s;
}

template <class T>
std::string join(const std::vector<T>& values)
{
    std::ostringstream out;
    for (std::size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
    return out.str();
}

std::vector<std::int64_t> range(std::int64_t first, std::int64_t count)
{
    std::vector<std::int64_t> out;
    for (std::int64_t i = 0; i < count; ++i) out.push_back(first + i);
    return out;
}

// A plan's chunks as text: "id:dS" a decode at S, "id:S+L" a prefill chunk, with "*" when it completes the prompt.
std::string chunks(const StepPlan& plan)
{
    std::ostringstream out;
    for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
        const StepChunk& c = plan.chunks[i];
        out << (i ? " " : "") << c.id << ':';
        if (c.isDecode) out << 'd' << c.start << (c.length != 1 ? "?len" : "");
        else out << c.start << '+' << c.length << (c.completesPrefill ? "*" : "");
    }
    return out.str();
}

SeqOutcome sampled(SeqId id, bool finished = false)
{
    return SeqOutcome{id, true, finished};
}

const SchedulerConfig kConfig32{32, 256, 8};

}  // namespace

// --- sizing ---

LECTOR_TEST(bytesPerBlockCountsKAndVOverAllLayers)
{
    // 2 * 24 * 8 * 128 * 16 * 2 = 1,572,864 (1.5 MiB).
    LECTOR_CHECK_EQ(kv::bytesPerBlock(24, 8, 128, 16, 2), std::int64_t{1572864});
    LECTOR_CHECK_EQ(kv::bytesPerBlock(1, 1, 1, 1, 1), std::int64_t{2});
    // 2 * 80 * 8 * 128 * 32 * 4 = 160 * 8 * 128 * 128 = 20,971,520 (20 MiB).
    LECTOR_CHECK_EQ(kv::bytesPerBlock(80, 8, 128, 32, 4), std::int64_t{20971520});
}

LECTOR_TEST(blocksForMemoryFloorsAndClampsAtZero)
{
    // 10,000,000 * 0.9 - 2,000,000 = 7,000,000; / 1,572,864 = 4.45 -> 4.
    LECTOR_CHECK_EQ(kv::blocksForMemory(10'000'000, 2'000'000, 0.9, 1572864), std::int64_t{4});
    // Exact multiple: (1000 - 200) / 100 = 8.
    LECTOR_CHECK_EQ(kv::blocksForMemory(1000, 200, 1.0, 100), std::int64_t{8});
    // (500 - 200) / 100 = 3.
    LECTOR_CHECK_EQ(kv::blocksForMemory(1000, 200, 0.5, 100), std::int64_t{3});
    // Weights alone exceed the budget: 500 - 600 < 0 -> 0, not negative.
    LECTOR_CHECK_EQ(kv::blocksForMemory(1000, 600, 0.5, 100), std::int64_t{0});
    // 141 GiB GPU, 0.9, 20 GiB used, 1.5 MiB blocks: 151,397,597,184 * 0.9 = 136,257,837,465.6;
    // - 21,474,836,480 = 114,783,000,985.6; / 1,572,864 = 72,977.07 -> 72,977.
    LECTOR_CHECK_EQ(kv::blocksForMemory(141LL << 30, 20LL << 30, 0.9, 1572864), std::int64_t{72977});
}

// --- BlockPool ---

LECTOR_TEST(poolAllocatesOldestFreeFirstAndExhausts)
{
    kv::BlockPool pool(4, 16);
    LECTOR_CHECK_EQ(pool.numBlocks(), 4);
    LECTOR_CHECK_EQ(pool.blockSize(), 16);
    LECTOR_CHECK_EQ(pool.allocate().value_or(-1), 0);
    LECTOR_CHECK_EQ(pool.allocate().value_or(-1), 1);
    LECTOR_CHECK_EQ(pool.numFree(), 2);
    LECTOR_CHECK_EQ(pool.numUsed(), 2);
    // Free queue is [2, 3]; a released block goes to the back: [2, 3, 0].
    pool.release(0);
    LECTOR_CHECK_EQ(pool.allocate().value_or(-1), 2);
    LECTOR_CHECK_EQ(pool.allocate().value_or(-1), 3);
    LECTOR_CHECK_EQ(pool.allocate().value_or(-1), 0);
    LECTOR_CHECK(!pool.allocate().has_value());
    LECTOR_CHECK_EQ(pool.numFree(), 0);
    LECTOR_CHECK_EQ(pool.numUsed(), 4);
    // Released in the order 3, 1: allocated again in that order.
    pool.release(3);
    pool.release(1);
    LECTOR_CHECK_EQ(pool.allocate().value_or(-1), 3);
    LECTOR_CHECK_EQ(pool.allocate().value_or(-1), 1);
}

LECTOR_TEST(poolRefCountsKeepSharedBlocksUntilLastRelease)
{
    kv::BlockPool pool(2, 16);
    const int block = pool.allocate().value_or(-1);
    LECTOR_CHECK_EQ(block, 0);
    LECTOR_CHECK_EQ(pool.refCount(0), 1);
    LECTOR_CHECK_EQ(pool.refCount(1), 0);
    pool.retain(0);
    LECTOR_CHECK_EQ(pool.refCount(0), 2);
    pool.release(0);
    LECTOR_CHECK_EQ(pool.refCount(0), 1);
    LECTOR_CHECK_EQ(pool.numFree(), 1);  // still held by the other owner
    pool.release(0);
    LECTOR_CHECK_EQ(pool.refCount(0), 0);
    LECTOR_CHECK_EQ(pool.numFree(), 2);
    // Back of the queue: [1, 0].
    LECTOR_CHECK_EQ(pool.allocate().value_or(-1), 1);
}

// --- BlockTable ---

LECTOR_TEST(tableReserveIsAllOrNothing)
{
    kv::BlockPool pool(5, 4);
    kv::BlockTable a;
    LECTOR_CHECK_EQ(a.blocksNeeded(10, 4), 3);  // ceil(10 / 4)
    LECTOR_CHECK(a.reserve(pool, 10));
    LECTOR_CHECK_EQ(join(a.blocks()), std::string("0,1,2"));
    LECTOR_CHECK_EQ(a.capacity(4), std::int64_t{12});
    LECTOR_CHECK_EQ(a.blocksNeeded(12, 4), 0);
    LECTOR_CHECK_EQ(a.blocksNeeded(13, 4), 1);
    LECTOR_CHECK(a.reserve(pool, 12));  // fits already: nothing taken
    LECTOR_CHECK_EQ(pool.numFree(), 2);

    kv::BlockTable b;
    // 12 tokens need 3 blocks, only 2 are free: refused, and neither block is taken.
    LECTOR_CHECK(!b.reserve(pool, 12));
    LECTOR_CHECK(b.blocks().empty());
    LECTOR_CHECK_EQ(pool.numFree(), 2);
    LECTOR_CHECK(!a.reserve(pool, 21));  // 6 blocks, has 3, 2 free
    LECTOR_CHECK_EQ(a.blocks().size(), std::size_t{3});
    LECTOR_CHECK(b.reserve(pool, 8));
    LECTOR_CHECK_EQ(join(b.blocks()), std::string("3,4"));
    LECTOR_CHECK_EQ(pool.numFree(), 0);

    a.releaseAll(pool);
    LECTOR_CHECK(a.blocks().empty());
    LECTOR_CHECK_EQ(pool.numFree(), 3);
    b.releaseAll(pool);
    LECTOR_CHECK_EQ(pool.numFree(), 5);
}

LECTOR_TEST(tableSlotsFollowShuffledBlockIds)
{
    kv::BlockPool pool(6, 4);
    for (int i = 0; i < 6; ++i) (void)pool.allocate();
    pool.release(4);
    pool.release(1);
    pool.release(5);  // free queue [4, 1, 5]
    kv::BlockTable t;
    LECTOR_CHECK(t.reserve(pool, 10));
    LECTOR_CHECK_EQ(join(t.blocks()), std::string("4,1,5"));
    // token -> blocks[token / 4] * 4 + token % 4
    LECTOR_CHECK_EQ(t.slot(0, 4), std::int64_t{16});
    LECTOR_CHECK_EQ(t.slot(3, 4), std::int64_t{19});
    LECTOR_CHECK_EQ(t.slot(4, 4), std::int64_t{4});
    LECTOR_CHECK_EQ(t.slot(7, 4), std::int64_t{7});
    LECTOR_CHECK_EQ(t.slot(8, 4), std::int64_t{20});
    LECTOR_CHECK_EQ(t.slot(11, 4), std::int64_t{23});  // within capacity 12, past the 10 reserved tokens
}

// --- Scheduler: admission ---

LECTOR_TEST(addRejectsPromptsTheWholePoolCannotHold)
{
    Scheduler s(kConfig32, 4, 16);  // 64 token slots
    const Result<void> tooLong = s.add(spec(1, 70, 5));
    LECTOR_CHECK(!tooLong.ok());
    LECTOR_CHECK_EQ(tooLong.error().code, std::string("prompt_too_long"));
    LECTOR_CHECK_MSG(tooLong.error().message.find("70") != std::string::npos, tooLong.error().message);
    LECTOR_CHECK_MSG(tooLong.error().message.find("64") != std::string::npos, tooLong.error().message);
    // 64 + 1 slots (the first generated token) > 64.
    const Result<void> exact = s.add(spec(2, 64, 5));
    LECTOR_CHECK(!exact.ok());
    LECTOR_CHECK_EQ(exact.error().code, std::string("prompt_too_long"));
    LECTOR_CHECK(s.add(spec(3, 63, 5)).ok());
    LECTOR_CHECK_EQ(s.add(spec(3, 10, 5)).error().code, std::string("bad_request"));  // duplicate
    LECTOR_CHECK_EQ(s.add(spec(4, 0, 5)).error().code, std::string("bad_request"));
    LECTOR_CHECK_EQ(s.numWaiting(), 1);
    LECTOR_CHECK(s.hasWork());
}

// --- Scheduler: chunking and ordering ---

LECTOR_TEST(chunkedPrefillRespectsTokenBudget)
{
    Scheduler s(kConfig32, 16, 16);
    LECTOR_CHECK(s.add(spec(1, 100, 3)).ok());

    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+32"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), join(range(0, 32)));
    LECTOR_CHECK_EQ(s.pool().numUsed(), 2);
    s.completeStep({});
    LECTOR_CHECK_EQ(s.computedTokens(1), std::int64_t{32});

    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:32+32"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), join(range(32, 32)));
    LECTOR_CHECK_EQ(s.pool().numUsed(), 4);
    s.completeStep({});

    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:64+32"));
    LECTOR_CHECK_EQ(s.pool().numUsed(), 6);
    s.completeStep({});

    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:96+4*"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), std::string("96,97,98,99"));
    LECTOR_CHECK_EQ(s.pool().numUsed(), 7);  // ceil(100 / 16)
    LECTOR_CHECK_EQ(s.numWaiting(), 1);
    s.completeStep({sampled(1)});
    LECTOR_CHECK_EQ(s.numWaiting(), 0);
    LECTOR_CHECK_EQ(s.numRunning(), 1);
    LECTOR_CHECK_EQ(s.computedTokens(1), std::int64_t{100});

    p = s.schedule();  // the first sampled token (index 100) is the decode's input
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d100"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), std::string("100"));
    LECTOR_CHECK_EQ(s.pool().numUsed(), 7);  // 101 tokens still fit 7 blocks
    // The whole context's slots, as the runner reads them: blocks 0..6 in order.
    LECTOR_CHECK_EQ(join(s.slots(1, 101)), join(range(0, 101)));
    LECTOR_CHECK(s.slots(99, 1).empty());
}

LECTOR_TEST(decodesComeFirstAndCountAgainstTheBudget)
{
    Scheduler s(kConfig32, 16, 16);
    LECTOR_CHECK(s.add(spec(1, 10, 9)).ok());
    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+10*"));
    s.completeStep({sampled(1)});

    LECTOR_CHECK(s.add(spec(2, 50, 9)).ok());
    p = s.schedule();
    // 1 decode token leaves 31 for the prefill. Seq 1 has block 0, seq 2 gets blocks 1 and 2 (slots 16..46).
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d10 2:0+31"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), std::string("10"));
    LECTOR_CHECK_EQ(join(p.chunks[1].slots), join(range(16, 31)));
    s.completeStep({sampled(1)});

    p = s.schedule();
    // Tokens 31..49 of seq 2: 31 in block 2 (slot 47), 32..47 in block 3 (48..63), 48..49 in block 4 (64, 65).
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d11 2:31+19*"));
    LECTOR_CHECK_EQ(join(p.chunks[1].slots), join(range(47, 19)));
    s.completeStep({sampled(1), sampled(2)});

    p = s.schedule();
    // Token 50 of seq 2: block index 3 -> block 4, slot 64 + 2.
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d12 2:d50"));
    LECTOR_CHECK_EQ(join(p.chunks[1].slots), std::string("66"));
}

LECTOR_TEST(maxSeqsPerStepLimitsChunks)
{
    Scheduler s(SchedulerConfig{2048, 2, 8}, 16, 16);
    for (SeqId id = 1; id <= 3; ++id) LECTOR_CHECK(s.add(spec(id, 5, 9)).ok());
    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+5* 2:0+5*"));
    s.completeStep({sampled(1), sampled(2)});
    p = s.schedule();  // two decodes fill the step; seq 3 waits
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d5 2:d5"));
    s.completeStep({sampled(1, true), sampled(2)});
    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("2:d6 3:0+5*"));
}

// --- Scheduler: vision ---

LECTOR_TEST(visionRunsFirstAtMostMaxImagesPerStep)
{
    Scheduler s(SchedulerConfig{2048, 256, 2}, 64, 16);
    for (SeqId id = 1; id <= 5; ++id) LECTOR_CHECK(s.add(spec(id, 20, 50, true)).ok());
    LECTOR_CHECK(s.add(spec(6, 20, 50, false)).ok());

    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(join(p.vision), std::string("1,2"));
    LECTOR_CHECK_EQ(chunks(p), std::string("6:0+20*"));  // text-only: no vision to wait for
    s.completeStep({sampled(6)});                          // visionDone withheld: the images are still running

    p = s.schedule();
    LECTOR_CHECK_EQ(join(p.vision), std::string("3,4"));
    LECTOR_CHECK_EQ(chunks(p), std::string("6:d20"));
    s.completeStep({sampled(6)});

    s.visionDone({2});
    p = s.schedule();
    LECTOR_CHECK_EQ(join(p.vision), std::string("5"));
    LECTOR_CHECK_EQ(chunks(p), std::string("6:d21 2:0+20*"));  // seq 1 is older but its vision is not done
    s.completeStep({sampled(6), sampled(2)});

    p = s.schedule();
    LECTOR_CHECK(p.vision.empty());  // every image scheduled once
    LECTOR_CHECK_EQ(chunks(p), std::string("6:d22 2:d20"));
    s.completeStep({sampled(6), sampled(2)});

    s.visionDone({1, 3, 4, 5});
    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("6:d23 2:d21 1:0+20* 3:0+20* 4:0+20* 5:0+20*"));
}

LECTOR_TEST(sequenceWithoutVisionDoneIsNeverPrefilled)
{
    Scheduler s(kConfig32, 16, 16);
    LECTOR_CHECK(s.add(spec(1, 20, 5, true)).ok());
    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(join(p.vision), std::string("1"));
    LECTOR_CHECK(p.chunks.empty());
    s.completeStep({});
    for (int step = 0; step < 3; ++step) {
        p = s.schedule();
        LECTOR_CHECK(p.empty());
        LECTOR_CHECK_EQ(s.pool().numUsed(), 0);
        s.completeStep({});
    }
    s.visionDone({1});
    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+20*"));
}

// --- Scheduler: preemption, cancel, out of memory ---

LECTOR_TEST(preemptionRecomputesPromptAndGeneratedTokens)
{
    Scheduler s(SchedulerConfig{2048, 256, 8}, 4, 4);  // 16 slots
    LECTOR_CHECK(s.add(spec(1, 7, 4)).ok());
    LECTOR_CHECK(s.add(spec(2, 7, 3)).ok());

    StepPlan p = s.schedule();  // 1 takes blocks 0,1; 2 takes blocks 2,3
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+7* 2:0+7*"));
    LECTOR_CHECK_EQ(join(p.chunks[1].slots), join(range(8, 7)));
    LECTOR_CHECK_EQ(s.pool().numFree(), 0);
    s.completeStep({sampled(1), sampled(2)});

    p = s.schedule();  // token 7 still fits each second block
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d7 2:d7"));
    LECTOR_CHECK_EQ(join(p.chunks[1].slots), std::string("15"));
    s.completeStep({sampled(1), sampled(2)});

    p = s.schedule();  // 1 needs a third block: 2 (admitted last) is preempted, 1 gets block 2
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d8"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), std::string("8"));
    LECTOR_CHECK_EQ(join(p.preempted), std::string("2"));
    LECTOR_CHECK_EQ(s.numPreemptions(), 1);
    LECTOR_CHECK_EQ(s.computedTokens(2), std::int64_t{0});
    LECTOR_CHECK_EQ(s.numRunning(), 1);
    LECTOR_CHECK_EQ(s.numWaiting(), 1);
    LECTOR_CHECK_EQ(s.pool().numFree(), 1);
    s.completeStep({sampled(1)});

    p = s.schedule();  // 2 must recompute 7 + 2 = 9 tokens (3 blocks); 1 block free: it waits
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d9"));
    LECTOR_CHECK(p.preempted.empty());
    s.completeStep({sampled(1, true)});  // 1 reaches 4 tokens; blocks 0,1,2 go back: queue [3,0,1,2]
    LECTOR_CHECK_EQ(s.pool().numFree(), 4);

    p = s.schedule();  // prompt + both generated tokens as one prefill, on blocks 3,0,1
    LECTOR_CHECK_EQ(chunks(p), std::string("2:0+9*"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), std::string("12,13,14,15,0,1,2,3,4"));
    s.completeStep({sampled(2, true)});  // its third token
    LECTOR_CHECK(!s.hasWork());
    LECTOR_CHECK_EQ(s.pool().numFree(), 4);
}

LECTOR_TEST(preemptedRunningSequenceRunsVisionAgain)
{
    Scheduler s(SchedulerConfig{2048, 256, 8}, 4, 4);
    LECTOR_CHECK(s.add(spec(1, 7, 9)).ok());
    LECTOR_CHECK(s.add(spec(2, 7, 9, true)).ok());
    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(join(p.vision), std::string("2"));
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+7*"));
    s.visionDone(p.vision);
    s.completeStep({sampled(1)});

    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d7 2:0+7*"));
    s.completeStep({sampled(1), sampled(2)});

    // The backend dropped 2's image features when its prefill completed; the recompute needs them again.
    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d8"));
    LECTOR_CHECK_EQ(join(p.preempted), std::string("2"));
    LECTOR_CHECK_EQ(join(p.vision), std::string("2"));
}

LECTOR_TEST(readySequenceAheadEvictsPartialPrefillBehindIt)
{
    Scheduler s(SchedulerConfig{8, 256, 8}, 4, 4);  // 16 slots, 8 tokens a step
    LECTOR_CHECK(s.add(spec(1, 12, 9, true)).ok());
    LECTOR_CHECK(s.add(spec(2, 14, 9)).ok());

    StepPlan p = s.schedule();  // 1 waits for vision; 2 starts on blocks 0,1
    LECTOR_CHECK_EQ(join(p.vision), std::string("1"));
    LECTOR_CHECK_EQ(chunks(p), std::string("2:0+8"));
    s.completeStep({});
    s.visionDone({1});

    p = s.schedule();  // 1 is first in the queue again: blocks 2,3, whole budget
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+8"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), join(range(8, 8)));
    s.completeStep({});

    p = s.schedule();  // 1 needs a third block: 2's partial prefill gives back 0,1; 1 takes 0
    LECTOR_CHECK_EQ(chunks(p), std::string("1:8+4*"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), std::string("0,1,2,3"));
    LECTOR_CHECK_EQ(join(p.preempted), std::string("2"));
    LECTOR_CHECK_EQ(s.computedTokens(2), std::int64_t{0});
    LECTOR_CHECK_EQ(s.pool().numFree(), 1);
    s.completeStep({sampled(1)});

    p = s.schedule();  // 1 decodes on block 1 (slot 4); 2 needs 2 blocks for 7 tokens, none left
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d12"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), std::string("4"));
}

LECTOR_TEST(decodeEvictsPartialPrefillBeforeRunningSequences)
{
    Scheduler s(SchedulerConfig{8, 256, 8}, 4, 4);
    LECTOR_CHECK(s.add(spec(1, 7, 9)).ok());
    LECTOR_CHECK(s.add(spec(2, 12, 9)).ok());
    StepPlan p = s.schedule();  // 1 on blocks 0,1; the last budget token starts 2 on block 2
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+7* 2:0+1"));
    s.completeStep({sampled(1)});
    p = s.schedule();  // 2 grows to 8 tokens: block 3
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d7 2:1+7"));
    s.completeStep({sampled(1)});
    p = s.schedule();  // 1 needs a block: the partial prefill goes, and no prefill runs this step
    LECTOR_CHECK_EQ(chunks(p), std::string("1:d8"));
    LECTOR_CHECK_EQ(join(p.chunks[0].slots), std::string("8"));
    LECTOR_CHECK_EQ(join(p.preempted), std::string("2"));
    LECTOR_CHECK_EQ(s.numRunning(), 1);
    LECTOR_CHECK_EQ(s.numWaiting(), 1);
}

LECTOR_TEST(cancelFreesBlocksAtOnce)
{
    Scheduler s(kConfig32, 8, 16);
    LECTOR_CHECK(s.add(spec(1, 40, 5)).ok());
    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+32"));
    LECTOR_CHECK_EQ(s.pool().numFree(), 6);
    s.cancel(1);  // between schedule() and completeStep()
    LECTOR_CHECK_EQ(s.pool().numFree(), 8);
    LECTOR_CHECK(!s.hasWork());
    LECTOR_CHECK_EQ(s.computedTokens(1), std::int64_t{-1});
    s.completeStep({sampled(1)});  // stale outcome: ignored
    s.cancel(99);                  // unknown: ignored

    LECTOR_CHECK(s.add(spec(1, 10, 5)).ok());  // the id is free again and starts from scratch
    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+10*"));
    s.completeStep({sampled(1)});
    LECTOR_CHECK_EQ(s.numRunning(), 1);
    LECTOR_CHECK_EQ(s.pool().numFree(), 7);
    s.cancel(1);
    LECTOR_CHECK_EQ(s.numRunning(), 0);
    LECTOR_CHECK_EQ(s.pool().numFree(), 8);
    LECTOR_CHECK(s.schedule().empty());
}

LECTOR_TEST(loneSequenceOutgrowingPoolIsOutOfMemory)
{
    Scheduler s(SchedulerConfig{2048, 256, 8}, 4, 16);  // 64 slots
    LECTOR_CHECK(s.add(spec(1, 60, 100)).ok());
    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+60*"));
    s.completeStep({sampled(1)});
    for (int k = 60; k < 64; ++k) {  // decodes of tokens 60..63 fill the last block
        p = s.schedule();
        LECTOR_CHECK_EQ(chunks(p), "1:d" + std::to_string(k));
        LECTOR_CHECK(p.outOfMemory.empty());
        s.completeStep({sampled(1)});
    }
    p = s.schedule();  // token 64 needs a fifth block
    LECTOR_CHECK(p.chunks.empty());
    LECTOR_CHECK_EQ(join(p.outOfMemory), std::string("1"));
    LECTOR_CHECK(!p.empty());
    LECTOR_CHECK(!s.hasWork());
    LECTOR_CHECK_EQ(s.pool().numFree(), 4);
    LECTOR_CHECK_EQ(s.numPreemptions(), 0);
}

LECTOR_TEST(backendThatSkipsASampleGetsTheTokenAgain)
{
    Scheduler s(kConfig32, 16, 16);
    LECTOR_CHECK(s.add(spec(1, 10, 5)).ok());
    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+10*"));
    s.completeStep({});  // no outcome for a chunk that should have sampled
    p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:9+1*"));
}

// Decode graphs of several steps: the backend reserves a lone sequence's next slots first, then runs the
// steps' schedule() / completeStep() rounds, which find their slots in the blocks reserved.
LECTOR_TEST(reserveAheadTakesFreeBlocksOnlyForARunningSequence)
{
    Scheduler s(SchedulerConfig{2048, 256, 8}, 6, 16);  // 96 slots
    LECTOR_CHECK(s.add(spec(1, 30, 100)).ok());
    LECTOR_CHECK(s.add(spec(2, 20, 100)).ok());
    LECTOR_CHECK(!s.reserveAhead(1, 40));  // still waiting: not running
    StepPlan p = s.schedule();
    LECTOR_CHECK_EQ(chunks(p), std::string("1:0+30* 2:0+20*"));
    s.completeStep({sampled(1), sampled(2)});
    // 1 holds blocks 0-1 (tokens 0..31), 2 holds blocks 2-3 (0..31): two of six free.
    LECTOR_CHECK_EQ(s.pool().numFree(), 2);
    LECTOR_CHECK(!s.reserveAhead(1, 30 + 50));  // tokens to 79: three more blocks, two free
    LECTOR_CHECK_EQ(s.pool().numFree(), 2);     // nothing taken, nobody preempted
    LECTOR_CHECK_EQ(s.numPreemptions(), 0);
    LECTOR_CHECK(s.reserveAhead(1, 30 + 8));    // tokens 30..37: one more block
    LECTOR_CHECK_EQ(s.pool().numFree(), 1);
    LECTOR_CHECK_EQ(static_cast<std::int64_t>(s.blocks(1).size()), std::int64_t{3});
    s.cancel(2);
    // Eight rounds of one decode each: the slots are the reserved ones, no block is taken.
    for (int k = 0; k < 8; ++k) {
        p = s.schedule();
        LECTOR_CHECK_EQ(chunks(p), "1:d" + std::to_string(30 + k));
        LECTOR_CHECK_EQ(p.chunks[0].slots[0], std::int64_t{(30 + k) / 16 == 1 ? 16 + (30 + k) % 16 : 4 * 16 + (30 + k) % 16});
        s.completeStep({sampled(1)});
    }
    LECTOR_CHECK_EQ(s.pool().numFree(), 3);  // 2's two blocks back, 1's three held
    LECTOR_CHECK(!s.reserveAhead(7, 40));    // unknown
}

// --- Scheduler: simulation ---

namespace {

// What the fake backend knows of one sequence.
struct SimSeq {
    SeqSpec spec;
    int sampled = 0;
    std::int64_t cached = 0;    // tokens whose K/V the backend holds
    bool hasVision = false;     // image features held (from visionDone until the prefill completes)
    bool finished = false;
};

constexpr int kSimSeqs = 20;

SeqSpec simSpec(int i)
{
    // Prompts 30..200, 5..60 new tokens, two thirds with an image.
    return spec(static_cast<SeqId>(i + 1), 30 + (i * 37) % 171, 5 + (i * 13) % 56, i % 3 != 0);
}

void checkPlanLimits(const StepPlan& plan, const SchedulerConfig& config, std::int64_t poolTokens, int step)
{
    LECTOR_CHECK_MSG(plan.outOfMemory.empty(), "step " << step);
    LECTOR_CHECK_MSG(static_cast<int>(plan.vision.size()) <= config.maxImagesPerStep, "step " << step);
    LECTOR_CHECK_MSG(static_cast<int>(plan.chunks.size()) <= config.maxSeqsPerStep, "step " << step);
    std::int64_t tokens = 0;
    bool seenPrefill = false;
    std::set<std::int64_t> slots;
    for (const StepChunk& c : plan.chunks) {
        tokens += c.length;
        LECTOR_CHECK_MSG(!(c.isDecode && seenPrefill), "step " << step << ": decode after a prefill chunk");
        seenPrefill = seenPrefill || !c.isDecode;
        LECTOR_CHECK_EQ(static_cast<std::int64_t>(c.slots.size()), c.length);
        for (std::int64_t slot : c.slots) {
            LECTOR_CHECK(slot >= 0 && slot < poolTokens);
            LECTOR_CHECK_MSG(slots.insert(slot).second, "step " << step << ": slot " << slot << " used twice");
        }
        for (SeqId id : plan.preempted) LECTOR_CHECK_MSG(id != c.id, "step " << step << ": preempted and scheduled");
    }
    LECTOR_CHECK_MSG(tokens <= config.maxTokensPerStep, "step " << step << ": " << tokens << " tokens");
}

// Checks a chunk against the backend's own bookkeeping, advances it, and returns the outcome to report.
SeqOutcome runChunk(const StepChunk& c, SimSeq& q, int step)
{
    const std::int64_t known = q.spec.promptTokens + q.sampled;
    LECTOR_CHECK_MSG(!q.finished, "step " << step << ": seq " << c.id << " scheduled after finishing");
    LECTOR_CHECK_MSG(c.start == q.cached, "step " << step << ": seq " << c.id << " starts at " << c.start << ", cached " << q.cached);
    if (c.isDecode) {
        LECTOR_CHECK_EQ(c.length, std::int64_t{1});
        LECTOR_CHECK(q.sampled >= 1);
        LECTOR_CHECK_EQ(c.start, known - 1);
    } else {
        LECTOR_CHECK(c.start + c.length <= known);
        LECTOR_CHECK_EQ(c.completesPrefill, c.start + c.length == known);
        LECTOR_CHECK_MSG(!q.spec.needsVision || q.hasVision, "step " << step << ": seq " << c.id << " prefilled without vision");
    }
    q.cached = c.start + c.length;
    SeqOutcome outcome{c.id, false, false};
    if (c.isDecode || c.completesPrefill) {
        outcome.sampledToken = true;
        outcome.finished = ++q.sampled == q.spec.maxNewTokens;
        q.finished = outcome.finished;
    }
    if (c.completesPrefill) q.hasVision = false;
    return outcome;
}

}  // namespace

LECTOR_TEST(simulationFinishesEverySequenceThroughPreemption)
{
    const SchedulerConfig config{64, 8, 2};
    const int numBlocks = 20, blockSize = 16;  // 320 slots; the largest sequence needs 200 + 60 - 1
    Scheduler s(config, numBlocks, blockSize);
    std::map<SeqId, SimSeq> seqs;
    int added = 0, preemptions = 0, step = 0;
    for (; step < 20000 && (added < kSimSeqs || s.hasWork()); ++step) {
        // Six at once, then one arrival per step.
        while (added < kSimSeqs && (added < 6 || added < 6 + step)) {
            const SeqSpec sp = simSpec(added++);
            LECTOR_CHECK(s.add(sp).ok());
            seqs[sp.id].spec = sp;
        }
        const StepPlan plan = s.schedule();
        LECTOR_CHECK_MSG(!plan.empty(), "step " << step << ": nothing scheduled while work remains");
        checkPlanLimits(plan, config, std::int64_t{numBlocks} * blockSize, step);
        for (SeqId id : plan.preempted) seqs.at(id).cached = 0;
        preemptions += static_cast<int>(plan.preempted.size());
        std::vector<SeqOutcome> outcomes;
        for (const StepChunk& c : plan.chunks) outcomes.push_back(runChunk(c, seqs.at(c.id), step));
        s.visionDone(plan.vision);  // vision ran first in this step; usable from the next one
        for (SeqId id : plan.vision) seqs.at(id).hasVision = true;
        s.completeStep(outcomes);
    }
    LECTOR_CHECK_MSG(step < 20000, "no end after " << step << " steps");
    LECTOR_CHECK_EQ(static_cast<int>(seqs.size()), kSimSeqs);
    for (const auto& [id, q] : seqs)
        LECTOR_CHECK_MSG(q.finished && q.sampled == q.spec.maxNewTokens,
                         "seq " << id << ": " << q.sampled << " of " << q.spec.maxNewTokens << " tokens");
    LECTOR_CHECK(preemptions >= 1);
    LECTOR_CHECK_EQ(s.numPreemptions(), preemptions);
    LECTOR_CHECK(!s.hasWork());
    LECTOR_CHECK_EQ(s.pool().numFree(), numBlocks);
}
