// Serving benchmarks of `lector-cli bench` (issue 4): a burst that submits every image N times at
// once (--copies) and an open-loop Poisson arrival stream (--poisson). Both run on the calling
// (main) thread, which submits, sleeps, and samples Engine::stats() every ~5 ms while it waits;
// results arrive on the engine thread and are only stored there. cmd_bench.cpp prints the reports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/engine.h"

namespace lector::cli {

using BenchImages = std::vector<std::pair<std::string, std::shared_ptr<const Image>>>;

// Linear-interpolated quantile q in [0, 1] of `values` (sorted here); 0 when empty.
double percentile(std::vector<double> values, double q);

// Engine load seen by the submitting thread, sampled every ~5 ms (zeros for PP-OCR).
struct LoadSummary {
    int samples = 0;
    double kvBlocksMean = 0;
    int kvBlocksPeak = 0;
    int kvBlocksTotal = 0;
    int preemptions = 0;  // during the run (end minus start)
    long long overlappedSteps = 0;  // decode steps queued before their predecessor's tokens were read (run)
    // The engine thread's steps during the run by kind (EngineStats: vision, prompt tokens, decodes only).
    engine::StepTimes visionSteps, prefillSteps, decodeSteps;
};

// Per-request figures of one run; latencies only of the requests that succeeded.
struct ServingReport {
    int requests = 0;       // submitted (accepted or not)
    int finished = 0;       // finished without error
    int failures = 0;       // rejected by submit() or finished with an error
    double spanSeconds = 0;    // first submit -> last result
    double submitSeconds = 0;  // first submit -> last submit
    double maxSubmitLagMs = 0;  // Poisson: worst lateness of a submit behind its arrival time
    std::int64_t generatedTokens = 0;
    std::vector<double> totalMs;       // "total": submit -> result (Request::createdAt = submit time)
    std::vector<double> firstTokenMs;  // "first_token", prompt-driven models only
    std::vector<double> perTokenMs;    // "per_token", prompt-driven models only
    LoadSummary load;
    std::vector<std::string> errors;   // messages of the failures, in request order
};

// Submits repeat x images x copies requests at once and waits for all of them.
ServingReport runBurst(engine::Engine& engine, const engine::Request& tmpl, const BenchImages& images,
                       int repeat, int copies);

struct PoissonOptions {
    double rate = 1;          // mean arrivals per second
    int count = 64;           // requests
    int newTokensMin = 0;     // 0: every request keeps the template's maxNewTokens
    int newTokensMax = 0;
    std::uint64_t seed = 1;   // std::mt19937_64: inter-arrival gaps, then new-token draws
};

// Request k is submitted at t0 + the sum of k exponential gaps (mean 1/rate s); images cycle.
ServingReport runPoisson(engine::Engine& engine, const engine::Request& tmpl, const BenchImages& images,
                         const PoissonOptions& options);

}  // namespace lector::cli
