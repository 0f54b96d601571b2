#include "core/doc/output_parser.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "core/doc/text_util.h"

namespace lector::doc {
namespace {

// --- spotting coordinate tails: "(x1,y1),(x2,y2)" and optionally two more points ---

enum class Match { Ok, Incomplete, No };

void skipBlanks(std::string_view s, std::size_t& p)
{
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
}

Match parseNumber(std::string_view s, std::size_t& p, int& value)
{
    if (p >= s.size()) return Match::Incomplete;
    if (s[p] < '0' || s[p] > '9') return Match::No;
    value = 0;
    int digits = 0;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
        if (++digits > 5) return Match::No;  // not a 0..1000 coordinate
        value = value * 10 + (s[p] - '0');
        ++p;
    }
    return Match::Ok;
}

Match expectChar(std::string_view s, std::size_t& p, char c)
{
    skipBlanks(s, p);
    if (p >= s.size()) return Match::Incomplete;
    if (s[p] != c) return Match::No;
    ++p;
    skipBlanks(s, p);
    return Match::Ok;
}

Match parsePoint(std::string_view s, std::size_t& p, int& x, int& y)
{
    if (p >= s.size()) return Match::Incomplete;
    if (s[p] != '(') return Match::No;
    ++p;
    skipBlanks(s, p);
    if (Match m = parseNumber(s, p, x); m != Match::Ok) return m;
    if (Match m = expectChar(s, p, ','); m != Match::Ok) return m;
    if (Match m = parseNumber(s, p, y); m != Match::Ok) return m;
    skipBlanks(s, p);
    if (p >= s.size()) return Match::Incomplete;
    if (s[p] != ')') return Match::No;
    ++p;
    return Match::Ok;
}

struct Tail {
    int numPoints = 0;
    int x[4]{}, y[4]{};
};

// A coordinate tail starting at s[p] == '('; on Ok, p is moved past it.
Match parseTail(std::string_view s, std::size_t& p, Tail& tail)
{
    std::size_t q = p;
    if (Match m = parsePoint(s, q, tail.x[0], tail.y[0]); m != Match::Ok) return m;
    if (Match m = expectChar(s, q, ','); m != Match::Ok) return m;
    if (Match m = parsePoint(s, q, tail.x[1], tail.y[1]); m != Match::Ok) return m;
    tail.numPoints = 2;
    p = q;
    // Four-point quads: two more points right after, else the two-point form stands.
    std::size_t r = q;
    Tail more = tail;
    if (expectChar(s, r, ',') == Match::Ok && parsePoint(s, r, more.x[2], more.y[2]) == Match::Ok &&
        expectChar(s, r, ',') == Match::Ok && parsePoint(s, r, more.x[3], more.y[3]) == Match::Ok) {
        more.numPoints = 4;
        tail = more;
        p = r;
    }
    return Match::Ok;
}

int toPixels(int v, int size)
{
    v = std::clamp(v, 0, 1000);
    return static_cast<int>(static_cast<std::int64_t>(v) * size / 1000);
}

TextLine makeLine(std::string_view text, const Tail& t, int width, int height)
{
    TextLine line;
    line.text = std::string(text);
    if (t.numPoints == 2) {
        const int x0 = toPixels(std::min(t.x[0], t.x[1]), width), x1 = toPixels(std::max(t.x[0], t.x[1]), width);
        const int y0 = toPixels(std::min(t.y[0], t.y[1]), height), y1 = toPixels(std::max(t.y[0], t.y[1]), height);
        line.box = {x0, y0, x1, y1};
        line.polygon = {PointF{float(x0), float(y0)}, PointF{float(x1), float(y0)}, PointF{float(x1), float(y1)},
                        PointF{float(x0), float(y1)}};
        return line;
    }
    int minX = width, minY = height, maxX = 0, maxY = 0;
    for (int k = 0; k < 4; ++k) {
        const int px = toPixels(t.x[k], width), py = toPixels(t.y[k], height);
        line.polygon[k] = PointF{float(px), float(py)};
        minX = std::min(minX, px);
        maxX = std::max(maxX, px);
        minY = std::min(minY, py);
        maxY = std::max(maxY, py);
    }
    line.box = {minX, minY, maxX, maxY};
    return line;
}

// Removes every occurrence of `what`, in one pass (answers with thousands of tags stay linear).
void removeAll(std::string& s, std::string_view what)
{
    std::string out;
    out.reserve(s.size());
    std::size_t pos = 0;
    for (std::size_t hit; (hit = s.find(what, pos)) != std::string::npos; pos = hit + what.size())
        out.append(s, pos, hit - pos);
    out.append(s, pos, std::string::npos);
    s = std::move(out);
}

// --- Markdown / HTML to text ---

std::string decodeEntities(std::string_view s)
{
    static const std::pair<std::string_view, std::string_view> named[] = {
        {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&apos;", "'"},
        {"&nbsp;", " "}};
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '&') {
            out += s[i];
            continue;
        }
        bool done = false;
        for (const auto& [entity, text] : named) {
            if (s.substr(i, entity.size()) == entity) {
                out += text;
                i += entity.size() - 1;
                done = true;
                break;
            }
        }
        if (!done && s.substr(i, 2) == "&#") {
            std::size_t j = i + 2;
            const bool hex = j < s.size() && (s[j] == 'x' || s[j] == 'X');
            if (hex) ++j;
            char32_t cp = 0;
            std::size_t digits = 0;
            while (j < s.size() && digits < 7 && std::isxdigit(static_cast<unsigned char>(s[j])) &&
                   (hex || std::isdigit(static_cast<unsigned char>(s[j])))) {
                cp = cp * (hex ? 16 : 10) + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(s[j]))
                                                                     ? s[j] - '0'
                                                                     : (std::tolower(s[j]) - 'a' + 10));
                ++j;
                ++digits;
            }
            if (digits && j < s.size() && s[j] == ';') {
                utf8::append(out, cp);
                i = j;
                done = true;
            }
        }
        if (!done) out += '&';
    }
    return out;
}

// The tag name of an HTML tag at s[i] == '<' ("td", "/tr", "br"), and its end; empty when it is not
// a tag ("a<b" in a formula).
std::string_view tagAt(std::string_view s, std::size_t i, std::size_t& end)
{
    std::size_t j = i + 1;
    if (j < s.size() && s[j] == '/') ++j;
    const std::size_t nameStart = j;
    while (j < s.size() && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= '0' && s[j] <= '9')))
        ++j;
    if (j == nameStart || j >= s.size() || !(s[j] == '>' || s[j] == ' ' || s[j] == '/')) return {};
    const std::size_t close = s.find('>', j);
    if (close == std::string_view::npos || close - i > 400 || s.substr(i, close - i).find('\n') != std::string_view::npos)
        return {};
    end = close + 1;
    return s.substr(i + 1, j - i - 1);
}

std::string htmlToText(std::string_view s)
{
    std::string out;
    int tableDepth = 0;
    std::size_t textStart = 0;
    auto flushText = [&](std::size_t upTo) { out += decodeEntities(s.substr(textStart, upTo - textStart)); };
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '<') continue;
        std::size_t end = 0;
        const std::string name = asciiLower(tagAt(s, i, end));
        if (name.empty()) continue;
        flushText(i);
        if (name == "table") {
            ++tableDepth;
            out += '\n';
        } else if (name == "/table") {
            tableDepth = std::max(0, tableDepth - 1);
            out += '\n';
        } else if (name == "/tr") {
            out += '\n';
        } else if (name == "/td" || name == "/th") {
            out += '\t';
        } else if (name == "br") {
            out += tableDepth ? ' ' : '\n';
        } else if (name == "/p" || name == "/div" || name == "/li" || (name.size() == 3 && name[1] == 'h')) {
            out += '\n';
        }
        i = end - 1;
        textStart = end;
    }
    flushText(s.size());
    return out;
}

// "[text](url)" -> "text", "![alt](src)" -> "alt".
std::string stripLinks(std::string_view line)
{
    std::string out;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const bool image = line[i] == '!' && i + 1 < line.size() && line[i + 1] == '[';
        if (line[i] == '[' || image) {
            const std::size_t open = image ? i + 1 : i;
            const std::size_t close = line.find("](", open);
            const std::size_t paren = close == std::string_view::npos ? close : line.find(')', close);
            if (close != std::string_view::npos && paren != std::string_view::npos &&
                line.substr(open, close - open).find('\n') == std::string_view::npos) {
                out.append(line.substr(open + 1, close - open - 1));
                i = paren;
                continue;
            }
        }
        out += line[i];
    }
    return out;
}

std::string markdownLineToText(std::string_view line)
{
    std::string_view l = line;
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.remove_suffix(1);
    const std::string_view t = trimText(l);
    if (!t.empty() && t.front() == '|') {
        if (t.find_first_not_of("|-: \t") == std::string_view::npos) return "\x01";  // separator row: drop
        std::string row;
        std::string_view cells = t.substr(1);
        if (!cells.empty() && cells.back() == '|') cells.remove_suffix(1);
        std::size_t pos = 0;
        bool first = true;
        while (pos <= cells.size()) {
            std::size_t bar = cells.find('|', pos);
            if (bar == std::string_view::npos) bar = cells.size();
            if (!first) row += '\t';
            row += trimText(cells.substr(pos, bar - pos));
            first = false;
            pos = bar + 1;
        }
        return stripLinks(row);
    }
    std::size_t hashes = 0;
    while (hashes < t.size() && t[hashes] == '#') ++hashes;
    std::string_view body = l;
    if (hashes >= 1 && hashes <= 6 && hashes < t.size() && t[hashes] == ' ') body = trimText(t.substr(hashes));
    else if (t.substr(0, 2) == "> ") body = t.substr(2);
    std::string out = stripLinks(body);
    removeAll(out, "**");
    removeAll(out, "__");
    return out;
}

std::string joinLines(const std::vector<TextLine>& lines)
{
    std::string out;
    for (const auto& l : lines) {
        if (!out.empty()) out += '\n';
        out += l.text;
    }
    return out;
}

std::string fieldsText(const FieldList& fields)
{
    std::string out;
    for (const auto& [k, v] : fields) {
        if (!out.empty()) out += '\n';
        out += k + ": " + v;
    }
    return out;
}

// A whole answer wrapped in one ``` fence (```markdown ... ```): the inside.
std::string_view unwrapFence(std::string_view text)
{
    const std::string_view t = trimText(text);
    if (t.substr(0, 3) != "```") return t;
    auto inner = fencedBlock(t);
    if (!inner) return t;
    const std::size_t after = static_cast<std::size_t>(inner->data() - t.data()) + inner->size();
    if (!trimText(t.substr(std::min(after + 3, t.size()))).empty()) return t;  // more after the fence
    return trimText(*inner);
}

}  // namespace

std::string cleanRepeatedSubstrings(std::string_view text)
{
    const std::u32string s = decodeUtf8Lossless(text);
    const std::size_t n = s.size();
    if (n < 8000) return std::string(text);
    for (std::size_t length = 2; length <= n / 10; ++length) {
        const std::u32string_view candidate(s.data() + n - length, length);
        std::size_t count = 0;
        // Back-to-back copies of the candidate, walking backwards from the end.
        for (std::size_t i = n - length;; i -= length) {
            if (std::u32string_view(s.data() + i, length) != candidate) break;
            ++count;
            if (i < length) break;
        }
        if (count >= 10) return encodeUtf8Lossless(std::u32string_view(s.data(), n - length * (count - 1)));
    }
    return std::string(text);
}

std::string normalizeSpecialTokens(std::string_view text)
{
    static const std::string_view open = "<\xEF\xBD\x9C";    // "<｜"
    static const std::string_view close = "\xEF\xBD\x9C>";   // "｜>"
    static const std::string_view placeholder = "hy_place\xE2\x96\x81holder\xE2\x96\x81no\xE2\x96\x81";  // ▁ = U+2581
    static const char* tags[] = {"<quad>", "</quad>", "<ref>", "</ref>", "<pFig>", "</pFig>"};  // no▁110 ... no▁115
    std::string out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t start = text.find(open, pos);
        if (start == std::string_view::npos) break;
        const std::size_t end = text.find(close, start + open.size());
        if (end == std::string_view::npos) break;
        out.append(text.substr(pos, start - pos));
        const std::string_view name = text.substr(start + open.size(), end - start - open.size());
        if (name.substr(0, placeholder.size()) == placeholder) {
            const std::string_view num = name.substr(placeholder.size());
            if (num.size() == 3 && num >= "110" && num <= "115") out += tags[(num[2] - '0')];
        }
        pos = end + close.size();
    }
    out.append(text.substr(pos));
    return out;
}

SpottingParse parseSpotting(std::string_view input, int width, int height)
{
    std::string text(input);
    for (std::string_view tag : {"<ref>", "</ref>", "<quad>", "</quad>"}) removeAll(text, tag);
    SpottingParse out;
    const std::string_view s = text;
    std::size_t segStart = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '(') continue;
        std::size_t p = i;
        Tail tail;
        if (parseTail(s, p, tail) != Match::Ok) continue;
        const std::string_view itemText = trimText(s.substr(segStart, i - segStart));
        if (!itemText.empty()) out.lines.push_back(makeLine(itemText, tail, width, height));
        segStart = p;
        i = p - 1;
    }
    std::string_view rest = s.substr(segStart);
    // A generation cut inside a coordinate tail leaves "text(12,3" behind: drop the unfinished tail.
    for (std::size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] != '(') continue;
        std::size_t p = i;
        Tail tail;
        if (parseTail(rest, p, tail) != Match::Incomplete) continue;
        // One complete point at the very end ("see figure (2,3)") is text, not a cut tail.
        std::size_t q = i;
        int x = 0, y = 0;
        if (parsePoint(rest, q, x, y) == Match::Ok && trimText(rest.substr(q)).empty()) continue;
        rest = rest.substr(0, i);
        break;
    }
    rest = trimText(rest);
    while (!rest.empty() && rest.front() == ',') rest = trimText(rest.substr(1));
    out.trailingText = std::string(rest);
    return out;
}

std::string markdownToText(std::string_view markdown)
{
    std::string md(markdown);
    // Figure boxes are coordinates, not text.
    for (std::size_t pos; (pos = md.find("<quad>")) != std::string::npos;) {
        const std::size_t end = md.find("</quad>", pos);
        md.erase(pos, end == std::string::npos ? std::string::npos : end + 7 - pos);
    }
    const std::string plain = htmlToText(md);
    std::string out;
    std::size_t pos = 0;
    while (pos <= plain.size()) {
        std::size_t end = plain.find('\n', pos);
        if (end == std::string::npos) end = plain.size();
        std::string line = markdownLineToText(std::string_view(plain).substr(pos, end - pos));
        pos = end + 1;
        if (line == "\x01") continue;
        while (!line.empty() && (line.back() == '\t' || line.back() == ' ')) line.pop_back();
        out += line;
        out += '\n';
    }
    // At most one blank line between paragraphs.
    std::string collapsed;
    int newlines = 0;
    for (char c : out) {
        newlines = c == '\n' ? newlines + 1 : 0;
        if (newlines <= 2) collapsed += c;
    }
    return std::string(trimText(collapsed));
}

std::optional<FieldList> parseFields(std::string_view text)
{
    if (auto f = parseLenientJsonFields(text)) return f;
    return parseKeyValueLines(text);
}

OutputKind detectOutputKind(std::string_view text)
{
    const std::string_view t = trimText(text);
    if (t.empty()) return OutputKind::Text;
    // Spotting items are single lines; a document whose figure box parses as one "item" is not spotting.
    const SpottingParse spot = parseSpotting(t, 1000, 1000);
    const bool itemsAreLines = std::all_of(spot.lines.begin(), spot.lines.end(),
                                           [](const TextLine& l) { return l.text.find('\n') == std::string::npos; });
    if (!spot.lines.empty() && itemsAreLines && spot.trailingText.size() * 4 <= t.size()) return OutputKind::Spotting;
    const std::string_view body = unwrapFence(t);
    if ((body.substr(0, 1) == "{" || t.substr(0, 7) == "```json") && parseLenientJsonFields(t)) return OutputKind::Fields;
    auto markdownLine = [](std::string_view line) {
        line = trimText(line);
        return line.substr(0, 2) == "# " || line.substr(0, 3) == "## " || line.substr(0, 4) == "### " ||
               (line.size() > 1 && line.front() == '|' && line.back() == '|');
    };
    if (body.find("<table") != std::string_view::npos || body.find("$$") != std::string_view::npos ||
        body.find("\\[") != std::string_view::npos)
        return OutputKind::Markdown;
    std::size_t pos = 0;
    while (pos < body.size()) {
        std::size_t end = body.find('\n', pos);
        if (end == std::string_view::npos) end = body.size();
        if (markdownLine(body.substr(pos, end - pos))) return OutputKind::Markdown;
        pos = end + 1;
    }
    return OutputKind::Text;
}

void applyModelOutput(const Preset& preset, const std::string& raw, int width, int height, OcrResult& result)
{
    result.raw = raw;
    result.lines.clear();
    result.fields.clear();
    result.markdown.reset();
    result.text.clear();
    const std::string cleaned = cleanRepeatedSubstrings(normalizeSpecialTokens(raw));
    const OutputKind kind = preset.output == OutputKind::Auto ? detectOutputKind(cleaned) : preset.output;
    switch (kind) {
    case OutputKind::Spotting: {
        SpottingParse spot = parseSpotting(cleaned, width, height);
        if (spot.lines.empty()) {
            // Not in spotting form at all (or empty): whatever the model said is the text.
            result.text = spot.trailingText;
            break;
        }
        result.lines = std::move(spot.lines);
        result.text = joinLines(result.lines);
        if (!spot.trailingText.empty()) result.text += "\n" + spot.trailingText;
        break;
    }
    case OutputKind::Fields: {
        if (auto fields = parseFields(cleaned)) {
            result.fields = std::move(*fields);
            result.text = fieldsText(result.fields);
        } else {
            result.text = std::string(trimText(cleaned));
        }
        break;
    }
    case OutputKind::Markdown: {
        const std::string_view md = unwrapFence(cleaned);
        result.markdown = std::string(md);
        result.text = markdownToText(md);
        break;
    }
    case OutputKind::Text:
    case OutputKind::Auto:
        result.text = std::string(trimText(cleaned));
        break;
    }
}

}  // namespace lector::doc
