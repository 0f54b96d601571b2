// HunyuanConfig: the typed hyper-parameters of a HunyuanOCR model directory (docs/hunyuanocr-spec.md §1, §8).
// loadConfig() reads config.json (1.0 flat layout, or 1.5 with a nested "text_config"), plus
// generation_config.json and preprocessor_config.json when present. Called once at model load, on the
// engine thread (or by tests); the result is a plain value, safe to copy and share read-only.
// Defaults below are the published HunyuanOCR 1.0 values; every key found in the files overrides them.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/common/result.h"

namespace lector::model::hunyuan {

// "vision_config" of config.json (spec §1.1).
struct VisionConfig {
    int hiddenSize = 1152;
    int numLayers = 27;
    int numHeads = 16;                 // head_dim = hiddenSize / numHeads (72), no GQA
    int intermediateSize = 4304;
    int patchSize = 16;
    int spatialMergeSize = 2;
    int outHiddenSize = 1024;          // = the decoder's hidden size
    int maxImageSize = 2048;           // only defines the position table grid: maxImageSize / patchSize
    float layerNormEps = 1e-5f;        // "rms_norm_eps": used by the block LayerNorms and the merger RMSNorms
    bool addPatchEmbedBias = true;     // "add_patchemb_bias"
    int numChannels = 3;
    int temporalPatchSize = 1;
    int catExtraToken = 1;             // rows before the grid in the position table (unused CLS slot)
    int maxVitSeqLen = 16384;          // informational
    int imgMaxTokenNum = 4096;         // informational, not enforced (spec §2.3)
    std::string hiddenAct = "gelu";    // exact erf GELU
    std::string interpolateMode = "bilinear";
    // 1.0 resamples the position table with scale_factor = (grid + 0.1) / G; 1.5 with size = grid
    // (spec §3.2, §14). loadConfig sets this from the config layout.
    bool posEmbedPlusTenth = true;

    int headDim() const { return hiddenSize / numHeads; }
    int posGridSize() const { return maxImageSize / patchSize; }  // 128
};

// Decoder hyper-parameters: top level of a 1.0 config.json, "text_config" of a 1.5 one (spec §1.2).
struct TextConfig {
    int hiddenSize = 1024;
    int numLayers = 24;
    int numHeads = 16;
    int numKvHeads = 8;
    int headDim = 128;                 // "head_dim" / "attention_head_dim"
    int intermediateSize = 3584;
    int vocabSize = 120818;
    int maxPositionEmbeddings = 32768;
    float rmsNormEps = 1e-5f;
    float ropeTheta = 10000.0f;
    float ropeAlpha = 1000.0f;         // rope_scaling.alpha (xdrope / dynamic NTK alpha)
    std::vector<int> xdropeSection{16, 16, 16, 16};  // rope_scaling.xdrope_section, axes (p, w, h, t)
    bool useQkNorm = true;
    bool tieWordEmbeddings = true;
    bool attentionBias = false;
    bool mlpBias = false;
    std::string hiddenAct = "silu";
    std::string ropeType = "xdrope";   // rope_scaling.type
};

// Special token ids (spec §4.1, §7, §8). stop = generation_config eos ids (both 120020 and 120007).
struct TokenIds {
    int bos = 120000;
    int eos = 120020;
    int pad = 120002;
    int user = 120006;        // <｜hy_User｜>, closes the user turn; generation starts after it
    int assistant = 120007;   // <｜hy_Assistant｜>
    int systemSep = 120021;   // <｜hy_place▁holder▁no▁3｜>, ends the (empty) system turn
    int imageStart = 120118;
    int imageEnd = 120119;
    int image = 120120;       // placeholder, expanded to T_img copies
    int imageNewline = 120121;  // unused at inference (newlines are learned vectors in the vision output)
    std::vector<int> stop{120020, 120007};
};

// preprocessor_config.json (spec §1.3, §2).
struct PreprocessConfig {
    int64_t minPixels = 262144;   // 512^2
    int64_t maxPixels = 4194304;  // 2048^2
    int patchSize = 16;
    int mergeSize = 2;
    std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};  // OpenAI CLIP
    std::array<float, 3> std{0.26862954f, 0.26130258f, 0.27577711f};
    int temporalPatchSize = 1;

    int factor() const { return patchSize * mergeSize; }  // 32: the resized sides are multiples of this
};

// generation_config.json (spec §8). temperature 0 = greedy.
struct GenerationDefaults {
    float repetitionPenalty = 1.03f;
    float temperature = 0.0f;
    float topP = 1.0f;
    int topK = 0;
    bool doSample = false;
};

struct HunyuanConfig {
    VisionConfig vision;
    TextConfig text;
    TokenIds tokens;
    PreprocessConfig preprocess;
    GenerationDefaults generation;
    std::string version;  // "1.0" (flat config.json) or "1.5" (nested text_config)
};

// Reads <modelDir>/config.json (required), generation_config.json and preprocessor_config.json
// (optional: missing ones keep the 1.0 defaults above). Errors:
//   "model_not_found" - modelDir or its config.json does not exist (message names the path);
//   "bad_model"       - a file is not JSON, or a key has the wrong type or an impossible value
//                       (message names the file and the key).
// Thread-safe (no shared state).
Result<HunyuanConfig> loadConfig(const std::filesystem::path& modelDir);

}  // namespace lector::model::hunyuan
