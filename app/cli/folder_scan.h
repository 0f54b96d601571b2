// Finds the images of a batch folder: by extension (case-insensitive), optionally recursive, sorted by
// path so runs and resumes see the same order. Unreadable sub-folders are skipped with a warning.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "app/cli/batch_runner.h"
#include "core/common/result.h"

namespace lector::cli {

const std::vector<std::string>& defaultImageExtensions();  // jpg jpeg png bmp webp tif tiff

// Errors: "file_not_found" (no such folder), "not_a_directory".
Result<std::vector<BatchItem>> scanFolder(const std::filesystem::path& root, bool recursive,
                                          const std::vector<std::string>& extensions);

}  // namespace lector::cli
