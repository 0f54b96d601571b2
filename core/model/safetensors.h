// SafetensorsFile: a memory-mapped .safetensors file (8-byte little-endian header length, JSON header,
// raw little-endian data). Used for model weights (HunyuanOCR shards) and for the test fixtures.
// The header is validated completely at open(): every bad file gives an Error naming the file, never a
// crash. Tensors are zero-copy views of the mapping (kept alive by the tensor's deleter), so opening a
// 2 GB checkpoint costs no copy. Thread-safe after open() (read-only).
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/result.h"

namespace lector::model {

struct TensorInfo {
    std::string name;
    at::ScalarType dtype = at::kFloat;
    std::string dtypeName;          // as written in the header: "BF16", "F32", ...
    std::vector<int64_t> shape;
    size_t dataOffset = 0;          // from the start of the data section
    size_t dataBytes = 0;
};

class SafetensorsFile : public std::enable_shared_from_this<SafetensorsFile> {
public:
    // Error codes: "file_not_found", "bad_safetensors" (message says what is wrong and where).
    static Result<std::shared_ptr<const SafetensorsFile>> open(const std::filesystem::path& path);

    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    const std::vector<TensorInfo>& tensors() const { return m_tensors; }
    const TensorInfo* find(const std::string& name) const;
    bool contains(const std::string& name) const { return find(name) != nullptr; }
    // "__metadata__" of the header (string map), or an empty object.
    const nlohmann::json& metadata() const { return m_metadata; }

    // The tensor with its stored dtype, as a read-only view of the mapping (do not write to it).
    // Throws std::out_of_range naming the tensor and file when absent.
    at::Tensor tensor(const std::string& name) const;

private:
    SafetensorsFile() = default;

    std::filesystem::path m_path;
    void* m_map = nullptr;
    size_t m_mapBytes = 0;
    const std::uint8_t* m_data = nullptr;  // start of the data section
    std::vector<TensorInfo> m_tensors;     // sorted by name
    nlohmann::json m_metadata = nlohmann::json::object();
};

// Writes tensors (contiguous CPU; F32/F16/BF16/I64/I32/U8) to a .safetensors file. For tests and tools.
Result<void> writeSafetensors(const std::filesystem::path& path,
                              const std::vector<std::pair<std::string, at::Tensor>>& tensors);

}  // namespace lector::model
