// Small UTF-8 and string helpers shared by the exporters, the model-output parser and the field
// extractor in core/doc. Pure functions, callable from any thread.
//
// Model output is not always valid UTF-8 (a generation cut inside a multi-byte character, a raw
// byte token): the "lossless" decode keeps such bytes as U+DC80..U+DCFF (Python's surrogateescape)
// so that code-point algorithms (Tencent's repeat cleaner counts Python characters) can run and the
// exact bytes come back on encode. Output that must be valid (JSON, CSV) goes through utf8::sanitize().
#pragma once

#include <string>
#include <string_view>

#include "core/common/utf8.h"

namespace lector::doc {

// UTF-8 -> code points; each byte of an invalid sequence becomes U+DC00 + byte.
std::u32string decodeUtf8Lossless(std::string_view s);
// Inverse of decodeUtf8Lossless: U+DC80..U+DCFF become the original byte again.
std::string encodeUtf8Lossless(std::u32string_view s);

// Trims ASCII whitespace, no-break space (U+00A0) and the ideographic space (U+3000) at both ends.
std::string_view trimText(std::string_view s);
std::string asciiLower(std::string_view s);
bool isAsciiAlnum(char c);

// Shortest decimal text of a double that reads back to the same value ("0.987", "12", "128.1").
std::string formatNumber(double v);
// Rounds to the given number of decimals (half away from zero), e.g. roundTo(0.98765, 4) = 0.9877.
double roundTo(double v, int decimals);

}  // namespace lector::doc
