// Wall-clock milliseconds for the per-stage timings every result carries (timing_ms), one definition
// for the engine, the models and the benchmarks. Header-only, thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

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

// A request's time before its first token, split into vision and prefill where the host queued the prefill
// behind the vision tower without seeing the tower end. The host saw the step that drew the token end at
// `now` (it waited for it); the tower's work ended `deviceGapMs` of device time before that step's end
// (nullopt: no reading, so the boundary is where the host saw it, the prefill's launch). Vision runs from
// visionStart to the tower's end; prefill from there, or from its first launch if later, to now.
struct FirstTokenSplit {
    double visionMs = 0;
    double prefillMs = 0;
};

inline FirstTokenSplit splitBeforeFirstToken(std::chrono::steady_clock::time_point visionStart,
                                             std::chrono::steady_clock::time_point prefillStart,
                                             std::chrono::steady_clock::time_point now, std::optional<double> deviceGapMs)
{
    using Clock = std::chrono::steady_clock;
    Clock::time_point towerEnd = std::max(visionStart, prefillStart);
    if (deviceGapMs) {
        const auto back = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(*deviceGapMs));
        towerEnd = now - back;
    }
    towerEnd = std::clamp(towerEnd, std::min(visionStart, now), now);
    return {msBetween(visionStart, towerEnd), msBetween(std::max(prefillStart, towerEnd), now)};
}

}  // namespace lector
