// Next-token choice on the device: repetition penalty over a per-sequence
// token-presence mask (HF semantics: a present token's logit l becomes l / penalty if l > 0, else
// l * penalty), then greedy argmax or top-k sampling at a temperature. Optionally marks the chosen
// token present, so the mask stays current without a host round trip. Engine thread, once per step.
//
// A sequence's argmax is split over `slices` CTAs, each over one stretch of the vocabulary: one CTA
// streaming 120818 logits waits on L2 about 30 times in a row (~30 us of each token at batch 1 on an
// H200). Each CTA leaves its best in the scratch; the last of the sequence's CTAs to finish (a ticket
// per sequence, returned to zero by that CTA) reduces them and, for top-k, samples over the whole
// vocabulary alone. sampleTokensSlices() picks the split from the batch size.
//
// Top-k picks exactly k tokens: all whose penalized logit is above the k-th largest, then ties at
// the k-th value in vocabulary order. The draw u in [0, 1) comes from uniformDraw(seed, offset), a
// counter-based hash that host and device compute bit-identically, and selects the first token (in
// vocabulary order) whose cumulative weight exp((l - lmax) / T) exceeds u * total.
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

// Optional, for decode steps replayed back to back from one CUDA graph (core/runner/model_runner.h):
// once sequence s's token is chosen, its inputs for its next decode step are made ready on the device,
// the way the host would have written them: the token is also stored in history[s]; the context length,
// every position axis and the draw counter move on by one; the next token's cache slot comes from s's
// block table (-1 where the table has no block for it: the next step writes no K/V). A row whose slot is
// negative (a graph's padding row: one key of block 0, nothing written) keeps its inputs. Every pointer
// but history is required when contextLens is set.
struct DecodeAdvance {
    int32_t* contextLens = nullptr;       // [numSeqs]: keys the step attended (its own included); +1
    int64_t* positions = nullptr;         // [numPosAxes][positionsAxisStride]; every axis +1
    int64_t positionsAxisStride = 0;
    int numPosAxes = 0;
    int64_t* slots = nullptr;             // [numSeqs]: the next step's cache slot
    const int32_t* blockTable = nullptr;  // [numSeqs][blockTableStride] block ids
    int64_t blockTableStride = 0;         // entries a row holds (the table's width)
    int64_t* offsets = nullptr;           // [numSeqs] draw counters (the params' offsets); +1
    int64_t* history = nullptr;           // [numSeqs] or nullptr: this step's tokens, kept
};

// Whether `a` is set (contextLens) but cannot serve numSeqs sequences: the launchers refuse it.
inline bool decodeAdvanceMalformed(const DecodeAdvance& a, int numSeqs)
{
    return a.contextLens && (!a.positions || !a.slots || !a.blockTable || !a.offsets || a.numPosAxes < 0 ||
                             a.blockTableStride < 1 || (a.numPosAxes > 0 && a.positionsAxisStride < numSeqs));
}

// Sequence s's inputs after it drew `token` (DecodeAdvance). The kernel and the CPU reference both call it.
LECTOR_HD inline void advanceDecodeRow(const DecodeAdvance& a, int s, int64_t token)
{
    if (a.history) a.history[s] = token;
    if (a.slots[s] < 0) return;
    const int32_t next = a.contextLens[s];  // the sequence index of the token just drawn
    a.contextLens[s] = next + 1;
    for (int axis = 0; axis < a.numPosAxes; ++axis) a.positions[axis * a.positionsAxisStride + s] += 1;
    const int64_t entry = next / kKvBlockSize;
    const int32_t block = entry < a.blockTableStride ? a.blockTable[s * a.blockTableStride + entry] : -1;
    a.slots[s] = block < 0 ? -1 : int64_t(block) * kKvBlockSize + next % kKvBlockSize;
    a.offsets[s] += 1;
}

struct SampleTokensParams {
    DType dtype = DType::F32;             // of logits
    const void* logits = nullptr;         // [numSeqs, vocabSize], logitsStride
    uint8_t* presence = nullptr;          // [numSeqs, vocabSize] 0/1, presenceStride; nullptr = no penalty
    const int64_t* presenceRows = nullptr;  // [numSeqs]: sequence s uses presence row presenceRows[s] (distinct
                                            // rows); nullptr: row s
    const float* temperature = nullptr;   // [numSeqs]; <= 0 means greedy
    const int32_t* topK = nullptr;        // [numSeqs]; 1 means greedy, <= 0 or >= vocabSize the whole vocabulary
    const float* repetitionPenalty = nullptr;  // [numSeqs] (> 0); 1 means none; nullptr = none
    const int64_t* seeds = nullptr;       // [numSeqs] per-request seed
    const int64_t* offsets = nullptr;     // [numSeqs] per-request draw counter (tokens sampled so far)
    int64_t* outTokens = nullptr;         // [numSeqs]
    int64_t logitsStride = 0;             // elements
    int64_t presenceStride = 0;
    int numSeqs = 0;
    int vocabSize = 0;
    bool updatePresence = false;          // set presence[s][token] = 1 after choosing
    // CTAs per sequence (>= 1). Above 1, scratch holds sampleTokensScratchWords(numSeqs, vocabSize)
    // words: per sequence a ticket, zero before the launch and again after it, then the slices' results.
    // The tickets sit at fixed places whatever numSeqs and slices are, so one zeroed scratch serves every
    // launch over this vocabulary.
    int slices = 1;
    unsigned long long* scratch = nullptr;
    DecodeAdvance advance;                // contextLens == nullptr: none
};

// Tokens per CTA pass of the sampling kernel (512 threads x 8) and CTAs aimed for across the GPU (two
// per multiprocessor of an H100/H200); a slice is a whole number of passes.
constexpr int kSampleChunkTokens = 4096;
constexpr int kSampleTargetCtas = 264;

// Passes over a vocabulary, and the passes of each slice when it is split `slices` ways (the last slice
// takes what is left). The kernel, its launcher and the split below all use these two.
LECTOR_HD inline int sampleTokensPasses(int vocabSize)
{
    return (vocabSize + kSampleChunkTokens - 1) / kSampleChunkTokens;
}

LECTOR_HD inline int sampleTokensPassesPerSlice(int vocabSize, int slices)
{
    return (sampleTokensPasses(vocabSize) + slices - 1) / slices;
}

LECTOR_HD inline int sampleTokensSlices(int numSeqs, int vocabSize)
{
    if (numSeqs <= 0 || vocabSize <= 0) return 1;
    const int passes = sampleTokensPasses(vocabSize);
    const int wanted = (kSampleTargetCtas + numSeqs - 1) / numSeqs;
    const int slices = wanted < passes ? wanted : passes;
    if (slices <= 1) return 1;
    // Whole passes per slice; drop slices the rounding left empty.
    const int perSlice = sampleTokensPassesPerSlice(vocabSize, slices);
    return (passes + perSlice - 1) / perSlice;
}

// Scratch words per sequence: its ticket, then room for the most slices this vocabulary can have.
LECTOR_HD inline int sampleTokensScratchStride(int vocabSize)
{
    return 1 + sampleTokensPasses(vocabSize);
}

// Scratch words of a launch over numSeqs sequences ([numSeqs, stride]); 0 when it does not split.
LECTOR_HD inline int64_t sampleTokensScratchWords(int numSeqs, int vocabSize)
{
    return sampleTokensSlices(numSeqs, vocabSize) > 1 ? int64_t(numSeqs) * sampleTokensScratchStride(vocabSize) : 0;
}

// splitmix64 finaliser.
LECTOR_HD inline uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// A uniform draw in [0, 1) with 24 random bits; exact in float32 on host and device.
LECTOR_HD inline float uniformDraw(int64_t seed, int64_t offset)
{
    const uint64_t h = mix64(static_cast<uint64_t>(seed) ^ mix64(static_cast<uint64_t>(offset)));
    return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

// Order-preserving unsigned key of a float (larger float -> larger key); NaN sorts below -inf.
LECTOR_HD inline uint32_t orderedKey(float f)
{
    if (f != f) return 0u;
    uint32_t bits = 0;
#ifdef __CUDA_ARCH__
    bits = __float_as_uint(f);
#else
    __builtin_memcpy(&bits, &f, sizeof bits);
#endif
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

LECTOR_HD inline float penalizedLogit(float logit, bool present, float penalty)
{
    if (!present) return logit;
    return logit > 0.0f ? logit / penalty : logit * penalty;
}

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
cudaError_t launchSampleTokens(const SampleTokensParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
