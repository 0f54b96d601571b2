#include "core/doc/field_extractor.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>

#include "core/doc/lenient_json.h"
#include "core/doc/text_util.h"

namespace lector::doc {
namespace {

// NOTE: positions below are byte offsets into a line's normalised text (CJK-internal spaces removed,
// so "姓 名" matches 姓名); values are cut from that text too.

struct Line {
    std::string text;    // normalised
    std::string lower;   // ASCII-lowercased copy, same offsets
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    int height() const { return std::max(1, y1 - y0); }
};

struct Hit {
    std::size_t rule = 0;
    std::size_t line = 0;
    std::size_t start = 0, end = 0;
};

bool isAsciiByte(char c) { return (static_cast<unsigned char>(c) & 0x80) == 0; }

// Removes spaces that sit between two non-ASCII characters (OCR often spaces out CJK labels).
std::string normaliseText(std::string_view s)
{
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const bool space = s[i] == ' ' || s[i] == '\t';
        const bool ideographicSpace = s.substr(i, 3) == "\xE3\x80\x80";
        if (space || ideographicSpace) {
            std::size_t j = i + (space ? 1 : 3);
            while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
            const bool cjkBefore = !out.empty() && !isAsciiByte(out.back());
            const bool cjkAfter = j < s.size() && !isAsciiByte(s[j]);
            if (cjkBefore && cjkAfter) {
                i = j - 1;
                continue;
            }
            out += ' ';
            i = j - 1;
            continue;
        }
        out += s[i];
    }
    return std::string(trimText(out));
}

bool wordBoundaryOk(const std::string& lower, std::size_t start, std::size_t end, const std::string& label)
{
    // Only ASCII labels need word boundaries ("total" must not match "subtotal").
    if (!label.empty() && isAsciiAlnum(label.front()) && start > 0 && isAsciiAlnum(lower[start - 1])) return false;
    if (!label.empty() && isAsciiAlnum(label.back()) && end < lower.size() && isAsciiAlnum(lower[end])) return false;
    return true;
}

std::vector<Hit> findHits(const std::vector<Line>& lines, const std::vector<FieldRule>& rules)
{
    std::vector<Hit> all;
    for (std::size_t li = 0; li < lines.size(); ++li) {
        std::vector<Hit> hits;
        for (std::size_t ri = 0; ri < rules.size(); ++ri) {
            for (const auto& label : rules[ri].labels) {
                const std::string l = asciiLower(normaliseText(label));
                if (l.empty()) continue;
                for (std::size_t pos = lines[li].lower.find(l); pos != std::string::npos;
                     pos = lines[li].lower.find(l, pos + 1)) {
                    if (wordBoundaryOk(lines[li].lower, pos, pos + l.size(), l)) hits.push_back({ri, li, pos, pos + l.size()});
                }
            }
        }
        // Overlapping hits: the longer label wins (价税合计 over 合计), then the earlier field.
        std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
            const std::size_t la = a.end - a.start, lb = b.end - b.start;
            return la != lb ? la > lb : a.rule < b.rule;
        });
        std::vector<Hit> kept;
        for (const auto& h : hits) {
            const bool overlaps = std::any_of(kept.begin(), kept.end(),
                                              [&](const Hit& k) { return h.start < k.end && k.start < h.end; });
            if (!overlaps) kept.push_back(h);
        }
        std::sort(kept.begin(), kept.end(), [](const Hit& a, const Hit& b) { return a.start < b.start; });
        all.insert(all.end(), kept.begin(), kept.end());
    }
    return all;
}

class Extractor {
public:
    Extractor(std::vector<Line> lines, std::vector<FieldRule> rules)
        : m_lines(std::move(lines)), m_rules(std::move(rules)), m_hits(findHits(m_lines, m_rules))
    {
        for (const auto& r : m_rules) {
            std::optional<std::regex> re;
            if (!r.pattern.empty()) {
                try {
                    re.emplace(r.pattern, std::regex::ECMAScript);
                } catch (const std::regex_error&) {
                    // Presets are validated on load; a bad ad-hoc pattern just means "no pattern".
                }
            }
            m_regex.push_back(std::move(re));
        }
    }

    FieldList run()
    {
        FieldList out;
        for (std::size_t ri = 0; ri < m_rules.size(); ++ri) {
            std::string value = valueFromLabels(ri);
            if (value.empty()) value = fallbackValue(ri);
            if (!value.empty()) out.emplace_back(m_rules[ri].name, std::move(value));
        }
        return out;
    }

private:
    bool startsWithLabel(std::size_t li) const
    {
        return std::any_of(m_hits.begin(), m_hits.end(), [&](const Hit& h) { return h.line == li && h.start <= 3; });
    }

    // Text of line `li` from byte `from` up to the next label hit in that line.
    std::string_view segment(std::size_t li, std::size_t from) const
    {
        std::size_t to = m_lines[li].text.size();
        for (const auto& h : m_hits)
            if (h.line == li && h.start >= from && h.start < to) to = h.start;
        return std::string_view(m_lines[li].text).substr(from, to - from);
    }

    std::string cleanValue(std::size_t ri, std::string_view v) const
    {
        auto stripSeparators = [](std::string_view s) {
            while (true) {
                s = trimText(s);
                if (!s.empty() && (s.front() == ':' || s.front() == '.')) s.remove_prefix(1);
                else if (s.substr(0, 3) == "\xEF\xBC\x9A") s.remove_prefix(3);  // ：
                else return s;
            }
        };
        v = stripSeparators(v);
        for (bool again = true; again;) {
            again = false;
            for (const auto& prefix : m_rules[ri].stripPrefixes) {
                if (!prefix.empty() && v.substr(0, prefix.size()) == prefix) {
                    v = stripSeparators(v.substr(prefix.size()));
                    again = true;
                }
            }
        }
        return std::string(trimText(v));
    }

    // The value a candidate text gives: the pattern's match, or the whole text without a pattern.
    std::string accept(std::size_t ri, const std::string& candidate) const
    {
        if (candidate.empty()) return {};
        if (!m_regex[ri]) return candidate;
        std::smatch m;
        if (std::regex_search(candidate, m, *m_regex[ri])) return m.str(0);
        return {};
    }

    bool sameRow(const Line& a, const Line& b) const
    {
        const int overlap = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
        return overlap * 2 >= std::min(a.height(), b.height());
    }

    std::vector<std::size_t> linesRightOf(std::size_t li) const
    {
        const Line& l = m_lines[li];
        std::vector<std::size_t> out;
        for (std::size_t k = 0; k < m_lines.size(); ++k) {
            if (k != li && sameRow(l, m_lines[k]) && m_lines[k].x0 >= l.x1 - l.height() / 2 && !startsWithLabel(k))
                out.push_back(k);
        }
        std::sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) { return m_lines[a].x0 < m_lines[b].x0; });
        if (out.size() > 3) out.resize(3);
        return out;
    }

    std::optional<std::size_t> lineBelow(std::size_t li, int anchorX) const
    {
        const Line& l = m_lines[li];
        const int h = l.height();
        std::optional<std::size_t> best;
        int bestGap = 0;
        for (std::size_t k = 0; k < m_lines.size(); ++k) {
            const Line& m = m_lines[k];
            if (k == li || m.y0 < l.y0 + h / 2 || sameRow(l, m)) continue;
            const int gap = m.y0 - l.y1;
            if (gap > 2 * h) continue;
            if (m.x1 < l.x0 - h || m.x0 > std::max(l.x1, anchorX) + 2 * h) continue;  // not under the label
            if (!best || gap < bestGap) {
                best = k;
                bestGap = gap;
            }
        }
        return best;
    }

    // Lines continuing a multi-line value that ends on line `li` and starts near x = anchorX.
    std::string continueBelow(std::size_t li, int anchorX, std::string value) const
    {
        for (int n = 0; n < 3; ++n) {
            const Line& l = m_lines[li];
            const int tol = std::max(3 * l.height() / 2, (l.x1 - l.x0) / 10);
            std::optional<std::size_t> next;
            for (std::size_t k = 0; k < m_lines.size(); ++k) {
                const Line& m = m_lines[k];
                if (k == li || m.y0 < l.y0 + l.height() / 2 || m.y0 - l.y1 > l.height()) continue;
                if (std::abs(m.x0 - anchorX) > tol || startsWithLabel(k)) continue;
                if (!next || m.y0 < m_lines[*next].y0) next = k;
            }
            if (!next) break;
            const std::string& t = m_lines[*next].text;
            if (!value.empty() && !t.empty() && isAsciiAlnum(value.back()) && isAsciiAlnum(t.front())) value += ' ';
            value += t;
            li = *next;
        }
        return value;
    }

    struct Found {
        std::string value;
        std::size_t line = 0;
        int anchorX = 0;
    };

    std::optional<Found> valueForHit(const Hit& hit) const
    {
        const std::size_t ri = hit.rule;
        const Line& l = m_lines[hit.line];
        // 1. After the label in the same recognised line.
        const std::string rest = cleanValue(ri, segment(hit.line, hit.end));
        if (std::string v = accept(ri, rest); !v.empty()) {
            const double frac = l.text.empty() ? 0.0 : double(l.text.size() - rest.size()) / double(l.text.size());
            return Found{v, hit.line, l.x0 + int(std::lround(frac * (l.x1 - l.x0)))};
        }
        // 2. The nearest lines to the right, 3. the line below.
        for (std::size_t k : linesRightOf(hit.line)) {
            if (std::string v = accept(ri, cleanValue(ri, segment(k, 0))); !v.empty()) return Found{v, k, m_lines[k].x0};
        }
        if (auto k = lineBelow(hit.line, l.x1); k && !startsWithLabel(*k)) {
            if (std::string v = accept(ri, cleanValue(ri, segment(*k, 0))); !v.empty()) return Found{v, *k, m_lines[*k].x0};
        }
        return std::nullopt;
    }

    static double numberOf(const std::string& v)
    {
        std::string digits;
        for (char c : v)
            if ((c >= '0' && c <= '9') || c == '.' || c == '-') digits += c;
        try {
            return digits.empty() ? -1e300 : std::stod(digits);
        } catch (...) {
            return -1e300;
        }
    }

    std::string valueFromLabels(std::size_t ri) const
    {
        std::vector<Found> found;
        for (const auto& hit : m_hits) {
            if (hit.rule != ri) continue;
            if (auto f = valueForHit(hit)) found.push_back(std::move(*f));
        }
        if (found.empty()) return {};
        const FieldRule& rule = m_rules[ri];
        Found chosen = found.front();
        if (rule.pick == FieldRule::Pick::Last) chosen = found.back();
        if (rule.pick == FieldRule::Pick::Largest) {
            chosen = *std::max_element(found.begin(), found.end(), [](const Found& a, const Found& b) {
                return numberOf(a.value) < numberOf(b.value);
            });
        }
        if (rule.multiline) return continueBelow(chosen.line, chosen.anchorX, chosen.value);
        return chosen.value;
    }

    std::string fallbackValue(std::size_t ri) const
    {
        const FieldRule& rule = m_rules[ri];
        if (rule.fallback == FieldRule::Fallback::Pattern && m_regex[ri]) {
            for (const auto& l : m_lines) {
                std::smatch m;
                if (std::regex_search(l.text, m, *m_regex[ri])) return m.str(0);
            }
        }
        if (rule.fallback == FieldRule::Fallback::FirstLine) {
            for (std::size_t k = 0; k < m_lines.size(); ++k)
                if (!m_lines[k].text.empty() && !startsWithLabel(k)) return m_lines[k].text;
        }
        return {};
    }

    std::vector<Line> m_lines;
    std::vector<FieldRule> m_rules;
    std::vector<Hit> m_hits;
    std::vector<std::optional<std::regex>> m_regex;
};

}  // namespace

void extractFieldsFromLines(const Preset& preset, OcrResult& result, const std::vector<std::string>& fieldNames)
{
    std::vector<FieldRule> rules;
    if (fieldNames.empty()) {
        rules = preset.fields;
    } else {
        for (const auto& name : fieldNames) {
            if (const FieldRule* r = preset.findField(name)) rules.push_back(*r);
            else rules.push_back(FieldRule{name, {name}, {}, {}, false, FieldRule::Fallback::None, FieldRule::Pick::First});
        }
    }
    std::vector<Line> lines;
    for (const auto& tl : result.lines) {
        Line l;
        l.text = normaliseText(tl.text);
        l.lower = asciiLower(l.text);
        l.x0 = std::min(tl.box[0], tl.box[2]);
        l.x1 = std::max(tl.box[0], tl.box[2]);
        l.y0 = std::min(tl.box[1], tl.box[3]);
        l.y1 = std::max(tl.box[1], tl.box[3]);
        lines.push_back(std::move(l));
    }
    result.fields = Extractor(std::move(lines), std::move(rules)).run();
}

}  // namespace lector::doc
