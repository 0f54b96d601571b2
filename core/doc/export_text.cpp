#include "core/doc/export_text.h"

#include <vector>

#include "core/doc/text_util.h"

namespace lector::doc {
namespace {

std::string withFinalNewline(std::string s)
{
    if (!s.empty() && s.back() != '\n') s += '\n';
    return s;
}

std::vector<std::string_view> splitLines(std::string_view text)
{
    std::vector<std::string_view> lines;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        pos = end + 1;
    }
    return lines;
}

// A table cell: no pipes, no line breaks.
std::string tableCell(std::string_view value)
{
    std::string out;
    for (std::string_view line : splitLines(value)) {
        if (!out.empty()) out += "<br>";
        out += escapeMarkdown(line);
    }
    return out;
}

}  // namespace

std::string escapeMarkdown(std::string_view text)
{
    std::string out;
    bool lineStart = true;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (lineStart) {
            // Block markers only matter at the start of a line.
            std::size_t j = i;
            while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
            if (j > i && j < text.size() && (text[j] == '.' || text[j] == ')')) {
                out.append(text.substr(i, j - i));
                out += '\\';
                out += text[j];
                i = j;
                lineStart = false;
                continue;
            }
            if (c == '#' || ((c == '+' || c == '-' || c == '=') && (i + 1 == text.size() || text[i + 1] == ' ' ||
                                                                      text[i + 1] == c))) {
                out += '\\';
            }
        }
        lineStart = (c == '\n');
        switch (c) {
        case '\\': case '`': case '*': case '_': case '[': case ']': case '<': case '>': case '|': case '~':
            out += '\\';
            break;
        default:
            break;
        }
        out += c;
    }
    return out;
}

std::string toPlainText(const OcrResult& r)
{
    if (r.failed()) return {};
    if (!r.text.empty()) return withFinalNewline(r.text);
    if (!r.fields.empty()) {
        std::string out;
        for (const auto& [k, v] : r.fields) out += k + ": " + v + "\n";
        return out;
    }
    if (r.markdown) return withFinalNewline(*r.markdown);
    return {};
}

std::string toMarkdown(const OcrResult& r)
{
    if (r.failed()) return "*error " + escapeMarkdown(r.error->code) + ": " + escapeMarkdown(r.error->message) + "*\n";
    if (r.markdown && !trimText(*r.markdown).empty()) return withFinalNewline(*r.markdown);
    std::string out;
    if (!r.fields.empty()) {
        out += "| Field | Value |\n|---|---|\n";
        for (const auto& [k, v] : r.fields) out += "| " + tableCell(k) + " | " + tableCell(v) + " |\n";
        // The text of a field result is just the fields again; OCR lines (PP-OCR extraction) are not.
        if (!r.lines.empty() && !r.text.empty()) out += "\n";
        else return out;
    }
    // Each OCR line stays a line (two trailing spaces = hard break); blank lines stay paragraph breaks.
    const auto lines = splitLines(r.text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        out += escapeMarkdown(line);
        const bool nextIsText = i + 1 < lines.size() && !trimText(lines[i + 1]).empty();
        if (!trimText(line).empty() && nextIsText) out += "  ";
        if (i + 1 < lines.size()) out += '\n';
    }
    return withFinalNewline(out);
}

}  // namespace lector::doc
