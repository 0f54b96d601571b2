#include "core/model/hunyuan/weights.h"

#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace lector::model::hunyuan {
namespace {

namespace fs = std::filesystem;

// Checkpoints saved after transformers 4.52 may prefix vision tensors with "vit.vit." (vLLM's mapper
// accepts both); we store every name in the "vit." form.
std::string canonicalName(const std::string& name)
{
    static const std::string kDoubled = "vit.vit.";
    if (name.rfind(kDoubled, 0) == 0) return name.substr(4);
    return name;
}

Error shardError(const Error& e)
{
    // SafetensorsFile says "file_not_found"/"read_failed"/"bad_safetensors"; the model API speaks of models.
    return makeError(e.code == "file_not_found" ? "model_not_found" : "bad_model", e.message);
}

}  // namespace

Result<WeightStore> WeightStore::open(const fs::path& modelDir)
{
    std::error_code ec;
    if (!fs::is_directory(modelDir, ec))
        return makeError("model_not_found", modelDir.string() + ": model directory does not exist");

    WeightStore store;
    store.m_modelDir = modelDir;
    const fs::path indexPath = modelDir / "model.safetensors.index.json";
    const fs::path singlePath = modelDir / "model.safetensors";

    auto addEntry = [&](const std::string& name, const std::shared_ptr<const SafetensorsFile>& file,
                        const TensorInfo* info) -> std::optional<Error> {
        const std::string canon = canonicalName(name);
        if (!store.m_entries.emplace(canon, Entry{file, info}).second)
            return makeError("bad_model", file->path().string() + ": tensor '" + canon + "' appears twice");
        return std::nullopt;
    };

    if (fs::exists(indexPath, ec)) {
        std::ifstream in(indexPath, std::ios::binary);
        if (!in) return makeError("model_not_found", indexPath.string() + ": cannot open file");
        const auto index = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
        if (index.is_discarded() || !index.is_object())
            return makeError("bad_model", indexPath.string() + ": not valid JSON");
        const auto map = index.find("weight_map");
        if (map == index.end() || !map->is_object())
            return makeError("bad_model", indexPath.string() + ": missing object \"weight_map\"");
        std::map<std::string, std::shared_ptr<const SafetensorsFile>> shards;
        for (auto it = map->begin(); it != map->end(); ++it) {
            if (!it.value().is_string())
                return makeError("bad_model", indexPath.string() + ": weight_map entry '" + it.key() +
                                                  "' is not a file name");
            const std::string shardName = it.value().get<std::string>();
            auto& shard = shards[shardName];
            if (!shard) {
                const fs::path shardPath = modelDir / shardName;
                if (!fs::exists(shardPath, ec))
                    return makeError("model_not_found", shardPath.string() + ": missing (listed in " +
                                                            indexPath.filename().string() + ")");
                auto file = SafetensorsFile::open(shardPath);
                if (!file) return shardError(file.error());
                shard = *file;
            }
            const TensorInfo* info = shard->find(it.key());
            if (!info)
                return makeError("bad_model", indexPath.string() + ": tensor '" + it.key() + "' is listed in " +
                                                  shardName + " but that file does not hold it");
            if (auto err = addEntry(it.key(), shard, info)) return *err;
        }
    } else if (fs::exists(singlePath, ec)) {
        auto file = SafetensorsFile::open(singlePath);
        if (!file) return shardError(file.error());
        for (const auto& info : (*file)->tensors())
            if (auto err = addEntry(info.name, *file, &info)) return *err;
    } else {
        return makeError("model_not_found", modelDir.string() + ": neither model.safetensors.index.json nor "
                                                                "model.safetensors is present");
    }
    if (store.m_entries.empty())
        return makeError("bad_model", modelDir.string() + ": the checkpoint holds no tensors");
    return store;
}

const WeightStore::Entry& WeightStore::entry(const std::string& name) const
{
    auto it = m_entries.find(canonicalName(name));
    if (it == m_entries.end())
        throw std::out_of_range("weight '" + name + "' is not in the checkpoint at " + m_modelDir.string());
    return it->second;
}

bool WeightStore::contains(const std::string& name) const
{
    return m_entries.count(canonicalName(name)) != 0;
}

at::Tensor WeightStore::get(const std::string& name, at::ScalarType dtype, at::Device device) const
{
    const Entry& e = entry(name);
    // copy=true: the stored view aliases a read-only mapping, so never hand it out even when no
    // conversion is needed.
    return e.file->tensor(e.info->name).to(device, dtype, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

Result<at::Tensor> WeightStore::load(const std::string& name, const std::vector<int64_t>& expectedShape,
                                     at::ScalarType dtype, at::Device device) const
{
    auto it = m_entries.find(canonicalName(name));
    if (it == m_entries.end())
        return makeError("bad_model", m_modelDir.string() + ": the checkpoint has no tensor '" + name + "'");
    const auto& shape = it->second.info->shape;
    if (!expectedShape.empty() && shape != expectedShape) {
        auto str = [](const std::vector<int64_t>& s) {
            std::string r = "[";
            for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
            return r + "]";
        };
        return makeError("bad_model", it->second.file->path().string() + ": tensor '" + name + "' has shape " +
                                          str(shape) + ", the config implies " + str(expectedShape));
    }
    return get(name, dtype, device);
}

std::vector<int64_t> WeightStore::shape(const std::string& name) const
{
    return entry(name).info->shape;
}

std::vector<std::string> WeightStore::names() const
{
    std::vector<std::string> out;
    out.reserve(m_entries.size());
    for (const auto& [name, e] : m_entries) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace lector::model::hunyuan
