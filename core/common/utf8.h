// UTF-8 for the whole of lector_core: one rule for what is well formed (Unicode Table 3-7: no overlong
// forms, no surrogates, nothing past U+10FFFF) and one for repairing what is not (each maximal subpart
// of an invalid sequence becomes one U+FFFD, as Python's decode(errors="replace") and Rust's
// String::from_utf8_lossy do, so the tokenizer's text equals Hugging Face's byte for byte and the
// exporters write what a Python reader of the same bytes would see). Pure functions, any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lector::utf8 {

// Length of the well-formed sequence starting at s[i] (1..4), or 0 when the bytes there are not one
// (invalid lead byte, bad continuation, overlong, surrogate, > U+10FFFF, or cut off by the end).
std::size_t validSequenceLength(std::string_view s, std::size_t i);
// Decodes the code point at s[i], which must start a well-formed sequence, and advances i past it.
char32_t nextCodePoint(std::string_view s, std::size_t& i);
// Appends the encoding of one code point; surrogates and values past U+10FFFF append U+FFFD.
void append(std::string& out, char32_t cp);
// Appends the repaired text of `bytes` to `out` and returns how many bytes were consumed. When `final`
// is false, a trailing sequence that is incomplete but could still become valid is left unconsumed (at
// most 3 bytes), so feeding the rest later gives the same text as one call over all the bytes.
std::size_t appendLossy(std::string_view bytes, bool final, std::string& out);
// A well-formed copy of s: every maximal invalid subpart replaced by U+FFFD.
std::string sanitize(std::string_view s);

}  // namespace lector::utf8
