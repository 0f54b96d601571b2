#include "core/runner/tuning_cache.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>  // std::rand
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/common/paths.h"

namespace lector::runner {

namespace {

constexpr int kFormat = 4;  // bump when the fields change (3: rotation_inside; 4: the LM head in chain_routes)

// FNV-1a, 64 bits: a stable name for the key (std::hash may differ between builds of the standard library).
std::string hashHex(const std::string& text)
{
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

template <class T, size_t N>
std::array<T, N> arrayOf(const nlohmann::json& j, const char* name)
{
    const nlohmann::json& a = j.at(name);
    if (!a.is_array() || a.size() != N) throw std::runtime_error(std::string(name) + ": expected " + std::to_string(N) + " values");
    std::array<T, N> out{};
    for (size_t i = 0; i < N; ++i) out[i] = a[i].get<T>();
    return out;
}

// A graph size as a JSON object's key ("32"); throws naming the field otherwise.
int graphSize(const std::string& text, const char* field)
{
    std::size_t used = 0;
    int b = 0;
    try {
        b = std::stoi(text, &used);
    } catch (const std::exception&) {  // not a number, or out of int's range
        used = 0;
    }
    if (used != text.size() || b < 1) throw std::runtime_error(std::string(field) + ": bad graph size '" + text + "'");
    return b;
}

}  // namespace

std::filesystem::path tuningCacheFile(const std::string& key)
{
    const std::filesystem::path dir = cacheDir();
    if (dir.empty()) return {};
    return dir / ("tuning-" + hashHex(key) + ".json");
}

Result<RunnerTuning> readTuning(const std::filesystem::path& file, const std::string& key)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) return makeError("not_found", file.string() + ": no tuning saved");
    std::stringstream text;
    text << in.rdbuf();
    try {
        const nlohmann::json j = nlohmann::json::parse(text.str());
        if (j.at("format").get<int>() != kFormat || j.at("key").get<std::string>() != key)
            return makeError("stale", file.string() + ": made for another card, driver, build or model");
        RunnerTuning t;
        t.transposed = arrayOf<bool, RunnerTuning::kProjections>(j, "transposed");
        t.skinnyRows = arrayOf<int, RunnerTuning::kProjections>(j, "skinny_rows");
        t.tensorCoreRows = arrayOf<int, RunnerTuning::kProjections>(j, "tensor_core_rows");
        t.tensorCoresAgree = arrayOf<bool, RunnerTuning::kProjections>(j, "tensor_cores_agree");
        t.lmHeadWarpGroup = j.at("lm_head_warp_group").get<unsigned>();
        for (const auto& [size, routes] : j.at("chain_routes").items()) {
            const int b = graphSize(size, "chain_routes");
            constexpr size_t n = RunnerTuning::kProjections;
            if (!routes.is_array() || routes.size() != n)
                throw std::runtime_error("chain_routes: expected " + std::to_string(n) + " routes a size");
            std::array<int, n> r{};
            for (size_t p = 0; p < n; ++p) r[p] = routes[p].get<int>();
            t.chainRoutes[b] = r;
        }
        for (const auto& [size, inside] : j.at("rotation_inside").items())
            t.rotationInside[graphSize(size, "rotation_inside")] = inside.get<bool>();
        t.singleSequence = j.at("single_sequence").get<int>();
        t.longContextFrom = j.at("long_context_from").get<long long>();
        t.report = j.at("report").get<std::vector<std::string>>();
        t.persistentReport = j.at("persistent_report").get<std::string>();
        return t;
    } catch (const std::exception& e) {
        return makeError("bad_cache", file.string() + ": " + e.what());
    }
}

Result<void> writeTuning(const std::filesystem::path& file, const std::string& key, const RunnerTuning& t)
{
    nlohmann::json routes = nlohmann::json::object(), inside = nlohmann::json::object();
    for (const auto& [b, r] : t.chainRoutes) routes[std::to_string(b)] = r;
    for (const auto& [b, r] : t.rotationInside) inside[std::to_string(b)] = r;
    const nlohmann::json j = {{"format", kFormat},
                              {"key", key},
                              {"transposed", t.transposed},
                              {"skinny_rows", t.skinnyRows},
                              {"tensor_core_rows", t.tensorCoreRows},
                              {"tensor_cores_agree", t.tensorCoresAgree},
                              {"lm_head_warp_group", t.lmHeadWarpGroup},
                              {"chain_routes", routes},
                              {"rotation_inside", inside},
                              {"single_sequence", t.singleSequence},
                              {"long_context_from", t.longContextFrom},
                              {"report", t.report},
                              {"persistent_report", t.persistentReport}};
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    if (ec) return makeError("write_failed", file.string() + ": cannot create its folder (" + ec.message() + ")");
    const std::filesystem::path tmp = file.string() + ".tmp" + std::to_string(std::rand());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << j.dump(1) << '\n';
        out.flush();
        if (!out) {
            out.close();
            std::filesystem::remove(tmp, ec);
            return makeError("write_failed", file.string() + ": cannot write (disk full or read-only?)");
        }
    }
    std::filesystem::rename(tmp, file, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        return makeError("write_failed", file.string() + ": " + ec.message());
    }
    return {};
}

}  // namespace lector::runner
