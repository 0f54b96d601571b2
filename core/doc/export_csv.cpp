#include "core/doc/export_csv.h"

#include <fstream>
#include <sstream>

#include "core/doc/text_util.h"

namespace lector::doc {

std::string csvField(std::string_view value)
{
    const std::string v = utf8::sanitize(value);
    if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
    std::string out = "\"";
    for (char c : v) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

std::string csvRecord(const std::vector<std::string>& fields)
{
    std::string out;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i) out += ',';
        out += csvField(fields[i]);
    }
    out += "\r\n";
    return out;
}

std::string csvLineHeader()
{
    // Appended piecewise: GCC 12 reports a false -Warray-bounds on operator+ chains of temporaries.
    std::string out;
    out.append(kUtf8Bom).append(kCsvLineHeader).append("\r\n");
    return out;
}

std::string csvLineRows(const OcrResult& r)
{
    if (r.failed()) {
        const std::string msg = std::string(kCsvErrorPrefix) + r.error->code + ": " + r.error->message;
        return csvRecord({r.image, "", msg, "", "", "", "", ""});
    }
    if (r.lines.empty()) return csvRecord({r.image, "", "", "", "", "", "", ""});
    std::string out;
    for (std::size_t i = 0; i < r.lines.size(); ++i) {
        const auto& l = r.lines[i];
        out += csvRecord({r.image, std::to_string(i + 1), l.text,
                          l.confidence ? formatNumber(roundTo(*l.confidence, 4)) : std::string(),
                          std::to_string(l.box[0]), std::to_string(l.box[1]), std::to_string(l.box[2]),
                          std::to_string(l.box[3])});
    }
    return out;
}

std::string toCsv(const std::vector<OcrResult>& results)
{
    std::string out = csvLineHeader();
    for (const auto& r : results) out += csvLineRows(r);
    return out;
}

// --- fields mode ---

std::size_t CsvFieldTable::columnOf(const std::string& name)
{
    for (std::size_t i = 0; i < m_fieldNames.size(); ++i) {
        if (m_fieldNames[i] == name) return i;
    }
    m_fieldNames.push_back(name);
    return m_fieldNames.size() - 1;
}

void CsvFieldTable::add(const OcrResult& r)
{
    Row row{r.image, {}};
    if (!r.failed()) {
        for (const auto& [name, value] : r.fields) row.cells.emplace_back(columnOf(name), value);
    }
    m_rows.push_back(std::move(row));
}

std::string CsvFieldTable::toCsv() const
{
    std::vector<std::string> header{"image"};
    header.insert(header.end(), m_fieldNames.begin(), m_fieldNames.end());
    std::string out(kUtf8Bom);
    out += csvRecord(header);
    for (const auto& row : m_rows) {
        std::vector<std::string> cells(m_fieldNames.size() + 1);
        cells[0] = row.image;
        // A repeated field name within one image keeps its first value (the JSON object does the same).
        std::vector<bool> set(m_fieldNames.size(), false);
        for (const auto& [col, value] : row.cells) {
            if (set[col]) continue;
            set[col] = true;
            cells[col + 1] = value;
        }
        out += csvRecord(cells);
    }
    return out;
}

Result<CsvFieldTable> CsvFieldTable::load(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return makeError("file_not_found", path.string() + ": cannot open the fields CSV");
    std::stringstream ss;
    ss << in.rdbuf();
    const CsvParsed parsed = parseCsv(ss.str());
    CsvFieldTable table;
    if (parsed.records.empty()) return table;
    const auto& header = parsed.records[0];
    if (header.empty() || header[0] != "image")
        return makeError("bad_result", path.string() + ": not a fields CSV (first header cell is not \"image\")");
    for (std::size_t c = 1; c < header.size(); ++c) table.m_fieldNames.push_back(header[c]);
    for (std::size_t i = 1; i < parsed.records.size(); ++i) {
        const auto& rec = parsed.records[i];
        Row row{rec.empty() ? std::string() : rec[0], {}};
        for (std::size_t c = 1; c < rec.size() && c < header.size(); ++c) {
            if (!rec[c].empty()) row.cells.emplace_back(c - 1, rec[c]);
        }
        table.m_rows.push_back(std::move(row));
    }
    return table;
}

std::string toFieldsCsv(const std::vector<OcrResult>& results)
{
    CsvFieldTable table;
    for (const auto& r : results) table.add(r);
    return table.toCsv();
}

// --- parsing ---

CsvParsed parseCsv(std::string_view text)
{
    CsvParsed out;
    std::size_t i = 0;
    if (text.substr(0, kUtf8Bom.size()) == kUtf8Bom) i = kUtf8Bom.size();
    out.completeBytes = i;
    std::vector<std::string> record;
    std::string field;
    std::size_t recordStart = i;
    bool inQuotes = false;
    while (i < text.size()) {
        const char c = text[i];
        if (inQuotes) {
            if (c == '"') {
                if (i + 1 < text.size() && text[i + 1] == '"') {
                    field += '"';
                    ++i;
                } else {
                    inQuotes = false;
                }
            } else {
                field += c;
            }
            ++i;
            continue;
        }
        if (c == '"') {
            inQuotes = true;
            ++i;
        } else if (c == ',') {
            record.push_back(std::move(field));
            field.clear();
            ++i;
        } else if (c == '\r' || c == '\n') {
            i += (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
            record.push_back(std::move(field));
            field.clear();
            out.records.push_back(std::move(record));
            out.recordStarts.push_back(recordStart);
            record.clear();
            out.completeBytes = i;
            recordStart = i;
        } else {
            field += c;
            ++i;
        }
    }
    out.partialTail = out.completeBytes < text.size();
    return out;
}

}  // namespace lector::doc
