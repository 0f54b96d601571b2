#include "core/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace lector::model {
namespace {

constexpr size_t kMaxHeaderBytes = 100u << 20;  // the format's own limit is 100 MB

struct DTypeEntry {
    const char* name;
    at::ScalarType type;
    size_t bytes;
};
constexpr DTypeEntry kDTypes[] = {
    {"F32", at::kFloat, 4},  {"F16", at::kHalf, 2},  {"BF16", at::kBFloat16, 2}, {"F64", at::kDouble, 8},
    {"I64", at::kLong, 8},   {"I32", at::kInt, 4},   {"I16", at::kShort, 2},     {"I8", at::kChar, 1},
    {"U8", at::kByte, 1},    {"BOOL", at::kBool, 1},
};

const DTypeEntry* dtypeByName(const std::string& n)
{
    for (const auto& d : kDTypes)
        if (n == d.name) return &d;
    return nullptr;
}

const DTypeEntry* dtypeByType(at::ScalarType t)
{
    for (const auto& d : kDTypes)
        if (t == d.type) return &d;
    return nullptr;
}

Error bad(const std::filesystem::path& p, const std::string& what)
{
    return makeError("bad_safetensors", p.string() + ": " + what);
}

}  // namespace

Result<std::shared_ptr<const SafetensorsFile>> SafetensorsFile::open(const std::filesystem::path& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        return makeError(err == ENOENT ? "file_not_found" : "read_failed",
                         path.string() + ": " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return bad(path, "not a regular file");
    }
    const size_t fileBytes = static_cast<size_t>(st.st_size);
    if (fileBytes < 8) {
        ::close(fd);
        return bad(path, "file is " + std::to_string(fileBytes) + " bytes, shorter than the 8-byte header length");
    }
    void* map = ::mmap(nullptr, fileBytes, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return bad(path, std::string("mmap failed: ") + std::strerror(errno));

    std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
    file->m_path = path;
    file->m_map = map;
    file->m_mapBytes = fileBytes;
    const auto* bytes = static_cast<const std::uint8_t*>(map);

    std::uint64_t headerBytes = 0;
    for (int i = 7; i >= 0; --i) headerBytes = (headerBytes << 8) | bytes[i];
    if (headerBytes > kMaxHeaderBytes || headerBytes > fileBytes - 8)
        return bad(path, "header length " + std::to_string(headerBytes) + " exceeds the file (" +
                             std::to_string(fileBytes) + " bytes)");
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(bytes + 8, bytes + 8 + headerBytes);
    } catch (const std::exception& e) {
        return bad(path, std::string("header is not valid JSON: ") + e.what());
    }
    if (!header.is_object()) return bad(path, "header is not a JSON object");

    file->m_data = bytes + 8 + headerBytes;
    const size_t dataBytes = fileBytes - 8 - headerBytes;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (it.value().is_object()) file->m_metadata = it.value();
            continue;
        }
        const auto& v = it.value();
        if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets") ||
            !v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() ||
            v["data_offsets"].size() != 2)
            return bad(path, "entry '" + it.key() + "' lacks dtype/shape/data_offsets");
        TensorInfo info;
        info.name = it.key();
        info.dtypeName = v["dtype"].get<std::string>();
        const DTypeEntry* dt = dtypeByName(info.dtypeName);
        if (!dt) return bad(path, "tensor '" + info.name + "' has unsupported dtype " + info.dtypeName);
        info.dtype = dt->type;
        size_t numel = 1;
        for (const auto& d : v["shape"]) {
            if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0))
                return bad(path, "tensor '" + info.name + "' has a bad shape");
            const auto n = d.get<uint64_t>();
            if (n != 0 && numel > (SIZE_MAX / 16) / n) return bad(path, "tensor '" + info.name + "' is too large");
            numel *= n;
            info.shape.push_back(static_cast<int64_t>(n));
        }
        const auto& off = v["data_offsets"];
        if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            return bad(path, "tensor '" + info.name + "' has bad data_offsets");
        const auto begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
        if (begin > end || end > dataBytes)
            return bad(path, "tensor '" + info.name + "' data [" + std::to_string(begin) + ", " +
                                 std::to_string(end) + ") lies outside the " + std::to_string(dataBytes) +
                                 "-byte data section (truncated file?)");
        if (end - begin != numel * dt->bytes)
            return bad(path, "tensor '" + info.name + "' has " + std::to_string(end - begin) +
                                 " bytes but its shape and dtype need " + std::to_string(numel * dt->bytes));
        info.dataOffset = begin;
        info.dataBytes = end - begin;
        file->m_tensors.push_back(std::move(info));
    }
    std::sort(file->m_tensors.begin(), file->m_tensors.end(),
              [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
    return std::shared_ptr<const SafetensorsFile>(std::move(file));
}

SafetensorsFile::~SafetensorsFile()
{
    if (m_map) ::munmap(m_map, m_mapBytes);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const
{
    auto it = std::lower_bound(m_tensors.begin(), m_tensors.end(), name,
                               [](const TensorInfo& t, const std::string& n) { return t.name < n; });
    return it != m_tensors.end() && it->name == name ? &*it : nullptr;
}

at::Tensor SafetensorsFile::tensor(const std::string& name) const
{
    const TensorInfo* info = find(name);
    if (!info) throw std::out_of_range(m_path.string() + ": no tensor named '" + name + "'");
    const auto elemBytes = at::elementSize(info->dtype);
    auto* ptr = const_cast<std::uint8_t*>(m_data + info->dataOffset);
    const auto options = at::TensorOptions().dtype(info->dtype);
    if (reinterpret_cast<std::uintptr_t>(ptr) % elemBytes != 0) {
        // Unaligned data (legal in the format): copy into an aligned tensor.
        auto out = at::empty(info->shape, options);
        std::memcpy(out.data_ptr(), ptr, info->dataBytes);
        return out;
    }
    auto keepAlive = shared_from_this();
    return at::from_blob(ptr, info->shape, [keepAlive](void*) {}, options);
}

Result<void> writeSafetensors(const std::filesystem::path& path,
                              const std::vector<std::pair<std::string, at::Tensor>>& tensors)
{
    nlohmann::json header = nlohmann::json::object();
    std::vector<at::Tensor> datas;
    size_t offset = 0;
    for (const auto& [name, t] : tensors) {
        const DTypeEntry* dt = dtypeByType(t.scalar_type());
        if (!dt) return makeError("unsupported", name + ": dtype not supported by writeSafetensors");
        auto c = t.to(at::kCPU).contiguous();
        const size_t n = c.numel() * dt->bytes;
        header[name] = {{"dtype", dt->name}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + n}}};
        offset += n;
        datas.push_back(c);
    }
    std::string h = header.dump();
    while ((h.size() + 8) % 8) h.push_back(' ');
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return makeError("write_failed", path.string() + ": cannot open for writing");
    std::uint64_t len = h.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (const auto& d : datas) out.write(static_cast<const char*>(d.data_ptr()), static_cast<std::streamsize>(d.numel() * d.element_size()));
    out.flush();
    if (!out) return makeError("write_failed", path.string() + ": write failed (disk full?)");
    return {};
}

}  // namespace lector::model
