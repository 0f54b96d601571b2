// core/common/utf8.h against Python's bytes.decode("utf-8", errors="replace") (re-encoded; the table was
// printed by CPython 3.11 on the inputs below): well-formed text unchanged, each maximal invalid subpart
// one U+FFFD (overlong forms, surrogates, values past U+10FFFF, stray continuation bytes, cut-off
// characters); the streaming form gives the same text in any split of the bytes.
#include "tests/support/lector_test.h"

#include <string>
#include <vector>

#include "core/common/utf8.h"

namespace utf8 = lector::utf8;

namespace {

struct Case {
    std::string in, python;
};

// Literals are split where a hex escape would swallow the next character ("\xFF" "b").
const std::vector<Case>& cases()
{
    static const std::vector<Case> all = {
        {"plain ascii", "plain ascii"},
        {"\xC3\xA9t\xC3\xA9", "\xC3\xA9t\xC3\xA9"},
        {"\xE4\xB8\xAD\xE6\x96\x87", "\xE4\xB8\xAD\xE6\x96\x87"},
        {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},
        {"ok \xE4\xB8", "ok \xEF\xBF\xBD"},
        {"a\xFF" "b", "a\xEF\xBF\xBD" "b"},
        {"\xC0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xE0\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF0\x9F\x98", "\xEF\xBF\xBD"},
        {"\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xE4\xB8" "A", "\xEF\xBF\xBD" "A"},
        {"\xC3", "\xEF\xBF\xBD"},
        {"\xF5\x80", "\xEF\xBF\xBD\xEF\xBF\xBD"},
    };
    return all;
}

}  // namespace

LECTOR_TEST(sanitizeMatchesPythonReplace)
{
    for (const Case& c : cases()) LECTOR_CHECK_EQ(utf8::sanitize(c.in), c.python);
}

LECTOR_TEST(streamingRepairGivesTheSameTextInAnySplit)
{
    for (const Case& c : cases()) {
        for (size_t cut = 0; cut <= c.in.size(); ++cut) {
            std::string out, pending = c.in.substr(0, cut);
            pending.erase(0, utf8::appendLossy(pending, /*final=*/false, out));
            LECTOR_CHECK(pending.size() <= 3);
            pending += c.in.substr(cut);
            utf8::appendLossy(pending, /*final=*/true, out);
            LECTOR_CHECK_EQ(out, c.python);
        }
    }
}

LECTOR_TEST(validSequencesDecodeAndEncodeBack)
{
    // Table 3-7's edges: the first and last code point of each length, around the surrogates, U+10FFFF.
    for (char32_t cp : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFDu, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
        std::string s;
        utf8::append(s, cp);
        LECTOR_CHECK_EQ(utf8::validSequenceLength(s, 0), s.size());
        size_t i = 0;
        LECTOR_CHECK_EQ(static_cast<uint32_t>(utf8::nextCodePoint(s, i)), static_cast<uint32_t>(cp));
        LECTOR_CHECK_EQ(i, s.size());
    }
    LECTOR_CHECK_EQ(std::string("\xE2\x82\xAC"), [] { std::string s; utf8::append(s, 0x20AC); return s; }());  // the euro sign
    // What cannot be encoded becomes U+FFFD.
    for (char32_t cp : {0xD800u, 0xDFFFu, 0x110000u}) {
        std::string s;
        utf8::append(s, cp);
        LECTOR_CHECK_EQ(s, std::string("\xEF\xBF\xBD"));
    }
    // Not well formed at the start: invalid lead bytes, overlong, surrogate, too large, cut off.
    for (const char* bad : {"\x80", "\xC1\xBF", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE4\xB8"})
        LECTOR_CHECK_EQ(utf8::validSequenceLength(bad, 0), size_t(0));
}
