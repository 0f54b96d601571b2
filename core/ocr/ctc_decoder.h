// CTC greedy decoding of the PP-OCRv4 recogniser output with the keys file (ppocr_keys_v1.txt).
// Class ids: 0 = CTC blank, k in 1..numKeys = line k of the keys file, numKeys + 1 = space.
// Owned by PpOcrPipeline; load() on any thread, decode() is const and thread-safe.
//
// Greedy decoding keeps the first frame of every run of one non-blank id. The greedy path of these
// models often drops word spaces ("Contact:ops@example.org,+1" for "Contact: ops@example.org, +1"),
// so with recoverSpaces two cues put a space back between two kept characters (never next to one):
//  1. the space class reaches spaceProbThreshold in some frame between them (the model saw a space
//     but blank won the argmax), for any script;
//  2. at a boundary between a CJK ideograph and a Latin letter or digit, the frame distance exceeds
//     the line's expected centre distance ((narrow pitch + wide pitch) / 2, pitches measured on the
//     same line) by the factor cjkGapFactor (the model never signals spaces next to CJK).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/common/result.h"

namespace lector::pipeline {

struct CtcOptions {
    bool recoverSpaces = true;
    float spaceProbThreshold = 0.05f;
    float cjkGapFactor = 1.15f;
};

struct DecodedText {
    std::string text;
    float confidence = 0;     // mean max-probability of the kept frames; 0 when nothing was kept
    std::vector<int> frames;  // frame of each kept character (recovered spaces not included)
};

class CtcDecoder {
public:
    // Errors: "model_not_found" when the file is missing, "bad_model" when it is unreadable or empty.
    static Result<CtcDecoder> load(const std::filesystem::path& keysFile);
    explicit CtcDecoder(std::vector<std::string> keys);

    int numClasses() const { return static_cast<int>(m_keys.size()) + 2; }
    int spaceId() const { return static_cast<int>(m_keys.size()) + 1; }
    // The text of class id (blank -> "", space id -> " ", out of range -> "").
    const std::string& token(std::int64_t id) const;

    // One line: ids[t] = argmax class of frame t, maxProbs[t] = its probability, spaceProbs[t] =
    // probability of the space class (may be empty: then cue 1 is off). All spans have T entries.
    DecodedText decode(std::span<const std::int64_t> ids, std::span<const float> maxProbs,
                       std::span<const float> spaceProbs, const CtcOptions& options) const;

private:
    std::vector<std::string> m_keys;
    std::vector<std::uint8_t> m_kinds;  // CharKind per class id
};

}  // namespace lector::pipeline
