// Options shared by every lector-cli command that runs the engine: which model on which device, and
// what to ask it (preset, prompt, sampling). One table of options, one place that turns them into
// EngineConfig / Request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "core/engine/engine.h"

namespace lector::cli {

std::vector<OptionSpec> engineOptionSpecs();
// Usage errors come back as a message (exit code 2).
std::optional<std::string> engineConfigFromArgs(const Args& args, engine::EngineConfig& config);
std::optional<std::string> requestTemplateFromArgs(const Args& args, engine::Request& request);

// Splits "a,b, c" into trimmed items.
std::vector<std::string> splitList(const std::string& s);

}  // namespace lector::cli
