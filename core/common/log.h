// Minimal thread-safe logging to stderr. Level from LECTOR_LOG (debug|info|warn|error, default warn),
// so the CLI's stdout stays clean JSON. Safe from any thread.
#pragma once

#include <sstream>
#include <string>

namespace lector {

enum class LogLevel { Debug, Info, Warn, Error };

bool logEnabled(LogLevel level);
void logWrite(LogLevel level, const std::string& message);

}  // namespace lector

#define LECTOR_LOG_AT(level, expr)                                     \
    do {                                                               \
        if (::lector::logEnabled(level)) {                             \
            std::ostringstream lectorLogStream_;                       \
            lectorLogStream_ << expr;                                  \
            ::lector::logWrite(level, lectorLogStream_.str());         \
        }                                                              \
    } while (0)
#define LECTOR_LOG_DEBUG(expr) LECTOR_LOG_AT(::lector::LogLevel::Debug, expr)
#define LECTOR_LOG_INFO(expr) LECTOR_LOG_AT(::lector::LogLevel::Info, expr)
#define LECTOR_LOG_WARN(expr) LECTOR_LOG_AT(::lector::LogLevel::Warn, expr)
#define LECTOR_LOG_ERROR(expr) LECTOR_LOG_AT(::lector::LogLevel::Error, expr)
