// Where Lector finds its data: models folder (PP-OCR files fetched by the setup), bundled resources,
// and the shared fixtures used by tests. Pure functions of the environment and the executable path.
#pragma once

#include <filesystem>
#include <string>

namespace lector {

// LECTOR_MODELS_DIR, else <dir of the executable>/../models or the source tree's models/ (dev builds).
std::filesystem::path modelsDir();
// LECTOR_RESOURCES_DIR, else the source tree's resources/ (dev builds) or <prefix>/share/lector.
std::filesystem::path resourcesDir();
// The user's cache folder (what can be measured again if lost): LECTOR_CACHE_DIR, else
// $XDG_CACHE_HOME/lector, else $HOME/.cache/lector; empty when none of those is set. Not created here.
std::filesystem::path cacheDir();
// This executable's path (/proc/self/exe); empty where it cannot be read.
std::filesystem::path executablePath();

}  // namespace lector
