#include "core/doc/lenient_json.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/doc/text_util.h"

namespace lector::doc {
namespace {

// NOTE: the reader never fails on bad input: whatever it cannot place it skips, and a cut-off object
// is closed where the text ends. It only reports "nothing found" when no key could be read at all.

struct Value {
    enum class Kind { Null, Scalar, String, Object, Array } kind = Kind::Null;
    std::string text;                                     // String: decoded; Scalar: source text
    std::vector<std::pair<std::string, Value>> members;   // Object
    std::vector<Value> items;                             // Array
};

enum class Tok { None, LBrace, RBrace, LBracket, RBracket, Colon, Comma };

struct QuoteInfo {
    std::size_t len = 0;                 // bytes of the opening quote; 0 = not a quote
    std::vector<std::string_view> closers;
};

constexpr int kMaxDepth = 64;

bool startsWith(std::string_view s, std::size_t pos, std::string_view what)
{
    return s.substr(pos, what.size()) == what;
}

// Structural token at `pos` and its length in bytes (ASCII or full-width form).
Tok tokenAt(std::string_view s, std::size_t pos, std::size_t* len)
{
    static const struct {
        std::string_view text;
        Tok tok;
    } table[] = {
        {"{", Tok::LBrace},         {"}", Tok::RBrace},       {"[", Tok::LBracket},       {"]", Tok::RBracket},
        {":", Tok::Colon},          {",", Tok::Comma},        {"\xEF\xBD\x9B", Tok::LBrace},  // ｛
        {"\xEF\xBD\x9D", Tok::RBrace},                                                      // ｝
        {"\xEF\xBC\xBB", Tok::LBracket},                                                    // ［
        {"\xEF\xBC\xBD", Tok::RBracket},                                                    // ］
        {"\xEF\xBC\x9A", Tok::Colon},                                                       // ：
        {"\xEF\xBC\x8C", Tok::Comma},                                                       // ，
        {"\xE3\x80\x81", Tok::Comma},                                                       // 、
    };
    for (const auto& t : table) {
        if (startsWith(s, pos, t.text)) {
            if (len) *len = t.text.size();
            return t.tok;
        }
    }
    return Tok::None;
}

QuoteInfo quoteAt(std::string_view s, std::size_t pos)
{
    if (startsWith(s, pos, "\"")) return {1, {"\"", "\xE2\x80\x9D"}};
    if (startsWith(s, pos, "'")) return {1, {"'", "\xE2\x80\x99"}};
    if (startsWith(s, pos, "\xE2\x80\x9C")) return {3, {"\xE2\x80\x9D", "\""}};  // “ -> ”
    if (startsWith(s, pos, "\xE2\x80\x98")) return {3, {"\xE2\x80\x99", "'"}};   // ‘ -> ’
    return {};
}

class Parser {
public:
    explicit Parser(std::string_view s, std::size_t pos = 0) : m_s(s), m_pos(pos) {}

    std::optional<Value> parseValue(int depth)
    {
        skipSpace(true);
        if (atEnd()) return std::nullopt;
        std::size_t len = 0;
        const Tok tok = tokenAt(m_s, m_pos, &len);
        if (depth < kMaxDepth && tok == Tok::LBrace) {
            m_pos += len;
            return parseObject(depth);
        }
        if (depth < kMaxDepth && tok == Tok::LBracket) {
            m_pos += len;
            return parseArray(depth);
        }
        if (quoteAt(m_s, m_pos).len) {
            Value v;
            v.kind = Value::Kind::String;
            v.text = parseQuoted();
            return v;
        }
        return parseBare();
    }

    std::size_t position() const { return m_pos; }

private:
    bool atEnd() const { return m_pos >= m_s.size(); }

    void skipSpace(bool newlines)
    {
        while (!atEnd()) {
            const char c = m_s[m_pos];
            if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) ++m_pos;
            else if (startsWith(m_s, m_pos, "\xE3\x80\x80")) m_pos += 3;  // ideographic space
            else if (startsWith(m_s, m_pos, "\xC2\xA0")) m_pos += 2;      // no-break space
            else break;
        }
    }

    // Advances past one UTF-8 character (so skipping never splits one).
    void skipChar()
    {
        ++m_pos;
        while (!atEnd() && (static_cast<unsigned char>(m_s[m_pos]) & 0xC0) == 0x80) ++m_pos;
    }

    Value parseObject(int depth)
    {
        Value obj;
        obj.kind = Value::Kind::Object;
        while (true) {
            skipSpace(true);
            if (atEnd()) return obj;  // cut off: keep what was read
            std::size_t len = 0;
            const Tok tok = tokenAt(m_s, m_pos, &len);
            if (tok == Tok::RBrace || tok == Tok::RBracket) {
                m_pos += len;
                return obj;
            }
            if (tok == Tok::Comma) {
                m_pos += len;
                continue;
            }
            std::string key;
            if (!parseKey(key)) {
                skipChar();
                continue;
            }
            skipSpace(false);
            if (tokenAt(m_s, m_pos, &len) == Tok::Colon) {
                m_pos += len;
                auto v = parseValue(depth + 1);
                obj.members.emplace_back(key, v ? std::move(*v) : Value{});
            } else {
                obj.members.emplace_back(key, Value{});  // a key without value ({'a', 'b'})
            }
        }
    }

    Value parseArray(int depth)
    {
        Value arr;
        arr.kind = Value::Kind::Array;
        while (true) {
            skipSpace(true);
            if (atEnd()) return arr;
            std::size_t len = 0;
            const Tok tok = tokenAt(m_s, m_pos, &len);
            if (tok == Tok::RBracket || tok == Tok::RBrace) {
                m_pos += len;
                return arr;
            }
            if (tok == Tok::Comma || tok == Tok::Colon) {
                m_pos += len;
                continue;
            }
            const std::size_t before = m_pos;
            auto v = parseValue(depth + 1);
            if (v) arr.items.push_back(std::move(*v));
            if (m_pos == before) skipChar();
        }
    }

    bool parseKey(std::string& key)
    {
        if (quoteAt(m_s, m_pos).len) {
            key = std::string(trimText(parseQuoted()));
            return true;
        }
        // A bare key runs to the colon on the same line.
        const std::size_t start = m_pos;
        std::size_t p = m_pos;
        while (p < m_s.size() && m_s[p] != '\n') {
            std::size_t len = 0;
            const Tok tok = tokenAt(m_s, p, &len);
            if (tok == Tok::Colon) {
                key = std::string(trimText(m_s.substr(start, p - start)));
                m_pos = p;
                return !key.empty();
            }
            if (tok != Tok::None) return false;
            ++p;
        }
        return false;
    }

    // A closing quote counts only where the string can end: before , : } ] (ASCII or full-width),
    // a line break, another quote, or the end. Otherwise it is a quote inside the value.
    bool canEndAfter(std::size_t pos) const
    {
        Parser look(m_s, pos);
        look.skipSpace(false);
        if (look.atEnd() || m_s[look.m_pos] == '\n') return true;
        if (tokenAt(m_s, look.m_pos, nullptr) != Tok::None && tokenAt(m_s, look.m_pos, nullptr) != Tok::LBrace &&
            tokenAt(m_s, look.m_pos, nullptr) != Tok::LBracket)
            return true;
        return quoteAt(m_s, look.m_pos).len != 0;
    }

    std::string parseQuoted()
    {
        const QuoteInfo q = quoteAt(m_s, m_pos);
        m_pos += q.len;
        std::string out;
        while (!atEnd()) {
            const char c = m_s[m_pos];
            if (c == '\\' && m_pos + 1 < m_s.size()) {
                m_pos = readEscape(m_pos, out);
                continue;
            }
            bool closed = false;
            for (std::string_view closer : q.closers) {
                if (startsWith(m_s, m_pos, closer) && canEndAfter(m_pos + closer.size())) {
                    m_pos += closer.size();
                    closed = true;
                    break;
                }
            }
            if (closed) return out;
            out += c;
            ++m_pos;
        }
        return out;  // cut off inside the string
    }

    // Reads the escape at `pos` (a backslash), appends its text, returns the position after it.
    std::size_t readEscape(std::size_t pos, std::string& out) const
    {
        const char e = m_s[pos + 1];
        switch (e) {
        case 'n': out += '\n'; return pos + 2;
        case 't': out += '\t'; return pos + 2;
        case 'r': out += '\r'; return pos + 2;
        case 'b': out += '\b'; return pos + 2;
        case 'f': out += '\f'; return pos + 2;
        case 'u': {
            char32_t cp = 0;
            if (!readHex4(pos + 2, cp)) break;
            std::size_t next = pos + 6;
            if (cp >= 0xD800 && cp <= 0xDBFF && startsWith(m_s, next, "\\u")) {
                char32_t lo = 0;
                if (readHex4(next + 2, lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    next += 6;
                }
            }
            utf8::append(out, cp);
            return next;
        }
        default: break;
        }
        // \" \' \\ \/ and unknown escapes: the character itself.
        out += e;
        return pos + 2;
    }

    bool readHex4(std::size_t pos, char32_t& cp) const
    {
        if (pos + 4 > m_s.size()) return false;
        cp = 0;
        for (std::size_t i = 0; i < 4; ++i) {
            const char h = m_s[pos + i];
            int d = -1;
            if (h >= '0' && h <= '9') d = h - '0';
            else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
            if (d < 0) return false;
            cp = cp * 16 + static_cast<char32_t>(d);
        }
        return true;
    }

    // An unquoted value: up to , } ] or the line end. "1,234.56" keeps its thousands separator.
    Value parseBare()
    {
        const std::size_t start = m_pos;
        while (!atEnd() && m_s[m_pos] != '\n') {
            std::size_t len = 0;
            const Tok tok = tokenAt(m_s, m_pos, &len);
            if (tok == Tok::Comma && len == 1 && isThousandsComma(start, m_pos)) {
                ++m_pos;
                continue;
            }
            if (tok == Tok::Comma || tok == Tok::RBrace || tok == Tok::RBracket) break;
            ++m_pos;
        }
        const std::string text(trimText(m_s.substr(start, m_pos - start)));
        Value v;
        if (text.empty() || text == "null" || text == "None" || text == "NULL") return v;
        v.kind = Value::Kind::Scalar;
        v.text = text == "True" ? "true" : text == "False" ? "false" : text;
        return v;
    }

    bool isThousandsComma(std::size_t start, std::size_t comma) const
    {
        if (comma == start || !(m_s[comma - 1] >= '0' && m_s[comma - 1] <= '9')) return false;
        for (std::size_t i = start; i < comma; ++i) {
            const char c = m_s[i];
            if (!((c >= '0' && c <= '9') || c == ',' || c == '-' || c == ' ')) return false;
        }
        std::size_t digits = 0;
        std::size_t p = comma + 1;
        while (p < m_s.size() && m_s[p] >= '0' && m_s[p] <= '9') {
            ++digits;
            ++p;
        }
        return digits == 3 && (p == m_s.size() || !(isAsciiAlnum(m_s[p])));
    }

    std::string_view m_s;
    std::size_t m_pos;
};

bool isJsonNumber(const std::string& s)
{
    auto j = nlohmann::json::parse(s, nullptr, false);
    return !j.is_discarded() && (j.is_number() || j.is_boolean());
}

std::string toCompactJson(const Value& v)
{
    switch (v.kind) {
    case Value::Kind::Null: return "null";
    case Value::Kind::Scalar: return isJsonNumber(v.text) ? v.text : nlohmann::json(utf8::sanitize(v.text)).dump();
    case Value::Kind::String: return nlohmann::json(utf8::sanitize(v.text)).dump();
    case Value::Kind::Object: {
        std::string out = "{";
        for (std::size_t i = 0; i < v.members.size(); ++i) {
            if (i) out += ",";
            out += nlohmann::json(utf8::sanitize(v.members[i].first)).dump() + ":" + toCompactJson(v.members[i].second);
        }
        return out + "}";
    }
    case Value::Kind::Array: {
        std::string out = "[";
        for (std::size_t i = 0; i < v.items.size(); ++i) {
            if (i) out += ",";
            out += toCompactJson(v.items[i]);
        }
        return out + "]";
    }
    }
    return {};
}

std::string fieldText(const Value& v)
{
    switch (v.kind) {
    case Value::Kind::Null: return {};
    case Value::Kind::Scalar:
    case Value::Kind::String: return v.text;
    default: return toCompactJson(v);
    }
}

void addField(FieldList& fields, const std::string& key, std::string value)
{
    for (auto& [k, v] : fields) {
        if (k == key) {
            if (!value.empty()) v = v.empty() ? std::move(value) : v + "; " + value;
            return;
        }
    }
    fields.emplace_back(key, std::move(value));
}

// Position of the first '{' / '｛' (or '[' / '［' before it), or npos.
std::size_t findStart(std::string_view s, bool* isArray)
{
    for (std::size_t p = 0; p < s.size(); ++p) {
        const Tok tok = tokenAt(s, p, nullptr);
        if (tok == Tok::LBrace || tok == Tok::LBracket) {
            *isArray = tok == Tok::LBracket;
            return p;
        }
    }
    return std::string_view::npos;
}

std::optional<FieldList> fieldsFrom(std::string_view text)
{
    std::size_t from = 0;
    while (from < text.size()) {
        bool isArray = false;
        const std::size_t start = findStart(text.substr(from), &isArray);
        if (start == std::string_view::npos) return std::nullopt;
        Parser parser(text, from + start);
        auto value = parser.parseValue(0);
        FieldList fields;
        if (value && value->kind == Value::Kind::Object) {
            for (const auto& [k, v] : value->members)
                if (!k.empty()) addField(fields, k, fieldText(v));
        } else if (value && value->kind == Value::Kind::Array) {
            for (const auto& item : value->items) {
                if (item.kind != Value::Kind::Object) continue;
                for (const auto& [k, v] : item.members)
                    if (!k.empty()) addField(fields, k, fieldText(v));
            }
        }
        if (!fields.empty()) return fields;
        // "[1]" or "{}" in prose before the real object: look further, after what was just read (so
        // the scan stays linear however the text nests).
        from = std::max(parser.position(), from + start + 1);
    }
    return std::nullopt;
}

std::string stripBold(std::string_view s)
{
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if ((s[i] == '*' || s[i] == '_') && i + 1 < s.size() && s[i + 1] == s[i]) {
            ++i;
            continue;
        }
        out += s[i];
    }
    return out;
}

}  // namespace

std::optional<std::string_view> fencedBlock(std::string_view text)
{
    const std::size_t open = text.find("```");
    if (open == std::string_view::npos) return std::nullopt;
    std::size_t start = text.find('\n', open + 3);
    if (start == std::string_view::npos) {
        // "```json {...}" on one line: the content starts after the language tag.
        start = open + 3;
        while (start < text.size() && isAsciiAlnum(text[start])) ++start;
    } else {
        ++start;
    }
    const std::size_t close = text.find("```", start);
    return text.substr(start, close == std::string_view::npos ? std::string_view::npos : close - start);
}

std::optional<FieldList> parseLenientJsonFields(std::string_view text)
{
    if (auto block = fencedBlock(text)) {
        if (auto fields = fieldsFrom(*block)) return fields;
    }
    return fieldsFrom(text);
}

std::optional<FieldList> parseKeyValueLines(std::string_view text)
{
    FieldList fields;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string line = stripBold(trimText(text.substr(pos, end - pos)));
        pos = end + 1;
        std::string_view l = trimText(line);
        for (std::string_view bullet : {"- ", "* ", "\xE2\x80\xA2 "}) {  // •
            if (l.substr(0, bullet.size()) == bullet) l = trimText(l.substr(bullet.size()));
        }
        std::size_t colon = std::string_view::npos, colonLen = 0;
        for (std::size_t p = 0; p < l.size(); ++p) {
            std::size_t len = 0;
            if (tokenAt(l, p, &len) == Tok::Colon) {
                colon = p;
                colonLen = len;
                break;
            }
        }
        if (colon == std::string_view::npos || colon == 0 || colon > 64) continue;
        std::string_view key = trimText(l.substr(0, colon));
        std::string_view value = trimText(l.substr(colon + colonLen));
        if (value.substr(0, 2) == "//") continue;  // a URL, not a field
        auto unquote = [](std::string_view s) {
            if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
                s = s.substr(1, s.size() - 2);
            return s;
        };
        key = unquote(key);
        value = unquote(value);
        if (value.size() && value.back() == ',') value.remove_suffix(1);
        if (key.empty()) continue;
        addField(fields, std::string(key), std::string(unquote(trimText(value))));
    }
    if (fields.empty()) return std::nullopt;
    return fields;
}

}  // namespace lector::doc
