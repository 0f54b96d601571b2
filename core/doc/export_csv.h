// CSV form of results (docs/result-schema.md): RFC 4180 (CRLF record ends, fields holding a comma,
// quote, CR or LF are quoted, quotes doubled), UTF-8 with a BOM so spreadsheets read Chinese right.
// Called by the CLI, the batch writer (result_writer.h) and the GUI export; pure functions/values,
// any thread.
//
// Line mode (`--format csv`): header `image,line,text,confidence,x0,y0,x1,y1`, one row per text line,
// `line` counting from 1. Every image gets at least one row, so a batch never loses track of an input:
// - an image without text: one row with `line` and everything after it empty;
// - a failed image: one row with `line` empty and text `error: <code>: <message>`.
// Fields mode (`--csv-fields`): header `image,<field>...`, one row per image, one column per field
// name, the union over the batch in first-seen order; a failed image has empty field cells.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/doc/ocr_result.h"

namespace lector::doc {

inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
inline constexpr std::string_view kCsvLineHeader = "image,line,text,confidence,x0,y0,x1,y1";
inline constexpr std::string_view kCsvErrorPrefix = "error: ";

// One field, quoted when it holds a comma, quote, CR or LF.
std::string csvField(std::string_view value);
// One record: fields joined by commas, ended by CRLF.
std::string csvRecord(const std::vector<std::string>& fields);

// BOM + header record of line mode.
std::string csvLineHeader();
// The rows of one result in line mode (no header).
std::string csvLineRows(const OcrResult& result);
// A whole line-mode CSV text: BOM, header, the rows of every result.
std::string toCsv(const std::vector<OcrResult>& results);

// Fields mode: rows collected image by image, header computed at the end.
class CsvFieldTable {
public:
    void add(const OcrResult& result);
    // The field columns, in first-seen order (without the leading "image").
    const std::vector<std::string>& fieldNames() const { return m_fieldNames; }
    std::size_t rowCount() const { return m_rows.size(); }
    // BOM + header + one record per added image.
    std::string toCsv() const;
    // Reads a fields CSV written by toCsv() (to continue it after a resume). Errors "file_not_found",
    // "bad_result" (not a fields CSV: first header cell is not "image"), each naming the file.
    static Result<CsvFieldTable> load(const std::filesystem::path& path);

private:
    struct Row {
        std::string image;
        std::vector<std::pair<std::size_t, std::string>> cells;  // column index -> value
    };
    std::size_t columnOf(const std::string& name);
    std::vector<std::string> m_fieldNames;
    std::vector<Row> m_rows;
};

// Fields-mode CSV text of a batch.
std::string toFieldsCsv(const std::vector<OcrResult>& results);

// --- reading CSV back (resume, reload) ---

struct CsvParsed {
    std::vector<std::vector<std::string>> records;    // complete records, BOM stripped
    std::vector<std::size_t> recordStarts;            // byte offset where each record starts
    std::size_t completeBytes = 0;                    // bytes up to the end of the last complete record
    bool partialTail = false;                         // bytes after it (a record cut off by a kill)
};
// Parses RFC 4180 text (CRLF or LF record ends, quoted fields across lines). A last record that is
// not ended by a line break, or ends inside quotes, is not complete and is reported as partialTail.
CsvParsed parseCsv(std::string_view text);

}  // namespace lector::doc
