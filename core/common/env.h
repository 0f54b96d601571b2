// The environment variables that switch a default off for comparison (LECTOR_GRAPH_SAMPLER=0,
// LECTOR_ONNX_CUDA_CONV=cudnn ...; docs/serving.md, README). Read where the choice is made.
#pragma once

#include <cstdlib>
#include <string>

namespace lector {

// The variable's value, "" when it is not set.
inline std::string envValue(const char* name)
{
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

// The variable is set to "0": a default it names is switched off.
inline bool envOff(const char* name) { return envValue(name) == "0"; }

}  // namespace lector
