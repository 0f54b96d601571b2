#include "core/doc/result_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "core/doc/export_csv.h"
#include "core/doc/export_json.h"
#include "core/doc/text_util.h"

namespace lector::doc {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kCancelled = "cancelled";

// Per image: finished or not, and whether its last finished result failed.
class DoneTracker {
public:
    void add(const std::string& image, bool failed, std::string_view errorCode)
    {
        if (failed && errorCode == kCancelled) {
            m_state.try_emplace(image, State::Cancelled);
            return;
        }
        m_state[image] = failed ? State::Failed : State::Ok;
    }
    void fill(OutputScan& scan) const
    {
        for (const auto& [image, state] : m_state) {
            if (state == State::Cancelled) continue;
            scan.done.insert(image);
            if (state == State::Failed) scan.failed.insert(image);
        }
    }

private:
    enum class State { Cancelled, Ok, Failed };
    std::map<std::string, State> m_state;
};

Result<std::string> readWhole(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return makeError("read_failed", path.string() + ": cannot read the existing output: " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return makeError("read_failed", path.string() + ": error while reading the existing output");
    return ss.str();
}

// Streams the file line by line: batch outputs with raw model answers can be large.
Result<void> scanJsonLines(const fs::path& path, OutputScan& scan)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return makeError("read_failed", path.string() + ": cannot read the existing output: " + std::strerror(errno));
    DoneTracker tracker;
    std::string line;
    while (std::getline(in, line)) {
        if (in.eof()) {
            // No line break after it: the record a kill cut off.
            scan.cutTail = true;
            break;
        }
        scan.validBytes += line.size() + 1;
        const std::string_view text = trimText(line);
        if (text.empty()) continue;
        Json j = Json::parse(text.begin(), text.end(), nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("image") || !j["image"].is_string()) {
            ++scan.unreadableLines;
            continue;
        }
        const Json& err = j.contains("error") ? j["error"] : Json();
        const bool failed = err.is_object();
        std::string code = failed && err.contains("code") && err["code"].is_string() ? err["code"].get<std::string>() : "";
        tracker.add(j["image"].get<std::string>(), failed, code);
    }
    if (in.bad()) return makeError("read_failed", path.string() + ": error while reading the existing output");
    tracker.fill(scan);
    return {};
}

// The first field of a record cut off by a kill, and whether the field itself is complete.
std::pair<std::string, bool> firstFieldOfTail(std::string_view tail)
{
    std::string field;
    if (!tail.empty() && tail[0] == '"') {
        for (std::size_t i = 1; i < tail.size(); ++i) {
            if (tail[i] != '"') {
                field += tail[i];
            } else if (i + 1 < tail.size() && tail[i + 1] == '"') {
                field += '"';
                ++i;
            } else {
                return {field, true};
            }
        }
        return {field, false};
    }
    const std::size_t comma = tail.find(',');
    if (comma == std::string_view::npos) return {std::string(tail), false};
    return {std::string(tail.substr(0, comma)), true};
}

Result<void> scanCsv(std::string_view text, const fs::path& path, OutputScan& scan)
{
    const CsvParsed parsed = parseCsv(text);
    if (parsed.records.empty()) {
        // Nothing complete, not even the header: start the file afresh.
        scan.validBytes = 0;
        scan.cutTail = !text.empty();
        return {};
    }
    const std::string header = csvRecord(parsed.records[0]);
    if (header != std::string(kCsvLineHeader) + "\r\n")
        return makeError("bad_output", path.string() + ": not a Lector line CSV (its header is not \"" +
                                           std::string(kCsvLineHeader) + "\"); refusing to append to it");
    std::size_t keep = parsed.records.size();
    scan.validBytes = parsed.completeBytes;
    if (parsed.partialTail) {
        scan.cutTail = true;
        // The rows of the image whose write was cut are incomplete: drop all of them.
        const auto [name, complete] = firstFieldOfTail(text.substr(parsed.completeBytes));
        auto sameImage = [&, &name = name, complete = complete](const std::string& image) {
            return complete ? image == name : image.compare(0, name.size(), name) == 0;
        };
        while (keep > 1 && !parsed.records[keep - 1].empty() && sameImage(parsed.records[keep - 1][0])) --keep;
        scan.validBytes = keep < parsed.records.size() ? parsed.recordStarts[keep] : parsed.completeBytes;
    }
    DoneTracker tracker;
    for (std::size_t i = 1; i < keep; ++i) {
        const auto& rec = parsed.records[i];
        if (rec.empty() || (rec.size() == 1 && rec[0].empty())) continue;
        const bool failed = rec.size() > 2 && rec[1].empty() && rec[2].rfind(kCsvErrorPrefix, 0) == 0;
        std::string code;
        if (failed) {
            const std::string rest = rec[2].substr(kCsvErrorPrefix.size());
            code = rest.substr(0, rest.find(": "));
        }
        tracker.add(rec[0], failed, code);
    }
    tracker.fill(scan);
    return {};
}

std::string ioReason() { return errno ? std::strerror(errno) : "I/O error"; }

}  // namespace

Result<OutputFormat> outputFormatFromPath(const fs::path& path)
{
    const std::string ext = asciiLower(path.extension().string());
    if (ext == ".jsonl" || ext == ".ndjson") return OutputFormat::JsonLines;
    if (ext == ".csv") return OutputFormat::Csv;
    return makeError("bad_output", path.string() + ": unsupported output type \"" + path.extension().string() +
                                       "\" (use .jsonl or .csv)");
}

Result<OutputScan> scanOutput(const fs::path& path, OutputFormat format)
{
    OutputScan scan;
    std::error_code ec;
    if (!fs::exists(path, ec)) return scan;
    if (!fs::is_regular_file(path, ec)) return scan;  // a device or pipe: nothing to resume from
    if (format == OutputFormat::JsonLines) {
        if (auto r = scanJsonLines(path, scan); !r.ok()) return r.error();
        return scan;
    }
    auto text = readWhole(path);
    if (!text.ok()) return text.error();
    if (auto r = scanCsv(*text, path, scan); !r.ok()) return r.error();
    return scan;
}

Result<std::set<std::string>> readDoneImages(const fs::path& path)
{
    auto format = outputFormatFromPath(path);
    if (!format.ok()) return format.error();
    auto scan = scanOutput(path, *format);
    if (!scan.ok()) return scan.error();
    return std::move(scan->done);
}

// --- ResultWriter ---

ResultWriter::ResultWriter(fs::path path, OutputFormat format, int fd, std::uintmax_t size)
    : m_path(std::move(path)), m_format(format), m_fd(fd), m_size(size)
{
    struct stat st {};
    m_regular = ::fstat(m_fd, &st) == 0 && S_ISREG(st.st_mode);
}

ResultWriter::~ResultWriter() { (void)close(); }

Result<std::unique_ptr<ResultWriter>> ResultWriter::open(const fs::path& path, OutputFormat format, bool append)
{
    std::uintmax_t size = 0;
    std::error_code ec;
    if (append && fs::is_regular_file(path, ec)) {
        auto scan = scanOutput(path, format);
        if (!scan.ok()) return scan.error();
        size = scan->validBytes;
        if (fs::file_size(path, ec) != size) {
            fs::resize_file(path, size, ec);
            if (ec) return makeError("write_failed", path.string() + ": cannot remove the cut-off last record: " + ec.message());
        }
    }
    // No stdio buffer: each record is handed to the OS by write() before write() returns here, and
    // after a failure nothing half-written waits in a buffer to come out later.
    const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (append ? 0 : O_TRUNC);
    errno = 0;
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return makeError("write_failed", path.string() + ": cannot open for writing: " + ioReason());
    std::unique_ptr<ResultWriter> w(new ResultWriter(path, format, fd, size));
    if (format == OutputFormat::Csv && size == 0) {
        if (auto r = w->writeBytes(csvLineHeader()); !r.ok()) return r.error();
    }
    return w;
}

Result<void> ResultWriter::writeBytes(const std::string& bytes)
{
    if (m_fd < 0) return makeError("write_failed", m_path.string() + ": the output file is closed");
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(m_fd, bytes.data() + done, bytes.size() - done);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        const std::string reason = n == 0 ? std::string("nothing written") : ioReason();
        std::string kept = "the results written before are kept";
        // Take back the part of the record that did make it, so the file ends on a whole record.
        if (m_regular && done > 0 && ::ftruncate(m_fd, static_cast<off_t>(m_size)) != 0)
            kept = "the file may end with a partial record (" + ioReason() + ")";
        return makeError("write_failed", m_path.string() + ": cannot write: " + reason + "; " + kept);
    }
    m_size += bytes.size();
    return {};
}

Result<void> ResultWriter::write(const OcrResult& result)
{
    const std::string record =
        m_format == OutputFormat::JsonLines ? toJsonLine(result) + "\n" : csvLineRows(result);
    auto r = writeBytes(record);
    if (r.ok()) ++m_written;
    return r;
}

Result<void> ResultWriter::close()
{
    if (m_fd < 0) return {};
    errno = 0;
    const int rc = ::close(m_fd);
    m_fd = -1;
    if (rc != 0) return makeError("write_failed", m_path.string() + ": error on close: " + ioReason());
    return {};
}

}  // namespace lector::doc
