// bench_greedy_screen: the greedy screen (gpu/kernels/greedy_screen.cuh) alone at HunyuanOCR's LM head,
// 120818 x 1024 float16 (uniform weights of std ~0.02, like the random reference model's), against what a
// greedy batch-1 step ends with without it: the SIMT skinny GEMM's float32 logits, then the sampler. First
// the checks: the screen's token against the CPU reference and against the sampler's argmax over the full
// logits, at penalty 1 and 1.03 with 5 % of the ids present; the rows it recomputed. Then each way timed
// in a CUDA graph of 20 calls (PDL between them, as in a step), us a call, with the bytes each reads at the
// card's copy bandwidth. Without libtorch:
//   bash bench/gpu/build_torch_free.sh bench_greedy_screen; build-gpu/bench_greedy_screen [vocab]
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "gpu/kernels/greedy_screen.cuh"
#include "gpu/kernels/skinny_gemm.cuh"
#include "gpu/ref/greedy_screen_ref.h"

using namespace lector;
using namespace lector::bench;

int main(int argc, char** argv)
{
    const int vocab = argc > 1 ? std::atoi(argv[1]) : 120818, k = 1024;
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

    // The head on the device, a host copy of its bits for the quantization and the reference.
    auto weight = halves(size_t(vocab) * k, 7, 0.035f);
    std::vector<uint16_t> w(size_t(vocab) * k);
    check(cudaMemcpy(w.data(), weight->ptr, w.size() * 2, cudaMemcpyDeviceToHost), "head to host");
    std::vector<int8_t> q(w.size());
    std::vector<float> scales(static_cast<size_t>(vocab));
    for (int r = 0; r < vocab; ++r) {
        float m = 0.0f;
        for (int i = 0; i < k; ++i) m = std::fmax(m, std::fabs(gpu::ref::halfBitsToFloat(w[size_t(r) * k + i])));
        scales[r] = m / 127.0f;
        const float d = scales[r] > 0 ? scales[r] : 1.0f;
        for (int i = 0; i < k; ++i)
            q[size_t(r) * k + i] = int8_t(std::fmax(-127.0f, std::fmin(127.0f, std::nearbyint(gpu::ref::halfBitsToFloat(w[size_t(r) * k + i]) / d))));
    }
    const std::vector<uint16_t> x = randomHalfBits(k, 11);
    std::vector<uint8_t> presence(static_cast<size_t>(vocab));
    for (int r = 0; r < vocab; ++r) presence[r] = (uint32_t(r) * 2654435761u >> 7) % 20 == 0;
    auto dQ = upload(q), dScales = upload(scales), dX = upload(x), dPresence = upload(presence);
    const int64_t zero64 = 0;
    auto dRow = upload(std::vector<int64_t>{zero64});
    auto dToken = std::make_unique<DeviceBuffer>(8);
    auto dStats = upload(std::vector<unsigned long long>{0, 0});
    const int ctas = gpu::greedyScreenCtas(vocab, sms);
    // Room for the grid sweep below (up to 4 CTAs a multiprocessor).
    auto dScratch = upload(std::vector<unsigned long long>(size_t(gpu::greedyScreenScratchWords(4 * sms)), 0));
    // The sampler's side: logits, its parameters (greedy), its scratch.
    auto dLogits = std::make_unique<DeviceBuffer>(size_t(vocab) * 4);
    auto dTemp = upload(std::vector<float>{0.0f});
    auto dTopK = upload(std::vector<int32_t>{0});
    auto dSeeds = upload(std::vector<int64_t>{0});
    auto dOffsets = upload(std::vector<int64_t>{0});
    const int slices = gpu::sampleTokensSlices(1, vocab);
    auto dSampleScratch = upload(std::vector<unsigned long long>(size_t(std::max<int64_t>(1, gpu::sampleTokensScratchWords(1, vocab))), 0));
    auto dSampled = std::make_unique<DeviceBuffer>(8);

    int failures = 0;
    std::printf("# greedy screen, vocab %d x %d float16, %d CTAs\n\n", vocab, k, ctas);
    std::printf("| penalty | screen | reference | sampler over the full logits | rows recomputed |\n|---|---|---|---|---|\n");
    for (float penalty : {1.0f, 1.03f}) {
        auto dPenalty = upload(std::vector<float>{penalty});
        gpu::GreedyScreenParams p;
        p.dtype = gpu::DType::F16;
        p.x = dX->ptr;
        p.weight = weight->ptr;
        p.weightStride = k;
        p.q = static_cast<const int8_t*>(dQ->ptr);
        p.scales = static_cast<const float*>(dScales->ptr);
        p.vocab = vocab;
        p.k = k;
        p.presence = static_cast<uint8_t*>(dPresence->ptr);
        p.presenceRow = static_cast<const int64_t*>(dRow->ptr);
        p.presenceStride = vocab;
        p.penalty = static_cast<const float*>(dPenalty->ptr);
        p.outToken = static_cast<int64_t*>(dToken->ptr);
        p.numCtas = ctas;
        p.scratch = static_cast<unsigned long long*>(dScratch->ptr);
        p.stats = static_cast<unsigned long long*>(dStats->ptr);
        check(cudaMemsetAsync(dStats->ptr, 0, 16, stream), "stats");
        check(gpu::launchGreedyScreen(p, stream), "screen");
        int64_t token = -1;
        unsigned long long stats[2] = {0, 0};
        check(cudaMemcpyAsync(&token, dToken->ptr, 8, cudaMemcpyDeviceToHost, stream), "token");
        check(cudaMemcpyAsync(stats, dStats->ptr, 16, cudaMemcpyDeviceToHost, stream), "stats");
        // The reference on host copies.
        gpu::GreedyScreenParams h = p;
        int64_t refToken = -1, row = 0;
        unsigned long long refStats[2] = {0, 0};
        h.x = x.data();
        h.weight = w.data();
        h.q = q.data();
        h.scales = scales.data();
        h.presence = presence.data();
        h.presenceRow = &row;
        h.penalty = &penalty;
        h.outToken = &refToken;
        h.scratch = nullptr;
        h.stats = refStats;
        gpu::ref::greedyScreenRef(h);
        // The full logits and the sampler.
        const gpu::SkinnyGemmParams g =
            gpu::skinnyRowParams(gpu::DType::F16, dLogits->ptr, dX->ptr, weight->ptr, vocab, k, /*outFloat=*/true);
        gpu::SampleTokensParams s;
        s.dtype = gpu::DType::F32;
        s.logits = dLogits->ptr;
        s.presence = static_cast<uint8_t*>(dPresence->ptr);
        s.temperature = static_cast<const float*>(dTemp->ptr);
        s.topK = static_cast<const int32_t*>(dTopK->ptr);
        s.repetitionPenalty = static_cast<const float*>(dPenalty->ptr);
        s.seeds = static_cast<const int64_t*>(dSeeds->ptr);
        s.offsets = static_cast<const int64_t*>(dOffsets->ptr);
        s.outTokens = static_cast<int64_t*>(dSampled->ptr);
        s.logitsStride = vocab;
        s.presenceStride = vocab;
        s.numSeqs = 1;
        s.vocabSize = vocab;
        s.slices = slices;
        s.scratch = static_cast<unsigned long long*>(dSampleScratch->ptr);
        check(gpu::launchSkinnyGemm(g, stream), "LM head");
        check(gpu::launchSampleTokens(s, stream), "sampler");
        int64_t sampled = -1;
        std::vector<float> logits(static_cast<size_t>(vocab));
        check(cudaMemcpyAsync(&sampled, dSampled->ptr, 8, cudaMemcpyDeviceToHost, stream), "sampled");
        check(cudaMemcpyAsync(logits.data(), dLogits->ptr, logits.size() * 4, cudaMemcpyDeviceToHost, stream), "logits");
        check(cudaStreamSynchronize(stream), "checks");
        auto pen = [&](int64_t t) { return gpu::penalizedLogit(logits[size_t(t)], presence[size_t(t)] != 0, penalty); };
        // A different id is accepted only at a tie the summation order decides.
        auto same = [&](int64_t a, int64_t b) { return a == b || (a >= 0 && a < vocab && std::fabs(pen(a) - pen(b)) <= 1e-5f * std::fabs(pen(b))); };
        const bool ok = same(token, refToken) && same(token, sampled);
        failures += !ok;
        std::printf("| %.2f | %lld | %lld | %lld | %llu (reference: %llu) | %s\n", penalty, (long long)token, (long long)refToken,
                    (long long)sampled, stats[0], refStats[0], ok ? "" : "MISMATCH");
        if (penalty != 1.03f) continue;

        // Timing: 20 calls a graph, PDL between them.
        const double screenUs = graphMicros(stream, 20, [&](int) { return gpu::launchGreedyScreen(p, stream) == cudaSuccess; });
        const double headUs = graphMicros(stream, 20, [&](int) { return gpu::launchSkinnyGemm(g, stream) == cudaSuccess; });
        const double bothUs = graphMicros(stream, 20, [&](int) {
            return gpu::launchSkinnyGemm(g, stream) == cudaSuccess && gpu::launchSampleTokens(s, stream) == cudaSuccess;
        });
        const double bandwidth = copyBandwidth();  // bytes a second
        const double headBytes = double(vocab) * k * 2, screenBytes = double(vocab) * (k + 4) + double(stats[0]) * k * 2;
        std::printf("\n| path | us a call | its bytes at copy bandwidth (%.0f GB/s), us |\n|---|---|---|\n", bandwidth / 1e9);
        std::printf("| LM head (SIMT skinny GEMM, float32 logits) | %.2f | %.2f |\n", headUs, headBytes / bandwidth * 1e6);
        std::printf("| LM head + sampler (a greedy step's end now) | %.2f | |\n", bothUs);
        std::printf("| **greedy screen** | **%.2f** | %.2f |\n", screenUs, screenBytes / bandwidth * 1e6);
        std::printf("\nscreen against head + sampler: %.2f us less a step (%.1f ms over a page's 256 tokens)\n",
                    bothUs - screenUs, (bothUs - screenUs) * 256 / 1e3);
        // The grid: greedyScreenCtas takes 2 CTAs a multiprocessor (2 fit by registers); 1, 3 and 4 for comparison.
        std::printf("\n| CTAs | us a call | token |\n|---|---|---|\n");
        for (int perSm : {1, 2, 3, 4}) {
            gpu::GreedyScreenParams v = p;
            v.numCtas = std::min(perSm * sms, (vocab + 31) / 32);
            v.stats = nullptr;
            const double us = graphMicros(stream, 20, [&](int) { return gpu::launchGreedyScreen(v, stream) == cudaSuccess; });
            int64_t t = -1;
            check(cudaMemcpy(&t, dToken->ptr, 8, cudaMemcpyDeviceToHost), "token");
            const bool ok = same(t, refToken);
            failures += !ok;
            std::printf("| %d (%d a multiprocessor) | %.2f | %lld%s |\n", v.numCtas, perSm, us, (long long)t, ok ? "" : " MISMATCH");
        }
    }
    std::printf("%s\n", failures ? "CHECKS FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
