// ModelRunner: HunyuanOCR's text decoder for the serving engine, on gpu/'s fused ops over the paged KV
// cache. One run() is one engine step: a flattened batch of prefill chunks and decode tokens of many
// sequences, with per-step metadata packed into two host buffers (int64, int32), one copy each (a
// graphed decode step: one buffer, one copy, its tokens optionally drawn inside the graph).
// Per layer: QKV matmul, QK-norm + XD-RoPE (one kernel), K/V written into the paged cache, paged
// attention (decode kernel when every sequence brings one token, else the prefill kernel), O matmul,
// fused residual-add + RMSNorm, gate/up matmul, SiLU-and-multiply, down matmul. Projections are
// libtorch matrix products, or gpu/'s skinny GEMM at few rows where it measures faster (tuneLayouts).
// Decode-only steps on CUDA replay a CUDA graph captured for the next
// larger batch size of a ladder (1, 2, 4, 8, 16, 24, 32, ... 256), so a step is one graph launch; a lone
// sequence's steps can go several to a launch (runSampledSteps: the sampler moves the inputs on between them).
// A decode step of a single sequence runs the whole decoder as one persistent kernel instead
// (gpu::PersistentDecoder, sm_90 float16/bfloat16; inside the batch-1 graph when graphs are on).
// On the CPU the same code runs gpu/'s scalar references (tests; the engine's CPU path stays the
// libtorch reference decoder). The arithmetic follows TextDecoder (RMSNorm in float32 then cast,
// RoPE with tables rounded through the model dtype, softmax in float32).
// Threads: engine thread only.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model/hunyuan/decoder.h"
#include "core/runner/device_sampler.h"
#include "core/runner/paged_kv.h"
#include "core/runner/tuning_cache.h"
#include "gpu/kernels/skinny_gemm.cuh"  // SkinnyEngine (plain C++)

namespace lector::gpu {
class CudaGraph;
class PersistentDecoder;
struct PersistentDecoderModel;
struct GreedyScreenHead;
}

namespace lector::runner {

struct RunnerOptions {
    bool cudaGraphs = true;        // decode-only steps on CUDA replay captured graphs
    int maxGraphBatch = 256;       // largest decode batch with a graph (larger ones run eagerly)
    int graphContextTokens = 8192; // longest context a graphed decode step supports (else eager)
    // -1: tuneLayouts() picks the skinny GEMM per projection on CUDA. >= 0: every projection and the LM
    // head use it up to this many rows (with the fused SiLU-mul and add + RMSNorm variants), so the tests
    // drive those paths through gpu/'s CPU references.
    int skinnyRows = -1;
    // The same for the skinny GEMM's tensor-core engine, from skinnyRows + 1 up to this many rows (<= 64).
    int tensorCoreRows = -1;
    // With tensorCoreRows: those rows run the tensor-core engine behind the add + RMSNorm and SiLU-mul
    // kernels instead of with them inside (the route tuneLayouts() picks per projection where the decode
    // step measures faster with it), so the tests drive that path too.
    bool tensorCoreApart = false;
    // Decode steps of one sequence through gpu::PersistentDecoder: Auto takes whichever of its CUDA
    // kinds supports the model and device (one persistent kernel; two kernels a layer partitioned by KV
    // head) tuneLayouts() measures faster than the kernel chain, the fastest of them; Always the
    // persistent kernel wherever it runs (also on the CPU, as its reference: tests); Never.
    enum class Persistent { Auto, Always, Never };
    Persistent persistentDecode = Persistent::Auto;
    // Decode graphs of up to this many sequences split attention into a fixed cluster of partitions per
    // sequence, merged through distributed shared memory (gpu::pagedDecodeAttention's clusterPartitions),
    // where the device runs it (sm_90); 0: the split-K ticket everywhere. One sequence is 128 CTAs of 4
    // warps and about 200 registers each, about one per SM of an H200 (measured only at one sequence).
    int attentionClusterMaxBatch = 1;
    // Decode steps of a single sequence that one replay runs back to back (runSampledSteps): the sampler
    // inside the graph moves each step's inputs on for the next (gpu::SampleAdvance), so the steps between
    // share one input copy, one graph launch and one copy of their tokens out (~13 us a step: docs/perf.md,
    // calls 182-183). 1: one step a replay. Captured for the persistent decoders' graph of one sequence
    // and the chain's graph of the longer contexts beside it (with a sampler attached); on the CPU the
    // steps run one after another (tests).
    int decodeGraphSteps = 8;
    // A greedy draw of one sequence through the greedy screen (gpu::greedyScreen): the decode step up to
    // its final norm, then an exact argmax screened through an 8-bit copy of the LM head (124 MB more),
    // instead of the float16 LM head and the sampler. Graphs of one sequence again, captured with the
    // others (a sampler attached, CUDA, the head-parallel decoder or the chain). Auto keeps them where
    // they draw the same tokens as the graphs without and replay faster at load; On keeps them where they
    // draw the same tokens, and on the CPU draws a launch's greedy steps (runSampledSteps) through the
    // screen's reference (tests); Off captures none. LECTOR_GREEDY_SCREEN=0 / 1 overrides (comparisons).
    enum class GreedyScreen { Auto, On, Off };
    GreedyScreen greedyScreen = GreedyScreen::Auto;
    // Decode graphs with row partitions (more than a few sequences) of up to this many sequences rotate and
    // write the new tokens' K/V inside the attention kernel (gpu::pagedDecodeAttentionRope) instead of in a
    // QK-norm/RoPE kernel before it: one kernel less a layer. On an H100 (docs/perf.md, call 206) that took
    // 30-77 us off the steps of 4 to 48 sequences (2-6 %) and lost 14-47 us at 56 and 64; 0: never.
    // The load-time tuning (chooseChainRoutes) then times each graph size it tunes the other way too and
    // keeps the faster, so this bound decides only the sizes it does not time (and everything when the
    // tuning is off). LECTOR_FUSED_DECODE_ROPE=0 / 1 overrides both (never / every graph with row
    // partitions, untimed: comparisons).
    int fusedDecodeRopeMaxBatch = 48;
};

// One sequence's part of a step: numNew new tokens at sequence indices past .. past + numNew - 1.
struct RunnerSequence {
    std::int64_t numNew = 0;
    std::int64_t past = 0;
    std::vector<int> blocks;          // KV block ids covering tokens 0 .. past + numNew - 1, in order
    bool sample = false;              // wants the logits of its last new token
};

struct RunnerStep {
    std::vector<RunnerSequence> seqs;
    // One entry per batch row, sequences in order: a vocabulary id, or -1 for a row taken (in order)
    // from promptEmbeds (prompt rows with the image scattered in).
    std::vector<std::int64_t> tokenIds;
    at::Tensor promptEmbeds;             // [rows with id -1, hidden] on the decoder's device, or undefined
    std::vector<std::int64_t> positions; // [numAxes * rows], axis-major
    // Optional [rows] int64 on the decoder's device, for a step of single-token decodes only: row i's id
    // is read from here on the device (tokenIds are then ignored). The engine feeds the previous step's
    // sampled tokens this way, so it can queue a step before those tokens reach the host.
    at::Tensor deviceTokenIds;
};

class ModelRunner {
public:
    ModelRunner(const model::hunyuan::TextDecoder& decoder, PagedKvStorage& kv, RunnerOptions options = {});
    ~ModelRunner();

    // Logits [sampled sequences, vocab] float32 on the decoder's device, in sequence order.
    at::Tensor run(const RunnerStep& step);

    // Captures the decode graphs (CUDA builds of libtorch with a CUDA decoder and options.cudaGraphs;
    // otherwise a no-op). Call tuneLayouts() first: graphs keep the layouts they were captured with.
    // Returns the number of graphs captured.
    int captureGraphs();
    // Decode graphs also draw each step's tokens: gpu::sampleTokens after the LM head, inside the graph,
    // with sampler's presence rows, the parameters travelling in the step's one copy, the ids drawn
    // straight into the graph's own input for the next replay. Call before captureGraphs().
    void attachSampler(DeviceSampler& sampler);
    // Whether runSampled() takes this step (a graphed decode step, a sampler attached).
    bool samplesInGraph(const RunnerStep& step) const;
    // A graphed decode step with every sequence's token drawn inside the graph (sampling: one entry per
    // sequence, in order): the tokens on their way to the host. Their onDevice() is the graphs' own ids
    // input, valid until the next replay; feed it to the next step as deviceTokenIds and that step
    // copies nothing for its ids.
    PendingTokens runSampled(const RunnerStep& step, const std::vector<DeviceSampling>& sampling);
    // How many decode steps runSampledSteps() takes for this step of one sequence at once: options'
    // decodeGraphSteps where its graph was captured and every step stays within the graph's contexts
    // (and, on the CPU, wherever a sampler is attached), else 1.
    int decodeStepsFor(const RunnerStep& step) const;
    // decodeStepsFor(step) decode steps of step's one sequence, each token drawn on the device and fed to
    // the next step: the block table of step.seqs[0] must cover past + steps tokens (the slots of them
    // all). The tokens, in order, on their way to the host; their onDevice() is the last one, which the
    // next step may read as deviceTokenIds, as after runSampled().
    PendingTokens runSampledSteps(const RunnerStep& step, const std::vector<DeviceSampling>& sampling);
    // For each projection (qkv, o, gate/up, down, LM head): keeps the weight as stored ([out, in],
    // at::linear) or a transposed copy ([in, out], at::mm), whichever the device's matmul library runs
    // faster at 1 and 32 decode rows (cuBLAS picks very different kernels for the two: 10 vs 5 us for
    // the o projection at one row on an H200), and uses gpu/'s skinny GEMM for steps of up to 8 rows
    // (SIMT) and up to 64 (tensor cores) where that measures faster still. CUDA only (else a no-op);
    // returns and keeps (layoutReport()) a line per projection.
    // On CUDA it then times the decode step itself for each graph size of 3 to 64 sequences, one
    // projection at a time through the matmul library and through the tensor-core engine behind the norm
    // and SiLU-mul kernels, and keeps per size what makes the step faster; then the new tokens' rotation
    // inside decode attention against the QK-norm/RoPE kernel before it, and keeps the faster
    // (chooseChainRoutes; the environment variable LECTOR_CHAIN_TUNING=0 skips it). It also times a single-sequence decode step
    // through the persistent kernel and through the kernel chain, and keeps the faster (unless
    // options.persistentDecode is Always).
    std::vector<std::string> tuneLayouts();
    // What tuneLayouts() decided (or applyTuning() took), for the engine to keep between starts
    // (core/runner/tuning_cache.h).
    RunnerTuning tuning() const;
    // Everything those decisions depend on: the device (gpu::deviceFingerprint), libtorch's version, this
    // executable (path, size, time: a new build measures afresh), the model's shapes and dtype, the graph
    // sizes the pool leaves room for, the options, LECTOR_CHAIN_TUNING and LECTOR_PDL. Empty where nothing is tuned
    // (the CPU) or the executable cannot be told apart.
    std::string tuningKey() const;
    // Takes `t` instead of measuring. Returns false, changing nothing, where it does not fit this runner
    // (a route or single-sequence decoder it does not have, a row count out of range).
    bool applyTuning(const RunnerTuning& t);
    int numGraphs() const { return static_cast<int>(m_graphs.size()); }

    // Runs one short prompt (`tokens` ids, sequential positions) through this runner — a prefill, then a
    // decode step (a graph replay when graphs are captured) — and through the reference TextDecoder on
    // its own cache, and returns the larger relative L2 error of the two last-position logits. The
    // engine checks this at load: the kernels were tested on one GPU generation, and a card where they
    // disagree must fall back to the reference, not produce wrong text. Writes the first KV blocks of
    // the pool (call it before serving, while the pool is empty).
    double selfCheck(int tokens = 40);
    const std::vector<std::string>& layoutReport() const { return m_layoutReport; }
    // Whether single-sequence decode steps run the persistent kernel, and if not, why.
    const std::string& persistentReport() const { return m_persistentReport; }
    // What captureGraphs() found of the greedy screen (RunnerOptions::greedyScreen); empty where not tried.
    const std::string& greedyScreenReport() const { return m_screenReport; }

private:
    struct Metadata;  // device tensors of one step
    struct DecodeGraph;

    Metadata upload(const RunnerStep& step) const;
    at::Tensor embedRows(const Metadata& meta, const at::Tensor& promptEmbeds) const;
    // The decoder over rows x [n, hidden] (consumed: it becomes the residual stream); returns the final
    // normed hidden states of the rows meta.sampleRows selects, or of every row when it is undefined.
    at::Tensor forward(at::Tensor x, const Metadata& meta) const;
    at::Tensor logits(const at::Tensor& hidden) const;
    enum Projection { kQkv, kO, kGateUp, kDown, kNumProjections };
    // How a projection runs at a row count: the matmul library; the skinny GEMM's SIMT or tensor-core
    // engine with the add + RMSNorm or SiLU-mul in front of it inside the kernel; or the tensor-core or
    // warp-group engine behind those as kernels of their own.
    enum class Route : std::uint8_t { Library, Simt, TensorCore, TensorCoreApart, WarpGroupApart };
    using Routes = std::array<Route, kNumProjections + 1>;  // qkv, o, gate/up, down, the LM head
    // The route of projection `which` (kNumProjections: the LM head) at `rows` rows: chooseChainRoutes'
    // choice for the smallest graph size it timed at or above `rows`, else the per-projection tuning.
    Route route(std::int64_t rows, int which) const;
    // Whether a decode-only step of `seqs` sequences with row partitions rotates its new tokens and writes
    // their K/V inside the attention kernel: chooseChainRoutes' choice for the smallest graph size it timed
    // at or above `seqs`, else RunnerOptions::fusedDecodeRopeMaxBatch.
    bool rotationInside(std::int64_t seqs) const;
    // x [rows, in] times projection p of layer l -> [rows, out], in the tuned layout.
    at::Tensor project(const at::Tensor& x, Projection p, size_t l) const;
    const at::Tensor& weightOf(Projection p, size_t l) const;  // [out, in] as the decoder stores it
    std::vector<at::Tensor> transposedCopies(Projection p) const;  // weightOf(p, l).t() of every layer, contiguous
    // The skinny GEMM engine of route(rows, which), or none (the matmul library).
    std::optional<gpu::SkinnyEngine> skinnyEngine(std::int64_t rows, int which) const;
    // Whether route(rows, which) puts the add + RMSNorm or SiLU-mul inside the skinny GEMM.
    bool prologueInside(std::int64_t rows, int which) const;
    // gpu::skinnyLinear(x, weight) when tuning chose it for projection `which` at x's row count, into an
    // output of outType (x's dtype, or float32); else undefined.
    at::Tensor skinnyOrNone(const at::Tensor& x, const at::Tensor& weight, int which,
                            std::optional<at::ScalarType> outType = std::nullopt) const;
    bool graphable(const RunnerStep& step) const;
    // A decode step of one sequence that samples: what the persistent decoder runs.
    bool persistentStep(const Metadata& meta) const;
    at::Tensor runPersistent(const Metadata& meta) const;
    at::Tensor runDecoder(const gpu::PersistentDecoder& decoder, const Metadata& meta) const;
    void choosePersistent(std::vector<std::string>& report);  // part of tuneLayouts()
    void chooseLongContext(std::vector<std::string>& report);  // part of choosePersistent()
    // GPU microseconds of the kernel chain's single-sequence step `meta` (choosePersistent, chooseLongContext).
    double chainStepMicros(const Metadata& meta);
    void chooseChainRoutes(std::vector<std::string>& report);  // part of tuneLayouts()
    // Part of tuneLayouts(): the row counts at which the LM head takes the warp-group engine.
    void chooseLmHeadWarpGroup(const at::Tensor& weight, const at::Tensor* transposed, int skinnyUpTo,
                               int tensorCoresUpTo, std::vector<std::string>& report);
    // A decode step of `batch` sequences at `context` tokens on the pool's first blocks (their contents
    // do not matter for timing), for the tuning's step timings.
    Metadata tuningStep(int batch, std::int64_t context) const;
    void useGraphAttention(int batch);  // decode attention's split for the graph of `batch` sequences
    void useEagerAttention();           // ... and for eager steps (automatic)
    // sampling: the draws of a runSampled() step, or null (with a sampler attached, the graph then draws
    // only into its spare row).
    // steps > 1: m_stepsGraph (or m_longContextStepsGraph), with the block table through the last step's
    // token.
    at::Tensor runGraph(const RunnerStep& step, const std::vector<DeviceSampling>* sampling, int steps = 1);

    const model::hunyuan::TextDecoder& m_decoder;
    PagedKvStorage& m_kv;
    RunnerOptions m_options;
    at::Tensor m_cosSin;  // [maxPosition, headDim] float32: cos | sin halves, rounded through the model dtype
    std::vector<int> m_sections;
    double m_scale = 1.0;
    std::int64_t m_decodePartition = -1;  // split-K partition of decode attention: -1 automatic (eager steps)
    std::int64_t m_decodeClusterParts = 0;  // > 0: the cluster merge with this many partitions instead
    std::int64_t m_decodeRowParts = 0;      // > 0: this many equal shares of each sequence's context instead
    std::int64_t m_graphClusterParts = -1;  // what the device runs for the graphs' contexts; -1 not asked yet
    std::vector<at::Tensor> m_transposed[kNumProjections];  // per layer [in, out]; empty: at::linear as stored
    at::Tensor m_lmHeadT;                                   // [hidden, vocab] when faster, else undefined
    int m_skinnyRows[kNumProjections + 1] = {};             // gpu::skinnyLinear up to this many rows (last: LM head)
    int m_tensorCoreRows[kNumProjections + 1] = {};         // its tensor-core engine above those, up to this many
    bool m_tensorCoresAgree[kNumProjections + 1] = {};      // tuning: the engine ran and matched the library
    // The LM head's row counts (bit i: rows up to kLmHeadWarpGroupRows[i], above the one before) where the
    // warp-group engine beat both the tensor-core engine and the library at tuning.
    unsigned m_lmHeadWarpGroup = 0;
    // chooseChainRoutes(): per graph size it timed (3 to 64 sequences), the routes of qkv, o, gate/up,
    // down and the LM head for steps of more rows than the next smaller size, up to this one.
    std::map<int, Routes> m_chainRoutes;
    // chooseChainRoutes() too: per graph size it timed, whether its decode steps rotate inside attention
    // (rotationInside()); sizes it did not time follow RunnerOptions::fusedDecodeRopeMaxBatch.
    std::map<int, bool> m_rotationInside;
    bool m_rotationForced = false;  // LECTOR_FUSED_DECODE_ROPE set: the option alone decides, untimed
    std::vector<std::string> m_layoutReport;                // what tuneLayouts() measured and chose
    std::unique_ptr<gpu::PersistentDecoder> m_persistent;   // null: every step runs forward()
    std::unique_ptr<gpu::PersistentDecoder> m_headParallel; // Auto's other candidate until choosePersistent()
    std::string m_persistentReport;
    // Decode graphs' static inputs, one byte buffer every graph reads from its start, so a step's inputs
    // are one host-to-device copy. Graph b's layout (byte offsets): int64 ids [b], positions
    // [numAxes, b], slots [b]; the sampler's packed parameters for b rows; int32 context lengths [b],
    // block table [b, graphContextTokens / 16].
    struct GraphInputs {
        std::int64_t ids, positions, slots, sampling, contextLens, blockTable, end;
    };
    GraphInputs graphInputs(int b) const;
    at::Tensor graphInput(std::int64_t offset, std::int64_t count, at::ScalarType type) const;  // a typed view
    at::Tensor m_graphInputs;   // uint8 [graphInputs(largest graph).end]
    DeviceSampler* m_sampler = nullptr;  // attachSampler(); the graphs draw with it
    at::Tensor m_graphScratch;  // int64 zeros: the graphs' sampler scratch
    std::int64_t graphMaxBlocks() const;  // block-table width of the graphs: graphContextTokens / 16
    std::map<int, std::unique_ptr<DecodeGraph>> m_graphs;  // by batch size
    // The kernel chain's graph of one sequence, where m_persistent's graph slows past its prefetched
    // context (the head-parallel kernels): runGraph() takes it for longer contexts. Same inputs as graph 1.
    std::unique_ptr<DecodeGraph> m_longContextGraph;
    // Contexts (keys, the new one included) above this take it. Before the graphs are captured: what
    // chooseLongContext() measured (0: the kernels throughout) or -1 (not measured: from the kernels' prefetch).
    std::int64_t m_longContextFrom = -1;
    // Graph 1's step options.decodeGraphSteps times over (m_persistent's decoder, the sampler advancing
    // the inputs), same inputs; the steps' tokens land in m_stepTokens [steps] int64. The same of the
    // chain's step for the contexts m_longContextGraph serves.
    std::unique_ptr<DecodeGraph> m_stepsGraph;
    std::unique_ptr<DecodeGraph> m_longContextStepsGraph;
    at::Tensor m_stepTokens;
    // The four graphs of one sequence above with the greedy screen in place of the LM head and the sampler
    // (RunnerOptions::greedyScreen), on the same inputs; runGraph() takes them for a greedy draw.
    struct ScreenedGraphs {
        std::unique_ptr<DecodeGraph> one, steps, longContext, longContextSteps;
    };
    ScreenedGraphs m_screened;
    std::unique_ptr<gpu::GreedyScreenHead> m_screenHead;  // the LM head's 8-bit copy
    at::Tensor m_screenScratch;  // int64 zeros: the screen's ticket, threshold and partials
    at::Tensor m_screenHidden;   // [1, hidden]: the head-parallel decoder's final row
    std::string m_screenReport;
    // Part of captureGraphs(): whether the screened graphs draw what the others draw on the dummy step
    // (graph 1's inputs), and (timed) whether graph 1 replays faster with the screen; drops them if not.
    void keepScreenedGraphsIfBetter(bool timed);
    void dropScreenedGraphs();
};

// The decoder's weights and kv's caches as gpu::PersistentDecoder reads them (in place, no copies), with
// the given rotary table [maxPosition, headDim] float32 (cos | sin halves).
gpu::PersistentDecoderModel persistentDecoderModel(const model::hunyuan::TextDecoder& decoder, PagedKvStorage& kv,
                                                   const at::Tensor& cosSin);

// Decode batch sizes that get a graph, up to maxBatch: 1, 2, 4, 8, then steps of 8 to 64, then of 32.
std::vector<int> graphBatchSizes(int maxBatch);

}  // namespace lector::runner
