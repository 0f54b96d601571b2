#include "core/ocr/ctc_decoder.h"

#include <algorithm>
#include <fstream>
#include <numeric>

namespace lector::pipeline {
namespace {

// What a token is for the space cues.
enum CharKind : std::uint8_t {
    KindOther = 0,
    KindSpace,
    KindLatin,     // ASCII letter or digit
    KindAsciiPunct,
    KindIdeograph, // CJK ideograph, kana, hangul syllable
    KindWidePunct, // CJK / full-width punctuation and symbols
};

char32_t firstCodepoint(const std::string& s)
{
    if (s.empty()) return 0;
    const auto b = [&](size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
    const unsigned c = b(0);
    if (c < 0x80) return c;
    if ((c >> 5) == 0x6) return ((c & 0x1F) << 6) | (b(1) & 0x3F);
    if ((c >> 4) == 0xE) return ((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    if ((c >> 3) == 0x1E) return ((c & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    return 0;
}

CharKind kindOf(const std::string& token)
{
    const char32_t c = firstCodepoint(token);
    if (c == U' ') return KindSpace;
    if ((c >= U'0' && c <= U'9') || (c >= U'A' && c <= U'Z') || (c >= U'a' && c <= U'z')) return KindLatin;
    if (c > 0x20 && c < 0x7F) return KindAsciiPunct;
    if ((c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
        (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0x20000 && c <= 0x2FFFF))
        return KindIdeograph;
    if ((c >= 0x3000 && c <= 0x303F) || (c >= 0xFF00 && c <= 0xFFEF) || (c >= 0x2010 && c <= 0x206F))
        return KindWidePunct;
    return KindOther;
}

bool isNarrow(std::uint8_t k) { return k == KindLatin || k == KindAsciiPunct; }
bool isWide(std::uint8_t k) { return k == KindIdeograph || k == KindWidePunct; }

double mean(const std::vector<int>& v)
{
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

Result<CtcDecoder> CtcDecoder::load(const std::filesystem::path& keysFile)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(keysFile, ec))
        return makeError("model_not_found", keysFile.string() + ": keys file not found");
    std::ifstream in(keysFile, std::ios::binary);
    if (!in) return makeError("bad_model", keysFile.string() + ": cannot open keys file");
    std::vector<std::string> keys;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        keys.push_back(line);
    }
    if (keys.empty()) return makeError("bad_model", keysFile.string() + ": keys file is empty");
    return CtcDecoder(std::move(keys));
}

CtcDecoder::CtcDecoder(std::vector<std::string> keys) : m_keys(std::move(keys))
{
    m_kinds.resize(m_keys.size() + 2, KindOther);
    for (size_t i = 0; i < m_keys.size(); ++i) m_kinds[i + 1] = kindOf(m_keys[i]);
    m_kinds[m_keys.size() + 1] = KindSpace;
}

const std::string& CtcDecoder::token(std::int64_t id) const
{
    static const std::string kEmpty, kSpace = " ";
    if (id == spaceId()) return kSpace;
    if (id < 1 || id > static_cast<std::int64_t>(m_keys.size())) return kEmpty;
    return m_keys[static_cast<size_t>(id - 1)];
}

DecodedText CtcDecoder::decode(std::span<const std::int64_t> ids, std::span<const float> maxProbs,
                               std::span<const float> spaceProbs, const CtcOptions& options) const
{
    // Greedy path: first frame of each run of a non-blank id.
    std::vector<std::int64_t> kept;
    DecodedText out;
    double probSum = 0;
    std::int64_t prev = 0;
    for (size_t t = 0; t < ids.size(); ++t) {
        const std::int64_t id = ids[t];
        if (id != 0 && id != prev && id < numClasses()) {
            kept.push_back(id);
            out.frames.push_back(static_cast<int>(t));
            probSum += maxProbs[t];
        }
        prev = id;
    }
    if (kept.empty()) return out;
    out.confidence = static_cast<float>(probSum / static_cast<double>(kept.size()));

    // Character pitches of this line, for the CJK boundary cue.
    std::vector<int> narrowGaps, wideGaps;
    for (size_t i = 1; i < kept.size(); ++i) {
        const int gap = out.frames[i] - out.frames[i - 1];
        if (isNarrow(m_kinds[kept[i - 1]]) && isNarrow(m_kinds[kept[i]])) narrowGaps.push_back(gap);
        if (isWide(m_kinds[kept[i - 1]]) && isWide(m_kinds[kept[i]])) wideGaps.push_back(gap);
    }
    double narrowPitch = mean(narrowGaps), widePitch = mean(wideGaps);
    if (narrowPitch == 0) narrowPitch = widePitch / 1.8;  // a CJK glyph is about 1.8 Latin glyphs wide
    if (widePitch == 0) widePitch = narrowPitch * 1.8;

    for (size_t i = 0; i < kept.size(); ++i) {
        if (i > 0 && options.recoverSpaces) {
            const std::uint8_t a = m_kinds[kept[i - 1]], b = m_kinds[kept[i]];
            bool space = false;
            if (a != KindSpace && b != KindSpace) {
                if (!spaceProbs.empty()) {
                    for (int t = out.frames[i - 1] + 1; t < out.frames[i] && !space; ++t)
                        space = spaceProbs[static_cast<size_t>(t)] >= options.spaceProbThreshold;
                }
                const bool cjkBoundary = (a == KindIdeograph && b == KindLatin) || (a == KindLatin && b == KindIdeograph);
                if (!space && cjkBoundary && narrowPitch > 0) {
                    const double expected = (narrowPitch + widePitch) / 2.0;
                    space = out.frames[i] - out.frames[i - 1] > options.cjkGapFactor * expected;
                }
            }
            if (space) out.text += ' ';
        }
        out.text += token(kept[i]);
    }
    return out;
}

}  // namespace lector::pipeline
