// Pre-tokenizers of tokenizer.json: Sequence, Split (regex or literal; Removed, Isolated,
// MergedWithPrevious, MergedWithNext, Contiguous; invert), ByteLevel (add_prefix_space, use_regex with
// the GPT-2 pattern) and Digits. Regexes run on PCRE2 with UTF and UCP so \p{L}, \p{N} and look-ahead
// work as in the Oniguruma engine that HF uses; \s, \w and script classes are rewritten to Oniguruma's
// meaning first (PCRE2's \s also matches U+180E, its \w lacks marks and has all numbers, and its
// \p{Han} uses Script_Extensions, so it would match "。").
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "core/model/tokenizer_impl.h"

namespace lector::model::tokenizer_detail {

namespace {

// GPT-2's pattern, used by ByteLevel when use_regex is true (HF's default).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

pcre2_code* code(void* p) { return static_cast<pcre2_code*>(p); }

// One small match-data block per thread, reused for every pattern (only the whole-match offsets are read,
// so one ovector pair is enough even for patterns with groups).
pcre2_match_data* threadMatchData()
{
    struct Holder {
        pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
        ~Holder() { pcre2_match_data_free(md); }
    };
    thread_local Holder holder;
    return holder.md;
}

struct Part {
    size_t begin;
    size_t end;
    bool isMatch;
};

// HF's NormalizedString::split: matches and the gaps between them, then merged by `behavior`.
void splitByBehavior(std::vector<Part>& parts, SplitBehavior behavior, std::vector<Part>& out)
{
    out.clear();
    bool previousMatch = false;
    switch (behavior) {
    case SplitBehavior::Isolated:
        out = parts;
        break;
    case SplitBehavior::Removed:
        for (const auto& p : parts)
            if (!p.isMatch) out.push_back(p);
        break;
    case SplitBehavior::MergedWithPrevious:
        for (const auto& p : parts) {
            if (p.isMatch && !previousMatch && !out.empty()) out.back().end = p.end;
            else out.push_back(p);
            previousMatch = p.isMatch;
        }
        break;
    case SplitBehavior::MergedWithNext:
        for (size_t k = parts.size(); k-- > 0;) {
            const auto& p = parts[k];
            if (p.isMatch && !previousMatch && !out.empty()) out.back().begin = p.begin;
            else out.push_back(p);
            previousMatch = p.isMatch;
        }
        std::reverse(out.begin(), out.end());
        break;
    case SplitBehavior::Contiguous:
        for (const auto& p : parts) {
            if (p.isMatch == previousMatch && !out.empty()) out.back().end = p.end;
            else out.push_back(p);
            previousMatch = p.isMatch;
        }
        break;
    }
}

Result<SplitBehavior> parseBehavior(const nlohmann::json& j, const std::string& file)
{
    if (!j.is_string()) return badFile(file, "pre_tokenizer Split has no \"behavior\" string");
    const std::string b = j.get<std::string>();
    if (b == "Removed") return SplitBehavior::Removed;
    if (b == "Isolated") return SplitBehavior::Isolated;
    if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (b == "Contiguous") return SplitBehavior::Contiguous;
    return unsupported(file, "pre_tokenizer Split behavior '" + b + "' is not supported");
}

// Oniguruma's Unicode \s (the White_Space property) and \w (Letter, Mark, Decimal_Number,
// Connector_Punctuation), written as class contents.
constexpr const char* kSpaceClass = R"(\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
constexpr const char* kWordClass = R"(\p{L}\p{M}\p{Nd}\p{Pc})";

bool isGeneralCategory(std::string_view name)
{
    static const char* const kNames[] = {"L", "LC", "L&", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me",
                                         "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
                                         "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf",
                                         "Cs", "Co", "Cn", "Any"};
    if (!name.empty() && name[0] == '^') name.remove_prefix(1);
    for (const char* n : kNames)
        if (name == n) return true;
    return false;
}

// \p{NAME} with NAME a script (Han, Hiragana, Latin ...) -> \p{sc:NAME}: the Script property only, as
// in Oniguruma. PCRE2 itself says whether NAME is a script. Returns false to copy the escape unchanged.
bool scriptOnly(std::string_view name, std::string& out, char p)
{
    if (name.empty() || isGeneralCategory(name) || name.find(':') != std::string_view::npos) return false;
    const bool negated = name[0] == '^';
    if (negated) name.remove_prefix(1);
    const std::string probe = "\\p{sc:" + std::string(name) + "}";
    int err = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(probe.data()), probe.size(), PCRE2_UTF | PCRE2_UCP,
                                  &err, &offset, nullptr);
    if (!c) return false;
    pcre2_code_free(c);
    // \p{^X} is \P{X}: flip the letter instead of combining ^ with sc:.
    out += '\\', out += negated ? char(p ^ ('p' ^ 'P')) : p, out += "{sc:", out += name, out += '}';
    return true;
}

// Rewrites \s, \S, \w, \W to the classes above (inside a [...] class only the positive forms, which
// are the ones tokenizer patterns use there) and scripts to \p{sc:...}. The rest is copied as is.
std::string toPcre2Syntax(const std::string& pattern)
{
    std::string out;
    out.reserve(pattern.size() + 64);
    bool inClass = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[++i];
            if ((e == 'p' || e == 'P') && i + 1 < pattern.size() && pattern[i + 1] == '{') {
                const size_t close = pattern.find('}', i + 2);
                if (close != std::string::npos &&
                    scriptOnly(std::string_view(pattern).substr(i + 2, close - i - 2), out, e)) {
                    i = close;
                    continue;
                }
            }
            const char* cls = (e == 's' || e == 'S') ? kSpaceClass : (e == 'w' || e == 'W') ? kWordClass : nullptr;
            const bool negated = e == 'S' || e == 'W';
            if (cls && inClass && !negated) out += cls;
            else if (cls && !inClass) out += std::string(negated ? "[^" : "[") + cls + "]";
            else out += c, out += e;
            continue;
        }
        out += c;
        if (!inClass && c == '[') {
            inClass = true;
            // A ']' right after '[' or '[^' is a literal member, not the end of the class.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
        } else if (inClass && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
            const size_t end = pattern.find(":]", i + 2);  // POSIX class such as [:alpha:]
            if (end != std::string::npos) out.append(pattern, i + 1, end + 1 - i), i = end + 1;
        } else if (inClass && c == ']') {
            inClass = false;
        }
    }
    return out;
}

bool boolField(const nlohmann::json& j, const char* key, bool fallback)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace

// --- Regex -------------------------------------------------------------------------------------------

Result<std::shared_ptr<const Regex>> Regex::compile(const std::string& pattern, bool literal, const std::string& file)
{
    // PCRE2 refuses UCP together with LITERAL (it has no character classes to apply it to anyway).
    const uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    int err = 0;
    PCRE2_SIZE errOffset = 0;
    const std::string translated = literal ? pattern : toPcre2Syntax(pattern);
    pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), options, &err,
                                  &errOffset, nullptr);
    if (!c) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof(msg));
        return badFile(file, "pre_tokenizer regex does not compile at offset " + std::to_string(errOffset) + " (" +
                                 reinterpret_cast<const char*>(msg) + "): " + pattern);
    }
    // JIT makes pre-tokenizing several times faster; without it (unsupported CPU) PCRE2 interprets.
    pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);
    auto r = std::shared_ptr<Regex>(new Regex);
    r->m_code = c;
    return std::shared_ptr<const Regex>(std::move(r));
}

Regex::~Regex() { pcre2_code_free(code(m_code)); }

void Regex::findAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const
{
    pcre2_match_data* md = threadMatchData();
    const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
    const size_t n = subject.size();
    size_t start = 0;
    while (start <= n) {
        int rc = pcre2_match(code(m_code), s, n, start, PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // pathological input: the interpreter has a bigger stack
            rc = pcre2_match(code(m_code), s, n, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
        if (rc < 0) break;  // no more matches (or a resource limit: the rest stays one gap)
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t b = ov[0], e = ov[1];
        if (e <= b) {  // empty match: produces no piece; move on by one character
            if (b >= n) break;
            start = b + std::max<size_t>(1, validSequenceLength(subject, b));
            continue;
        }
        matches.emplace_back(b, e);
        start = e;
    }
}

// --- PreTokenizer ------------------------------------------------------------------------------------

Result<void> PreTokenizer::parseStep(const nlohmann::json& j, const std::string& file)
{
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
        return badFile(file, "pre_tokenizer has no \"type\"");
    const std::string type = j["type"].get<std::string>();
    if (m_byteLevel) return unsupported(file, "pre_tokenizer '" + type + "' after ByteLevel is not supported");
    if (type == "Sequence") {
        const auto it = j.find("pretokenizers");
        if (it == j.end() || !it->is_array()) return badFile(file, "pre_tokenizer Sequence has no \"pretokenizers\" array");
        for (const auto& sub : *it) {
            auto r = parseStep(sub, file);
            if (!r) return r;
        }
        return {};
    }
    Step step;
    if (type == "Split") {
        const auto pat = j.find("pattern");
        const bool isRegex = pat != j.end() && pat->is_object() && pat->contains("Regex") && (*pat)["Regex"].is_string();
        const bool isString = pat != j.end() && pat->is_object() && pat->contains("String") && (*pat)["String"].is_string();
        if (!isRegex && !isString) return badFile(file, "pre_tokenizer Split has no \"pattern\" {\"Regex\"|\"String\": ...}");
        const std::string text = (*pat)[isRegex ? "Regex" : "String"].get<std::string>();
        auto behavior = parseBehavior(j.contains("behavior") ? j["behavior"] : nlohmann::json(), file);
        if (!behavior) return behavior.error();
        if (!text.empty()) {  // an empty literal never matches: the step keeps pieces whole
            auto re = Regex::compile(text, isString, file);
            if (!re) return re.error();
            step.regex = *re;
        }
        step.behavior = *behavior;
        step.invert = boolField(j, "invert", false);
    } else if (type == "ByteLevel") {
        step.addPrefixSpace = boolField(j, "add_prefix_space", true);
        if (boolField(j, "use_regex", true)) {
            auto re = Regex::compile(kGpt2Pattern, false, file);
            if (!re) return re.error();
            step.regex = *re;
        }
        m_byteLevel = true;
    } else if (type == "Digits") {
        // char::is_numeric per character; runs stay together unless individual_digits.
        auto re = Regex::compile(R"(\p{N})", false, file);
        if (!re) return re.error();
        step.regex = *re;
        step.behavior = boolField(j, "individual_digits", false) ? SplitBehavior::Isolated : SplitBehavior::Contiguous;
    } else {
        return unsupported(file, "pre_tokenizer type '" + type + "' is not supported (supported: Sequence, Split, ByteLevel, Digits)");
    }
    m_steps.push_back(std::move(step));
    return {};
}

Result<PreTokenizer> PreTokenizer::parse(const nlohmann::json& j, const std::string& file)
{
    PreTokenizer p;
    if (j.is_null()) return p;
    auto r = p.parseStep(j, file);
    if (!r) return r.error();
    return p;
}

void PreTokenizer::apply(std::string_view text, PieceList& out) const
{
    out.buffer.assign(text);
    out.spans.clear();
    if (!text.empty()) out.spans.emplace_back(0, uint32_t(text.size()));
    std::vector<std::pair<uint32_t, uint32_t>> next;
    std::vector<std::pair<size_t, size_t>> matches;
    std::vector<Part> parts, merged;
    for (const Step& step : m_steps) {
        next.clear();
        for (auto span : out.spans) {
            if (step.addPrefixSpace && out.buffer[span.first] != ' ') {
                std::string moved = " " + out.buffer.substr(span.first, span.second - span.first);
                span = {uint32_t(out.buffer.size()), uint32_t(out.buffer.size() + moved.size())};
                out.buffer += moved;
            }
            if (!step.regex) {
                next.push_back(span);
                continue;
            }
            const std::string_view piece(out.buffer.data() + span.first, span.second - span.first);
            matches.clear();
            step.regex->findAll(piece, matches);
            parts.clear();
            size_t prev = 0;
            for (auto [b, e] : matches) {
                if (prev < b) parts.push_back({prev, b, step.invert});
                parts.push_back({b, e, !step.invert});
                prev = e;
            }
            if (prev < piece.size()) parts.push_back({prev, piece.size(), step.invert});
            splitByBehavior(parts, step.behavior, merged);
            for (const auto& p : merged)
                if (p.end > p.begin) next.emplace_back(span.first + uint32_t(p.begin), span.first + uint32_t(p.end));
        }
        out.spans.swap(next);
    }
}

}  // namespace lector::model::tokenizer_detail
