#include "core/common/paths.h"

#include <cstdlib>
#include <system_error>
#include <unistd.h>

#ifndef LECTOR_SOURCE_DIR
#define LECTOR_SOURCE_DIR ""
#endif

namespace lector {
namespace {

std::filesystem::path executableDir() { return executablePath().parent_path(); }

std::filesystem::path firstExisting(std::initializer_list<std::filesystem::path> candidates)
{
    std::error_code ec;
    for (const auto& c : candidates) {
        if (!c.empty() && std::filesystem::is_directory(c, ec)) return c;
    }
    return {};
}

}  // namespace

std::filesystem::path executablePath()
{
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : p;
}

std::filesystem::path cacheDir()
{
    auto set = [](const char* name) {
        const char* v = std::getenv(name);
        return v && *v ? v : nullptr;
    };
    if (const char* d = set("LECTOR_CACHE_DIR")) return d;
    if (const char* d = set("XDG_CACHE_HOME")) return std::filesystem::path(d) / "lector";
    if (const char* d = set("HOME")) return std::filesystem::path(d) / ".cache" / "lector";
    return {};
}

std::filesystem::path modelsDir()
{
    if (const char* env = std::getenv("LECTOR_MODELS_DIR")) return env;
    const auto exe = executableDir();
    auto found = firstExisting({exe / "../models", exe / "../share/lector/models",
                                std::filesystem::path(LECTOR_SOURCE_DIR) / "models"});
    return found.empty() ? std::filesystem::path(LECTOR_SOURCE_DIR) / "models" : found;
}

std::filesystem::path resourcesDir()
{
    if (const char* env = std::getenv("LECTOR_RESOURCES_DIR")) return env;
    const auto exe = executableDir();
    auto found = firstExisting({std::filesystem::path(LECTOR_SOURCE_DIR) / "resources",
                                exe / "../share/lector"});
    return found.empty() ? std::filesystem::path(LECTOR_SOURCE_DIR) / "resources" : found;
}

}  // namespace lector
