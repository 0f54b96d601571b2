// core/runner/tuning_cache: the fused runner's load-time tuning kept between starts. A kept tuning comes
// back field for field under its own key only; another key, a malformed or truncated file, a field of the
// wrong shape are refused with the file named (the engine then measures again); a folder that cannot be
// written is an error, not a crash, and leaves no temporary files behind.
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/runner/tuning_cache.h"
#include "tests/support/lector_test.h"

using namespace lector;
using lector::runner::RunnerTuning;

namespace {

RunnerTuning sample()
{
    RunnerTuning t;
    t.transposed = {false, true, false, false, false};
    t.skinnyRows = {2, 8, 2, 8, 4};
    t.tensorCoreRows = {0, 16, 0, 0, 16};
    t.tensorCoresAgree = {true, true, true, true, true};
    t.lmHeadWarpGroup = 0b11110;
    t.chainRoutes[4] = {3, 1, 3, 1, 1};
    t.chainRoutes[32] = {0, 3, 0, 4, 4};
    t.rotationInside[32] = true;
    t.rotationInside[64] = false;
    t.singleSequence = RunnerTuning::kHeadParallel;
    t.longContextFrom = 3072;
    t.report = {"qkv: us at 1 / 8 / 32 rows ...", "decode step of 32 sequences: qkv library, ..."};
    t.persistentReport = "single-sequence steps at context 1076: ... (head-parallel decode kernels taken)";
    return t;
}

void writeText(const std::filesystem::path& p, const std::string& text)
{
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

std::string readText(const std::filesystem::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

LECTOR_TEST(aKeptTuningComesBackUnderItsOwnKeyOnly)
{
    const auto file = test::tempDir() / "a" / "b" / "tuning.json";  // folders made on write
    const std::string key = "device: NVIDIA H200, sm_90\nexecutable: /x, 1 bytes\n";
    LECTOR_CHECK_EQ(runner::readTuning(file, key).error().code, "not_found");
    LECTOR_CHECK(runner::writeTuning(file, key, sample()).ok());
    const auto back = runner::readTuning(file, key);
    LECTOR_CHECK_MSG(back.ok(), back.error().message);
    LECTOR_CHECK(*back == sample());
    const auto other = runner::readTuning(file, key + "model: another\n");
    LECTOR_CHECK_EQ(other.error().code, "stale");
    // Written again (a later start that measured afresh): replaced whole, nothing left beside it.
    RunnerTuning t = sample();
    t.chainRoutes.erase(4);
    t.singleSequence = RunnerTuning::kChain;
    t.longContextFrom = -1;
    LECTOR_CHECK(runner::writeTuning(file, key, t).ok());
    LECTOR_CHECK(*runner::readTuning(file, key) == t);
    int entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(file.parent_path())) ++entries;
    LECTOR_CHECK_EQ(entries, 1);
}

LECTOR_TEST(aDamagedTuningFileIsRefusedNamingIt)
{
    const auto dir = test::tempDir();
    const std::string key = "k";
    const auto file = dir / "tuning.json";
    LECTOR_CHECK(runner::writeTuning(file, key, sample()).ok());
    const std::string good = readText(file);
    // A graph size with the four routes of format 3 (before the LM head joined them).
    nlohmann::json fourRoutes = nlohmann::json::parse(good);
    fourRoutes["chain_routes"]["32"].erase(4);
    const std::vector<std::pair<std::string, std::string>> damaged = {
        {"empty", ""},
        {"truncated", good.substr(0, good.size() / 2)},
        {"not json", "tuning: yes\n"},
        {"a field missing", std::string(good).replace(good.find("\"single_sequence\""), 17, "\"single_sequenceX\"")},
        {"the long-context handover missing",
         std::string(good).replace(good.find("\"long_context_from\""), 19, "\"long_context_fromX\"")},
        {"an array too short", std::string(good).replace(good.find("\"transposed\""), 12, "\"transposed\": [true], \"x\"")},
        {"the rotation's choices missing",
         std::string(good).replace(good.find("\"rotation_inside\""), 17, "\"rotation_insideX\"")},
        {"a rotation choice for a graph size that is no number",
         std::string(good).replace(good.find("\"64\"", good.find("\"rotation_inside\"")), 4, "\"6x\"")},
        {"a graph size with four routes, the LM head's missing", fourRoutes.dump(1)},
        {"a rotation choice that is no yes or no",
         std::string(good).replace(good.find("false", good.find("\"rotation_inside\"")), 5, "\"no\"")},
    };
    for (const auto& [what, text] : damaged) {
        writeText(file, text);
        const auto r = runner::readTuning(file, key);
        LECTOR_CHECK_MSG(!r.ok() && r.error().code == "bad_cache", what << ": " << (r.ok() ? "accepted" : r.error().code));
        if (!r.ok()) LECTOR_CHECK_MSG(r.error().message.find(file.string()) != std::string::npos, r.error().message);
    }
}

LECTOR_TEST(aFolderThatCannotBeWrittenIsAnErrorNotACrash)
{
    const auto dir = test::tempDir();
    writeText(dir / "plain-file", "x");
    // The cache folder would have to be made inside a plain file.
    const auto file = dir / "plain-file" / "tuning.json";
    const auto r = runner::writeTuning(file, "k", sample());
    LECTOR_CHECK(!r.ok() && r.error().code == "write_failed");
    LECTOR_CHECK_MSG(r.error().message.find("tuning.json") != std::string::npos, r.error().message);
    int entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
    LECTOR_CHECK_EQ(entries, 1);  // the plain file alone
}

LECTOR_TEST(theCacheFolderFollowsTheEnvironment)
{
    const std::string key = "device: x\n";
    ::setenv("LECTOR_CACHE_DIR", "/tmp/lector-cache-test", 1);
    const auto a = runner::tuningCacheFile(key);
    LECTOR_CHECK_EQ(a.parent_path().string(), "/tmp/lector-cache-test");
    LECTOR_CHECK(a.filename().string().rfind("tuning-", 0) == 0 && a.extension() == ".json");
    // The name depends on the key alone: the same key, the same file; another key, another file.
    LECTOR_CHECK(runner::tuningCacheFile(key) == a);
    LECTOR_CHECK(runner::tuningCacheFile(key + "y") != a);
    ::unsetenv("LECTOR_CACHE_DIR");
    ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    LECTOR_CHECK_EQ(runner::tuningCacheFile(key).parent_path().string(), "/tmp/xdg/lector");
    ::unsetenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    const std::string savedHome = home ? home : "";
    ::setenv("HOME", "/home/someone", 1);
    LECTOR_CHECK_EQ(runner::tuningCacheFile(key).parent_path().string(), "/home/someone/.cache/lector");
    if (home) ::setenv("HOME", savedHome.c_str(), 1);
    else ::unsetenv("HOME");
}
