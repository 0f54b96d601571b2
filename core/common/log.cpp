#include "core/common/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace lector {
namespace {

LogLevel thresholdFromEnv()
{
    const char* v = std::getenv("LECTOR_LOG");
    if (!v) return LogLevel::Warn;
    if (!std::strcmp(v, "debug")) return LogLevel::Debug;
    if (!std::strcmp(v, "info")) return LogLevel::Info;
    if (!std::strcmp(v, "error")) return LogLevel::Error;
    return LogLevel::Warn;
}

const char* levelName(LogLevel l)
{
    switch (l) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warn: return "warning";
    case LogLevel::Error: return "error";
    }
    return "";
}

}  // namespace

bool logEnabled(LogLevel level)
{
    static const LogLevel threshold = thresholdFromEnv();
    return level >= threshold;
}

void logWrite(LogLevel level, const std::string& message)
{
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    std::fprintf(stderr, "lector: %s: %s\n", levelName(level), message.c_str());
}

}  // namespace lector
