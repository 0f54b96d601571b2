// The decisions ModelRunner::tuneLayouts() measures at load (on an H200 ~4-5 s of a ~9 s start: the
// projections' layouts and engines, the decode step's routes per graph size, the single-sequence decoder),
// kept in a small JSON file so that the next start on the same card, driver, libraries, build and model
// takes them as they are. The key (ModelRunner::tuningKey()) names everything the decisions depend on; a
// file whose key differs, or that cannot be read, is ignored and measured over. No torch here.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/common/result.h"

namespace lector::runner {

struct RunnerTuning {
    static constexpr int kProjections = 5;  // qkv, o, gate/up, down, the LM head
    enum SingleSequence : int { kChain = 0, kPersistentKernel = 1, kHeadParallel = 2 };

    std::array<bool, kProjections> transposed{};        // the library reads a transposed copy
    std::array<int, kProjections> skinnyRows{};         // gpu::skinnyLinear (SIMT) up to this many rows
    std::array<int, kProjections> tensorCoreRows{};     // its tensor-core engine above those, up to this many
    std::array<bool, kProjections> tensorCoresAgree{};  // the tensor-core engine matched the library
    unsigned lmHeadWarpGroup = 0;                       // ModelRunner's bit set of LM head row counts
    std::map<int, std::array<int, kProjections>> chainRoutes;  // graph size -> route of qkv, o, gate/up, down, LM head
    std::map<int, bool> rotationInside;                 // graph size -> rotates inside decode attention
    int singleSequence = kChain;                        // what decodes a single sequence
    // Single-sequence contexts (keys) above this replay the kernel chain's graph instead of singleSequence's
    // kernels; 0: never; -1: not measured (from the kernels' prefetched context, ModelRunner::chooseLongContext).
    long long longContextFrom = -1;
    std::vector<std::string> report;                    // tuneLayouts()' lines, for the log
    std::string persistentReport;

    bool operator==(const RunnerTuning&) const = default;
};

// Where tunings live: "tuning-<hash of key>.json" in the user's cache folder (lector::cacheDir(),
// core/common/paths.h); empty when there is none.
std::filesystem::path tuningCacheFile(const std::string& key);

// Errors: "not_found" (no file), "stale" (made for another key: another card, driver, build or model),
// "bad_cache" (unreadable or malformed; the message says where).
Result<RunnerTuning> readTuning(const std::filesystem::path& file, const std::string& key);
// Writes through a temporary file in the same folder and a rename, so a reader never sees half a file
// and a failure (a full disk, a read-only folder) leaves the old file as it was. Creates the folder.
// Errors: "write_failed" naming the file and why.
Result<void> writeTuning(const std::filesystem::path& file, const std::string& key, const RunnerTuning& tuning);

}  // namespace lector::runner
