#include "app/cli/folder_scan.h"

#include <algorithm>
#include <cctype>

#include "core/common/log.h"

namespace lector::cli {
namespace fs = std::filesystem;

const std::vector<std::string>& defaultImageExtensions()
{
    static const std::vector<std::string> exts = {"jpg", "jpeg", "png", "bmp", "webp", "tif", "tiff", "ppm", "pgm"};
    return exts;
}

namespace {
std::string lowerExtension(const fs::path& p)
{
    std::string e = p.extension().string();
    if (!e.empty() && e[0] == '.') e.erase(0, 1);
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
    return e;
}
}  // namespace

Result<std::vector<BatchItem>> scanFolder(const fs::path& root, bool recursive, const std::vector<std::string>& extensions)
{
    std::error_code ec;
    if (!fs::exists(root, ec)) return makeError("file_not_found", root.string() + ": no such folder");
    if (!fs::is_directory(root, ec)) return makeError("not_a_directory", root.string() + ": not a folder");
    std::vector<BatchItem> items;
    auto consider = [&](const fs::directory_entry& entry) {
        std::error_code e2;
        if (!entry.is_regular_file(e2)) return;
        const auto ext = lowerExtension(entry.path());
        if (std::find(extensions.begin(), extensions.end(), ext) == extensions.end()) return;
        items.push_back({entry.path(), entry.path().lexically_relative(root).generic_string()});
    };
    if (recursive) {
        fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
        if (ec) return makeError("read_failed", root.string() + ": " + ec.message());
        for (; it != end; it.increment(ec)) {
            if (ec) {
                LECTOR_LOG_WARN(root.string() << ": skipping an unreadable entry: " << ec.message());
                ec.clear();
                continue;
            }
            consider(*it);
        }
    } else {
        fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
        if (ec) return makeError("read_failed", root.string() + ": " + ec.message());
        for (; it != end; it.increment(ec)) {
            if (ec) break;
            consider(*it);
        }
    }
    std::sort(items.begin(), items.end(), [](const BatchItem& a, const BatchItem& b) { return a.name < b.name; });
    return items;
}

}  // namespace lector::cli
