// WeightStore: the tensors of a HunyuanOCR model directory, by checkpoint name (spec §10), e.g.
// "vit.layers.0.self_attn.q_proj.weight", "model.embed_tokens.weight". Opens either the shards listed in
// model.safetensors.index.json or a single model.safetensors; all files stay memory-mapped (zero copy)
// until get() converts a tensor. Names saved with a doubled "vit.vit." prefix are found under "vit.".
// Built once at model load on the engine thread; const methods are thread-safe afterwards.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/result.h"
#include "core/model/safetensors.h"

namespace lector::model::hunyuan {

class WeightStore {
public:
    // Errors: "model_not_found" - the directory, the index or a shard it names does not exist
    //         (message names the missing file); "bad_model" - malformed index JSON, a bad safetensors
    //         header, or an index entry naming a tensor its shard does not hold (message names the file
    //         and the tensor).
    static Result<WeightStore> open(const std::filesystem::path& modelDir);

    WeightStore() = default;

    bool contains(const std::string& name) const;
    // A fresh contiguous tensor converted to dtype on device (a copy, never a view of the mapping).
    // Throws std::out_of_range naming the tensor when it is absent.
    at::Tensor get(const std::string& name, at::ScalarType dtype = at::kFloat,
                   at::Device device = at::kCPU) const;
    // get() for model loaders: "bad_model" naming the tensor and the model directory when it is absent
    // or its shape is not expectedShape (an empty expectedShape skips the shape check).
    Result<at::Tensor> load(const std::string& name, const std::vector<int64_t>& expectedShape,
                            at::ScalarType dtype = at::kFloat, at::Device device = at::kCPU) const;
    // Throws std::out_of_range naming the tensor when it is absent.
    std::vector<int64_t> shape(const std::string& name) const;
    // Every tensor name (canonical form, i.e. "vit." not "vit.vit."), sorted.
    std::vector<std::string> names() const;
    const std::filesystem::path& modelDir() const { return m_modelDir; }

private:
    struct Entry {
        std::shared_ptr<const SafetensorsFile> file;
        const TensorInfo* info = nullptr;  // owned by file
    };
    const Entry& entry(const std::string& name) const;  // throws std::out_of_range

    std::filesystem::path m_modelDir;
    std::unordered_map<std::string, Entry> m_entries;  // canonical name -> location
};

}  // namespace lector::model::hunyuan
