// Streaming batch output: ResultWriter appends one result at a time to a .jsonl or .csv file and pushes
// each to the OS before returning, so a killed run leaves a file that a `--resume` run can continue;
// readDoneImages()/scanOutput() read such a file back to know which images are finished. Used by
// `lector-cli batch` (and the GUI's batch dialog) from the one thread that writes; a ResultWriter is not
// thread-safe.
//
// Crash safety: a record (one JSON line, or all CSV rows of one image) goes out in one unbuffered write.
// A record cut off by a kill is recognised on the next open (no final line break) and removed: the whole
// image when it is a CSV image whose rows were cut. A failed write (full disk) truncates the file back to
// its size before the record, so what was written before is never damaged, and returns "write_failed".
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "core/common/result.h"
#include "core/doc/ocr_result.h"

namespace lector::doc {

enum class OutputFormat { JsonLines, Csv };

// From the file extension: .jsonl/.ndjson -> JsonLines, .csv -> Csv (case-insensitive).
// Error "bad_output" otherwise, naming the file.
Result<OutputFormat> outputFormatFromPath(const std::filesystem::path& path);

// What an existing output file holds.
struct OutputScan {
    std::set<std::string> done;      // images with a finished result (success or a real failure)
    std::set<std::string> failed;    // those of `done` whose result is an error
    std::uintmax_t validBytes = 0;   // file length without the cut-off tail (what open() keeps)
    bool cutTail = false;            // the file ended inside a record
    std::size_t unreadableLines = 0; // complete JSON lines that did not parse (kept, skipped)
};

// Scans an output file. A missing file is an empty scan. Results with error code "cancelled" do not
// count as done (the image was never processed). Errors: "read_failed" (exists but unreadable),
// "bad_output" (a CSV whose header is not ours), each naming the file.
Result<OutputScan> scanOutput(const std::filesystem::path& path, OutputFormat format);
// The `done` set of scanOutput(), the format taken from the extension.
Result<std::set<std::string>> readDoneImages(const std::filesystem::path& path);

class ResultWriter {
public:
    // Opens `path` for writing. append = false: creates or empties the file. append = true: keeps what
    // is there, first removing a cut-off tail (see scanOutput). A new or empty CSV gets the BOM and the
    // header. Errors: "write_failed" (cannot create/open/write, names the file and the reason),
    // "bad_output" (appending to a CSV that is not ours), "read_failed".
    static Result<std::unique_ptr<ResultWriter>> open(const std::filesystem::path& path, OutputFormat format,
                                                      bool append);
    ~ResultWriter();
    ResultWriter(const ResultWriter&) = delete;
    ResultWriter& operator=(const ResultWriter&) = delete;

    // Writes one result and hands it to the OS. On "write_failed" the file is truncated back to where
    // it was, so it still holds exactly the results written before; a later write may be retried.
    Result<void> write(const OcrResult& result);
    // Closes the file (also done by the destructor). Error "write_failed" if the close reports one.
    Result<void> close();

    const std::filesystem::path& path() const { return m_path; }
    OutputFormat format() const { return m_format; }
    std::size_t writtenCount() const { return m_written; }

private:
    ResultWriter(std::filesystem::path path, OutputFormat format, int fd, std::uintmax_t size);
    Result<void> writeBytes(const std::string& bytes);

    std::filesystem::path m_path;
    OutputFormat m_format;
    int m_fd = -1;               // POSIX descriptor, O_APPEND: every write lands at the current end
    std::uintmax_t m_size = 0;   // bytes in the file after the last good record
    bool m_regular = true;       // a regular file (only those can be truncated back)
    std::size_t m_written = 0;
};

}  // namespace lector::doc
