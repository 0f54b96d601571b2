// Wall-clock milliseconds for the per-stage timings every result carries (timing_ms), one definition
// for the engine, the models and the benchmarks. Header-only, thread-safe.
#pragma once

#include <chrono>

namespace lector {

// Milliseconds from t0 to t1 on the steady clock.
inline double msBetween(std::chrono::steady_clock::time_point t0, std::chrono::steady_clock::time_point t1)
{
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

// Milliseconds from t0 to now on the steady clock.
inline double msSince(std::chrono::steady_clock::time_point t0)
{
    return msBetween(t0, std::chrono::steady_clock::now());
}

}  // namespace lector
