// Tensor-level entry points of gpu/: the only gpu/ header core includes (core/runner, engine thread
// only). Each function checks dtype, device, shape and strides with TORCH_CHECK (the message lists
// what is supported), then runs the CUDA kernel on the current stream of the tensors' device, or the
// scalar reference of gpu/ref for CPU tensors (slow; for tests and tiny models). A failed launch is a
// TORCH_CHECK failure too. All calls are asynchronous on CUDA; none allocates except the split-K
// workspace of the attention ops (from the caching allocator, so CUDA-graph capture works) and, once
// per device, their zeroed split-K ticket counters (kept for the process; grown only outside capture).
// Kernels launch with programmatic dependent launch on sm_90+ (gpu/kernels/common.cuh).
//
// Conventions: outputs come first and are written in place (they are handles, hence const&);
// float tensors are float32, float16 or bfloat16 and all share one dtype per call; the innermost
// dimension is contiguous. Paged KV cache: [numBlocks, kKvBlockSize=16, numKvHeads, headDim],
// contiguous; block table [numSeqs, maxBlocksPerSeq] int32.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <string>
#include <vector>

#include "gpu/kernels/greedy_screen.cuh"
#include "gpu/kernels/paged_prefill_attention.cuh"
#include "gpu/kernels/head_parallel_decode.cuh"
#include "gpu/kernels/persistent_decode.cuh"
#include "gpu/kernels/skinny_gemm.cuh"
#include "gpu/kernels/vision_attention.cuh"

namespace lector::gpu {

// --- KV cache ---

// keyCache/valueCache[slot] = key/value[token] for slot = slotMapping[token] >= 0.
// key, value: [numTokens, numKvHeads, headDim] (any token/head strides); slotMapping: [numTokens] int64.
void writeKvCache(const at::Tensor& keyCache, const at::Tensor& valueCache, const at::Tensor& key,
                  const at::Tensor& value, const at::Tensor& slotMapping);

// --- attention ---

// Split-K partition size for paged attention over numRows query rows (sequences for decode, tokens
// for the SIMT prefill path) on `device`: 0 means no split. The runner computes it once per step.
int64_t pagedAttentionPartitionSize(int64_t numRows, int64_t numKvHeads, int64_t maxContextLen,
                                    const c10::Device& device);

// out[s, h] = softmax(scale * q[s, h] . K[s]) V[s] over the contextLens[s] cached tokens of sequence s.
// out, query: [numSeqs, numQHeads, headDim] (any seq stride); contextLens: [numSeqs] int32;
// maxContextLen >= max(contextLens) sizes the grid. partitionSize < 0 chooses automatically.
// clusterPartitions > 0 (CUDA, sm_90; what pagedDecodeClusterPartitions() returned): that many partitions
// per sequence, sharing out its own context and merged through distributed shared memory, instead of
// partitionSize (a device that cannot run the cluster fails the launch: ask first, outside graph capture);
// rowPartitions > 0 instead: that many split-K partitions per sequence, equal shares of its own context
// (fewer where it has fewer blocks), merged by the last to finish; the grid does not grow with
// maxContextLen. The CPU reference computes the same attention whichever split.
// Under PDL (sm_90+) short partitions read the cache before the previous kernel on the stream has
// finished: that kernel may write only each sequence's newest token (slot contextLens[s] - 1), as the
// decoder's QK-norm/RoPE + KV write does; anything else must be written before it.
void pagedDecodeAttention(const at::Tensor& out, const at::Tensor& query, const at::Tensor& keyCache,
                          const at::Tensor& valueCache, const at::Tensor& blockTable,
                          const at::Tensor& contextLens, int64_t maxContextLen, double scale,
                          int64_t partitionSize = -1, int64_t clusterPartitions = 0, int64_t rowPartitions = 0);

// Row partitions (pagedDecodeAttention's rowPartitions) for decode steps of numRows sequences on
// `device`: the whole partitions that fit one wave of the one-pass kernel's CTAs, whatever the context
// (gpu/kernels/paged_decode_attention.cuh, pagedDecodeRowPartitions).
int64_t pagedDecodeRowPartitions(int64_t numRows, int64_t numKvHeads, const c10::Device& device);

// What pagedDecodeAttention's automatic split (partitionSize < 0) takes for numRows sequences: row
// partitions (> 0, their number) from kDecodeAutoRowPartitionsMinPairs (sequence, KV head) pairs up, else 0
// (a partition size, pagedAttentionPartitionSize).
int64_t pagedDecodeAutoRowPartitions(int64_t numRows, int64_t numKvHeads, const c10::Device& device);

// The largest cluster of at most `wanted` (16, 8, 4, 2) partitions pagedDecodeAttention can run on
// keyCache's device for numQHeads query heads and contexts up to maxContextLen; 0 on the CPU, before sm_90,
// or where none fits.
int64_t pagedDecodeClusterPartitions(const at::Tensor& keyCache, int64_t numQHeads, int64_t maxContextLen,
                                     int64_t wanted);

// Causal attention of each sequence's new tokens over its cached + new tokens (new K/V already in
// the cache). out, query: [numTokens, numQHeads, headDim]; cuSeqlensQ: [numSeqs + 1] int32;
// contextLens: [numSeqs] int32 (cached + new); maxQueryLen / maxContextLen bound them.
void pagedPrefillAttention(const at::Tensor& out, const at::Tensor& query, const at::Tensor& keyCache,
                           const at::Tensor& valueCache, const at::Tensor& blockTable,
                           const at::Tensor& cuSeqlensQ, const at::Tensor& contextLens, int64_t maxQueryLen,
                           int64_t maxContextLen, double scale, PrefillImpl impl = PrefillImpl::Auto);

// Full attention inside each image of the vision tower's batch (no image sees another), straight from the
// fused qkv projection. out: [numRows, numHeads * headDim] (row stride free, innermost contiguous);
// qkv: [numRows, 3 * numHeads * headDim] (q, k, v; the same); cuSeqlens: [numImages + 1] int32 on qkv's
// device, image i owning rows [cu[i], cu[i+1]); maxSeqlen bounds any image's rows. CUDA: float16 or
// bfloat16, head dim 72, where visionAttentionAvailable(); the CPU runs the reference (any dtype, head dim).
// shape: VisionAttentionParams::shape (the kernel's CTA shape; tests and benches).
void visionAttention(const at::Tensor& out, const at::Tensor& qkv, const at::Tensor& cuSeqlens, int64_t maxSeqlen,
                     int64_t numHeads, double scale, int shape = 0);
// Whether visionAttention() takes CUDA tensors like `qkv` with this head dim: a compute capability 9.0
// device, float16 or bfloat16, head dim 72. False for CPU tensors (the caller has its own CPU path).
bool visionAttentionAvailable(const at::Tensor& qkv, int64_t headDim);

// Whether this build has the CUDA kernels (LECTOR_CUDA): without them CUDA tensors fail every op.
bool kernelsBuiltIn();

// --- the vision tower's input ---

// out = the image's bytes normalised per channel, (u8 / 255 - mean[c]) / std[c] in float32 rounded once
// to out's dtype, in patch x patch squares (gpu/kernels/patchify.cuh). rgb: [gridH * patch, gridW * patch,
// 3] uint8, contiguous; out: [gridH * gridW, 3 * patch * patch], contiguous, float32, float16 or bfloat16,
// on rgb's device.
void patchify(const at::Tensor& out, const at::Tensor& rgb, int64_t patch, const std::array<float, 3>& mean,
              const std::array<float, 3>& std);

// --- norms, rotary, activation ---

// out = weight * x / rms(x). out, input: [numTokens, hidden] (any token stride; out may be input).
void rmsNorm(const at::Tensor& out, const at::Tensor& input, const at::Tensor& weight, double eps);

// residual += input (rounded to the dtype); out = weight * residual / rms(residual).
void fusedAddRmsNorm(const at::Tensor& out, const at::Tensor& residual, const at::Tensor& input,
                     const at::Tensor& weight, double eps);

// In place: rotary embedding by positions [numAxes, numTokens] (int64 or int32; numAxes 1..4, each
// axis owning sections[a] frequencies), then per-head RMSNorm with the given [headDim] weights
// (undefined tensors: no norm). query: [numTokens, numQHeads, headDim], key: [numTokens, numKvHeads,
// headDim] (any token stride); cosSinCache: [maxPosition, headDim] float32 (cos | sin halves).
// Under PDL it reads positions (and the slots of qkNormRopeWriteKv) before waiting for the previous
// kernel, like decode attention's block table: they must not be written by the kernel just before it.
void qkNormRope(const at::Tensor& query, const at::Tensor& key, const at::Tensor& positions,
                const at::Tensor& cosSinCache, const at::Tensor& queryNormWeight, const at::Tensor& keyNormWeight,
                const std::vector<int>& sections, double eps);

// qkNormRope, then writeKvCache(keyCache, valueCache, key, value, slotMapping) in the same kernel.
// value: [numTokens, numKvHeads, headDim] with contiguous heads, like key.
void qkNormRopeWriteKv(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const at::Tensor& positions, const at::Tensor& cosSinCache, const at::Tensor& queryNormWeight,
                       const at::Tensor& keyNormWeight, const std::vector<int>& sections, double eps,
                       const at::Tensor& keyCache, const at::Tensor& valueCache, const at::Tensor& slotMapping);

// A decode step's qkNormRopeWriteKv and pagedDecodeAttention with row partitions in one kernel on CUDA
// (gpu/kernels/paged_decode_attention.cuh, PagedDecodeAttentionParams::rope): query and key are the raw projections
// ([numSeqs, heads, headDim] views of the qkv rows), value as it is; one new token per sequence at
// slotMapping, the other arguments as those two ops take them. On CUDA query and key are left raw, on the
// CPU (the two references in turn) rotated: read neither afterwards. rowPartitions must be > 0.
void pagedDecodeAttentionRope(const at::Tensor& out, const at::Tensor& query, const at::Tensor& key,
                              const at::Tensor& value, const at::Tensor& keyCache, const at::Tensor& valueCache,
                              const at::Tensor& blockTable, const at::Tensor& contextLens, int64_t maxContextLen,
                              double scale, int64_t rowPartitions, const at::Tensor& positions,
                              const at::Tensor& cosSinCache, const at::Tensor& queryNormWeight,
                              const at::Tensor& keyNormWeight, const std::vector<int>& sections, double eps,
                              const at::Tensor& slotMapping);

// out = silu(input[:, :d]) * input[:, d:]. out: [numTokens, d]; input: [numTokens, 2d].
void siluAndMul(const at::Tensor& out, const at::Tensor& input);

// --- projections at decode batch sizes ---

// out = x weight^T for x [rows <= skinnyMaxRows(engine) (Simt 8, TensorCore 64), k], weight [n, k],
// out [rows, n] (inner dims contiguous, one dtype): the skinny GEMM of gpu/kernels/skinny_gemm.cuh. With
// siluMulInput, x is a [rows, 2k] gate/up output and the product uses siluAndMul(x) (rounded to the
// dtype), in one kernel. out may also be float32: it then holds the dtype-rounded product widened (no
// separate conversion). TensorCore on CUDA needs sm_90, a 16-bit dtype, K a multiple of 32 and 16-byte
// rows (it throws otherwise); on CPU both engines are the reference.
void skinnyLinear(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, bool siluMulInput = false,
                  SkinnyEngine engine = SkinnyEngine::Simt);

// fusedAddRmsNorm then skinnyLinear in one kernel: residualOut = residualIn + delta (rounded),
// out = (normWeight * residualOut / rms(residualOut)) weight^T. delta, residualIn, residualOut:
// [rows, k] as for skinnyLinear (the residuals with one row stride; residualOut must not alias
// residualIn); on CUDA rows of 16 bytes, and for Simt rows x k x element size <= 48 KB.
void skinnyLinearAddRmsNorm(const at::Tensor& out, const at::Tensor& delta, const at::Tensor& residualIn,
                            const at::Tensor& residualOut, const at::Tensor& normWeight, double eps,
                            const at::Tensor& weight, SkinnyEngine engine = SkinnyEngine::Simt);

// --- a whole decode step of one sequence in one kernel ---

// The decoder as the persistent decode step reads it: every matrix [out, in] with contiguous rows, all
// in one dtype on one device, and each layer's paged caches [numBlocks, kKvBlockSize, numKvHeads, headDim].
struct PersistentDecoderModel {
    struct Layer {
        at::Tensor inputNorm, qkv, queryNorm, keyNorm, o, postNorm, gateUp, down;  // as TextDecoder::Layer
        at::Tensor keyCache, valueCache;
    };
    std::vector<Layer> layers;
    at::Tensor embed;      // [vocab, hidden]
    at::Tensor finalNorm;  // [hidden]
    at::Tensor lmHead;     // [vocab, hidden]
    at::Tensor cosSin;     // [maxPosition, headDim] float32 (cos | sin halves)
    std::vector<int> sections;
    int numQHeads = 0;
    int numKvHeads = 0;
    double eps = 1e-5;
    double scale = 1.0;    // softmax scale
};

// One decode step of a batch of one through every layer, the final norm and the LM head, on CUDA as
// one persistent kernel (persistent_decode.cuh) or as two kernels a layer partitioned by KV head
// (head_parallel_decode.cuh), on the CPU as the chain of references either way. Built once per model
// and cache (it keeps a device table of the tensors' addresses, a workspace and the zeroed counters);
// the tensors must outlive it. Engine thread.
class PersistentDecoder {
public:
    enum class Kind { Persistent, HeadParallel };
    // Empty when step() can run this model on its device, else why not (the persistent kernel needs
    // sm_90, float16 or bfloat16, head dim 128 and the shapes of persistent_decode.cuh; the head-parallel
    // kernels HunyuanOCR's decoder shapes and clusters of 16; the CPU reference takes any).
    static std::string unsupportedReason(const PersistentDecoderModel& model, Kind kind = Kind::Persistent);
    // TORCH_CHECKs unsupportedReason() and the shapes.
    explicit PersistentDecoder(PersistentDecoderModel model, Kind kind = Kind::Persistent);
    Kind kind() const { return m_kind; }

    // logits [1, vocab] float32 of the token tokenId [1] int64 at positions [numAxes, 1] int64, its K/V
    // written to slot [1] int64, attending to contextLen [1] int32 keys (itself included) of the
    // blockTable [>= ceil(contextLen / 16)] int32 blocks. All on the model's device, read when the step
    // runs (so a CUDA graph can capture it with fixed inputs).
    void step(const at::Tensor& logits, const at::Tensor& tokenId, const at::Tensor& positions, const at::Tensor& slot,
              const at::Tensor& contextLen, const at::Tensor& blockTable) const;
    // The same step up to the final norm: its row into hidden [1, hidden] (the model's dtype), no logits
    // (the greedy screen's input). The head-parallel kernels and the CPU reference (hasStepHidden()).
    void stepHidden(const at::Tensor& hidden, const at::Tensor& tokenId, const at::Tensor& positions,
                    const at::Tensor& slot, const at::Tensor& contextLen, const at::Tensor& blockTable) const;
    bool hasStepHidden() const;
    int numCtas() const { return m_params.numCtas; }
    // Keys a step attends to before it reads some after its PDL wait (head-parallel kernels: 16 x 84; the
    // persistent kernel streams every key the same way: no limit). Longer contexts run slower than the chain.
    int64_t prefetchedContext() const;

private:
    void run(PersistentDecodeParams p, const at::Tensor& tokenId, const at::Tensor& positions, const at::Tensor& slot,
             const at::Tensor& contextLen, const at::Tensor& blockTable, const char* op) const;

    PersistentDecoderModel m_model;
    Kind m_kind;
    PersistentDecodeParams m_params;  // the model's part
    at::Tensor m_table;               // [numLayers * kPlCount] int64 addresses, on the model's device
    at::Tensor m_workspace;           // CUDA only
    at::Tensor m_counters;            // CUDA only: zero between steps
};

// --- sampling ---

// outTokens[s] (int64) = greedy or top-k choice for sequence s after the repetition penalty
// (sample_tokens.cuh). logits: [numSeqs, vocab]; presence: [numSeqs, vocab] uint8/bool or undefined;
// temperature, repetitionPenalty: [numSeqs] float32; topK: [numSeqs] int32; seeds, offsets:
// [numSeqs] int64. With updatePresence the chosen token is marked in presence. With presenceRows
// ([numSeqs] int64, distinct), sequence s uses presence row presenceRows[s] of a [rows, vocab] table.
// On CUDA a sequence's argmax is split over several CTAs (sampleTokensSlices), which meet in a scratch
// of int64 words: pass one that starts as zeros and is kept across calls (the kernel leaves it zero
// again; sampleScratchWords(numSeqs, vocab) words at least), or none and each call allocates one.
//
// With advance (decode graphs of several steps: sample_tokens.cuh's DecodeAdvance), each sequence's inputs
// for its next decode step move on in place once its token is chosen: contextLens [numSeqs] int32,
// positions [numPosAxes, numSeqs] int64 (rows of any stride), slots [numSeqs] int64 and the draw counters
// (offsets, written) by one, the slot from blockTable [numSeqs, width] int32; history ([numSeqs] int64,
// optional) keeps the tokens.
struct SampleAdvance {
    at::Tensor contextLens, positions, slots, blockTable, history;
};
void sampleTokens(const at::Tensor& outTokens, const at::Tensor& logits, const at::Tensor& presence,
                  const at::Tensor& temperature, const at::Tensor& topK, const at::Tensor& repetitionPenalty,
                  const at::Tensor& seeds, const at::Tensor& offsets, bool updatePresence,
                  const at::Tensor& presenceRows = at::Tensor(), const at::Tensor& scratch = at::Tensor(),
                  const SampleAdvance* advance = nullptr);
// Scratch words sampleTokens needs for numSeqs sequences of `vocab` logits on CUDA.
int64_t sampleScratchWords(int64_t numSeqs, int64_t vocab);

// --- greedy screen ---

// The LM head's 8-bit copy for greedyScreen (greedy_screen.cuh), on weight's device: q [vocab, k] int8 =
// rint(w / scales[r]) in [-127, 127], scales [vocab] float32 = max |w[r]| / 127. 124 MB for HunyuanOCR.
struct GreedyScreenHead {
    at::Tensor q, scales;
};
GreedyScreenHead quantizeGreedyScreen(const at::Tensor& weight);
// Empty when greedyScreen runs for this head [vocab, k] on its device, else why not (CUDA: k a multiple of
// 16 up to gpu::kScreenMaxK, rows 16-byte aligned; the CPU reference takes any k).
std::string greedyScreenUnsupported(const at::Tensor& weight);
// outToken [1] int64 = the greedy token after x [k] or [1, k] (weight's dtype) through weight [vocab, k]:
// the argmax of its logits after the repetition penalty (penalty [1] float32, undefined: none) of presence
// row presenceRow[0] ([1] int64) of presence [rows, vocab] uint8 (undefined: no penalty), ties to the
// lower id, without computing most logits (greedy_screen.cuh). updatePresence marks the token. scratch:
// int64 zeros of greedyScreenScratchWords(vocab, device) words, left zero (undefined: allocated here).
// advance / offsets as sampleTokens' (one sequence). stats (optional, int64 [2] on the device): += rows
// recomputed exactly, += 1.
void greedyScreen(const at::Tensor& outToken, const at::Tensor& x, const at::Tensor& weight, const GreedyScreenHead& head,
                  const at::Tensor& presence, const at::Tensor& presenceRow, const at::Tensor& penalty, bool updatePresence,
                  const at::Tensor& scratch = at::Tensor(), const SampleAdvance* advance = nullptr,
                  const at::Tensor& offsets = at::Tensor(), const at::Tensor& stats = at::Tensor());
int64_t greedyScreenScratchWords(int64_t vocab, const c10::Device& device);

}  // namespace lector::gpu
