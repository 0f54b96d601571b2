// Greedy choice of one sequence's next token without streaming its whole LM head: an exact argmax of the
// penalized logits, screened through an 8-bit copy of the head.
//
// Why: at batch 1 the LM head (HunyuanOCR: 120818 x 1024 float16, 247 MB) is ~10 % of a decode step's
// bytes, and the sampler after it reads its 120818 logits again. A greedy draw only needs to know which
// row wins. Each row r of the head keeps q[r] = rint(w[r] / s[r]) in [-127, 127], s[r] = max |w[r]| / 127
// (quantizeGreedyScreen in gpu/ops.h; 124 MB), and the input row x is quantized per step to 15 bits:
// xi = rint(x / sx), sx = max |x| / kScreenXLevels, split into two int8 halves for dp4a. Then
//
//   approx[r] = s[r] sx sum_i q[r][i] xi[i]      |exact[r] - approx[r]| <= s[r] * screenBound(x)
//
// where exact[r] is the float32 dot of the head's own row with x, in any summation order: the weight's
// rounding error is at most s/2 per element, x's at most sx/2, and screenBound adds float32's own
// accumulation error (gamma_k) on top (the derivation: docs/serving.md, "the greedy screen"). The penalty (sample_tokens.cuh: l / p above 0, l p below) is monotone in l, so each row's
// penalized logit lies in [pen(approx - B), pen(approx + B)] (a NaN bound: anywhere). The winner's upper
// end is at least every row's lower end; so only rows whose upper end reaches the largest lower end
// known can win. Those few rows get their exact logits from the float16 head, and the best of them (ties
// to the lower id, NaN lowest: the sampler's order) is the token: the same token as the sampler's argmax
// over the full logits, up to float32 summation order at an exact tie.
//
// The kernel: CTAs own contiguous stretches of rows. Each streams its q rows (issued before the PDL wait:
// the weights do not depend on the step), takes every row's bounds, the largest lower end of its own
// rows and of the CTAs before it (one atomic max, which only ever holds some row's lower end, so any value
// read from it is a valid threshold), recomputes its candidates exactly, and leaves its best in the
// scratch; the last CTA to finish (a ticket) reduces them, writes the token, marks it present and moves the
// step's inputs on (DecodeAdvance) like the sampler does. Engine thread, once per greedy batch-1 step.
#pragma once

#include <cmath>

#include "gpu/kernels/sample_tokens.cuh"

namespace lector::gpu {

// Levels of x's quantization on each side of zero: xi = 128 hi + lo, lo in [-64, 63], hi in [-126, 126].
constexpr int kScreenXLevels = 16000;
// Widest input row the CUDA kernel takes (elements; a multiple of 16): two 16-byte chunks of q a lane.
constexpr int kScreenMaxK = 1024;

struct GreedyScreenParams {
    DType dtype = DType::F16;           // of x and weight
    const void* x = nullptr;            // [k]: the LM head's input row (after the final norm)
    const void* weight = nullptr;       // [vocab, k] at weightStride: the LM head
    int64_t weightStride = 0;           // elements
    const int8_t* q = nullptr;          // [vocab, k] contiguous: the head's 8-bit copy
    const float* scales = nullptr;      // [vocab]
    int vocab = 0;
    int k = 0;                          // a multiple of 16
    uint8_t* presence = nullptr;        // [rows, vocab] 0/1 at presenceStride; nullptr = no penalty
    const int64_t* presenceRow = nullptr;  // [1]: the sequence's row (nullptr: row 0)
    int64_t presenceStride = 0;
    const float* penalty = nullptr;     // [1] (> 0); nullptr = 1
    int64_t* outToken = nullptr;        // [1]
    bool updatePresence = false;        // set presence[token] = 1 after choosing
    int numCtas = 1;                    // contiguous stretches of ceil(vocab / numCtas) rows
    // greedyScreenScratchWords(numCtas) int64 words, zero before the launch and left zero after it:
    // the ticket, the largest lower end, then one best per CTA.
    unsigned long long* scratch = nullptr;
    // Benchmarks and tests, optional: [0] += rows recomputed exactly, [1] += launches.
    unsigned long long* stats = nullptr;
    DecodeAdvance advance;              // contextLens == nullptr: none
};

LECTOR_HD inline int64_t greedyScreenScratchWords(int numCtas) { return 2 + int64_t(numCtas); }

// CTAs of a launch over `vocab` rows on a device of `sms` multiprocessors: two a multiprocessor, each at
// least 32 rows (one round of its 8 warps' 4 rows).
LECTOR_HD inline int greedyScreenCtas(int vocab, int sms)
{
    const int byRows = (vocab + 31) / 32;
    const int want = 2 * (sms > 0 ? sms : 1);
    return byRows < 1 ? 1 : byRows < want ? byRows : want;
}

// sx for a row whose largest magnitude is amax (0 for a zero row).
LECTOR_HD inline float screenXScale(float amax) { return amax > 0.0f ? amax / float(kScreenXLevels) : 0.0f; }

// xi = rint(x / sx), clamped (x beyond amax only through rounding; NaN bounds make every row a candidate).
LECTOR_HD inline int screenXLevel(float x, float sx)
{
    if (!(sx > 0.0f)) return 0;
    float v = rintf(x / sx);
    v = v > float(kScreenXLevels) ? float(kScreenXLevels) : v;
    v = v < -float(kScreenXLevels) ? -float(kScreenXLevels) : v;
    return v == v ? int(v) : 0;
}

// xi = 128 hi + lo with lo in [-64, 63] (arithmetic shift: C++20 and CUDA).
LECTOR_HD inline void screenXSplit(int xi, int& hi, int& lo)
{
    hi = (xi + 64) >> 7;
    lo = xi - 128 * hi;
}

// The bound of |exact - approx| for a row of scale 1: half a step of the weight's grid over |x|, half of
// x's over |q| <= 127 per element, both widened by a float32 sum of k terms (gamma_k < 6e-8 k relative to
// sum |w x| <= 127.5 s |x|_1, i.e. < 1.6e-5 k of the first term) and a margin for the bound's own rounding.
// xAbsSum: sum |x| in float32 (its own rounding is inside the same margin).
LECTOR_HD inline float screenBound(float xAbsSum, float sx, int k)
{
    return 0.5f * (xAbsSum + sx * 127.0f * float(k)) * (1.002f + 2e-5f * float(k));
}

// A row's penalized range from its approximate logit and bound (scale included). NaN anywhere: the whole line.
LECTOR_HD inline void screenRange(float approx, float bound, bool present, float penalty, float& lower, float& upper)
{
    const float lo = approx - bound, hi = approx + bound;
    if (!(lo == lo) || !(hi == hi)) {
        lower = -INFINITY;
        upper = INFINITY;
        return;
    }
    lower = penalizedLogit(lo, present, penalty);
    upper = penalizedLogit(hi, present, penalty);
}

// Inverse of orderedKey for keys of non-NaN floats (key > 0).
LECTOR_HD inline float orderedKeyValue(uint32_t key)
{
    const uint32_t bits = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
    float f;
#ifdef __CUDA_ARCH__
    f = __uint_as_float(bits);
#else
    __builtin_memcpy(&f, &bits, sizeof f);
#endif
    return f;
}

// (key << 32) | ~index: the larger key wins and, among equal keys, the lower index (sample_tokens.cu's order).
LECTOR_HD inline unsigned long long screenCandidateKey(float penalized, int index)
{
    return (static_cast<unsigned long long>(orderedKey(penalized)) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(index));
}

LECTOR_HD inline int64_t screenTokenOf(unsigned long long best)
{
    return best == 0 ? 0 : static_cast<int64_t>(static_cast<uint32_t>(~static_cast<uint32_t>(best & 0xffffffffull)));
}

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// Asynchronous on `stream`; p.numCtas from greedyScreenCtas. Rejects k not a multiple of 16 or above
// kScreenMaxK, and unaligned q / weight rows.
cudaError_t launchGreedyScreen(const GreedyScreenParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
