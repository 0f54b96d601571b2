#include "core/model/hunyuan/config.h"

#include <fstream>
#include <numeric>
#include <optional>

#include <nlohmann/json.hpp>

namespace lector::model::hunyuan {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads optional typed keys of one JSON object; the first type error is kept (naming file and key) and
// reported once the whole file has been read.
class KeyReader {
public:
    KeyReader(const json& obj, std::string where) : m_obj(obj), m_where(std::move(where)) {}

    void read(const char* key, int& out) { readNumber(key, out, true); }
    void read(const char* key, int64_t& out) { readNumber(key, out, true); }
    void read(const char* key, float& out) { readNumber(key, out, false); }
    void read(const char* key, bool& out)
    {
        if (const json* v = find(key)) {
            if (v->is_boolean()) out = v->get<bool>();
            else fail(key, "a boolean");
        }
    }
    void read(const char* key, std::string& out)
    {
        if (const json* v = find(key)) {
            if (v->is_string()) out = v->get<std::string>();
            else fail(key, "a string");
        }
    }
    void read(const char* key, std::vector<int>& out)
    {
        if (const json* v = find(key)) {
            if (!v->is_array()) return fail(key, "an array of integers");
            std::vector<int> r;
            for (const auto& e : *v) {
                if (!e.is_number_integer()) return fail(key, "an array of integers");
                r.push_back(e.get<int>());
            }
            out = std::move(r);
        }
    }
    void read(const char* key, std::array<float, 3>& out)
    {
        if (const json* v = find(key)) {
            if (!v->is_array() || v->size() != 3) return fail(key, "an array of 3 numbers");
            for (size_t i = 0; i < 3; ++i) {
                if (!(*v)[i].is_number()) return fail(key, "an array of 3 numbers");
                out[i] = (*v)[i].get<float>();
            }
        }
    }
    // An id that may be written as an int or a list of ints ("eos_token_id": [120007, 120020]).
    std::optional<std::vector<int>> readIds(const char* key)
    {
        const json* v = find(key);
        if (!v) return std::nullopt;
        if (v->is_number_integer()) return std::vector<int>{v->get<int>()};
        std::vector<int> ids;
        read(key, ids);
        if (m_error) return std::nullopt;
        return ids;
    }
    // Like read(), but a value must also satisfy pred, else "bad_model" naming the key.
    template <class T, class Pred>
    void check(const char* key, const T& value, Pred pred, const std::string& what)
    {
        if (!m_error && !pred(value)) fail(key, what);
    }
    const json* find(const char* key) const
    {
        auto it = m_obj.find(key);
        return it == m_obj.end() || it->is_null() ? nullptr : &*it;
    }
    const std::optional<Error>& error() const { return m_error; }

private:
    template <class T>
    void readNumber(const char* key, T& out, bool integral)
    {
        if (const json* v = find(key)) {
            if (integral ? v->is_number_integer() : v->is_number()) out = v->get<T>();
            else fail(key, integral ? "an integer" : "a number");
        }
    }
    void fail(const char* key, const std::string& what)
    {
        if (!m_error)
            m_error = makeError("bad_model", m_where + ": key \"" + key + "\" must be " + what);
    }

    const json& m_obj;
    std::string m_where;
    std::optional<Error> m_error;
};

Result<json> readJson(const fs::path& file)
{
    std::ifstream in(file, std::ios::binary);
    if (!in) return makeError("model_not_found", file.string() + ": cannot open file");
    json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return makeError("bad_model", file.string() + ": not valid JSON");
    if (!j.is_object()) return makeError("bad_model", file.string() + ": not a JSON object");
    return j;
}

void readVision(KeyReader& r, VisionConfig& v)
{
    r.read("hidden_size", v.hiddenSize);
    r.read("num_hidden_layers", v.numLayers);
    r.read("num_attention_heads", v.numHeads);
    r.read("intermediate_size", v.intermediateSize);
    r.read("patch_size", v.patchSize);
    r.read("spatial_merge_size", v.spatialMergeSize);
    r.read("out_hidden_size", v.outHiddenSize);
    r.read("max_image_size", v.maxImageSize);
    r.read("rms_norm_eps", v.layerNormEps);
    r.read("add_patchemb_bias", v.addPatchEmbedBias);
    r.read("num_channels", v.numChannels);
    r.read("temporal_patch_size", v.temporalPatchSize);
    r.read("cat_extra_token", v.catExtraToken);
    r.read("max_vit_seq_len", v.maxVitSeqLen);
    r.read("img_max_token_num", v.imgMaxTokenNum);
    r.read("hidden_act", v.hiddenAct);
    r.read("interpolate_mode", v.interpolateMode);
    auto positive = [](int x) { return x > 0; };
    r.check("hidden_size", v.hiddenSize, positive, "a positive integer");
    r.check("num_attention_heads", v.numHeads, [&](int h) { return h > 0 && v.hiddenSize % h == 0; },
            "a positive divisor of hidden_size");
    r.check("num_hidden_layers", v.numLayers, [](int x) { return x >= 0; }, "a non-negative integer");
    r.check("intermediate_size", v.intermediateSize, positive, "a positive integer");
    r.check("patch_size", v.patchSize, positive, "a positive integer");
    r.check("spatial_merge_size", v.spatialMergeSize, positive, "a positive integer");
    r.check("out_hidden_size", v.outHiddenSize, positive, "a positive integer");
    r.check("max_image_size", v.maxImageSize, [&](int s) { return s >= v.patchSize && s % v.patchSize == 0; },
            "a positive multiple of patch_size");
    r.check("num_channels", v.numChannels, [](int c) { return c == 3; }, "3 (RGB)");
    r.check("temporal_patch_size", v.temporalPatchSize, [](int t) { return t == 1; }, "1 (still images)");
    r.check("hidden_act", v.hiddenAct, [](const std::string& a) { return a == "gelu"; }, "\"gelu\"");
    r.check("interpolate_mode", v.interpolateMode, [](const std::string& m) { return m == "bilinear"; },
            "\"bilinear\"");
}

void readText(KeyReader& r, TextConfig& t)
{
    r.read("hidden_size", t.hiddenSize);
    r.read("num_hidden_layers", t.numLayers);
    r.read("num_attention_heads", t.numHeads);
    r.read("num_key_value_heads", t.numKvHeads);
    r.read("attention_head_dim", t.headDim);
    r.read("head_dim", t.headDim);
    r.read("intermediate_size", t.intermediateSize);
    r.read("vocab_size", t.vocabSize);
    r.read("max_position_embeddings", t.maxPositionEmbeddings);
    r.read("rms_norm_eps", t.rmsNormEps);
    r.read("rope_theta", t.ropeTheta);
    r.read("use_qk_norm", t.useQkNorm);
    r.read("tie_word_embeddings", t.tieWordEmbeddings);
    r.read("attention_bias", t.attentionBias);
    r.read("mlp_bias", t.mlpBias);
    r.read("hidden_act", t.hiddenAct);
    auto positive = [](int x) { return x > 0; };
    r.check("hidden_size", t.hiddenSize, positive, "a positive integer");
    r.check("num_attention_heads", t.numHeads, positive, "a positive integer");
    r.check("num_key_value_heads", t.numKvHeads,
            [&](int kv) { return kv > 0 && t.numHeads % kv == 0; }, "a positive divisor of num_attention_heads");
    r.check("head_dim", t.headDim, [](int d) { return d > 0 && d % 2 == 0; }, "a positive even integer");
    r.check("intermediate_size", t.intermediateSize, positive, "a positive integer");
    r.check("vocab_size", t.vocabSize, positive, "a positive integer");
    r.check("num_hidden_layers", t.numLayers, [](int x) { return x >= 0; }, "a non-negative integer");
    r.check("rms_norm_eps", t.rmsNormEps, [](float e) { return e > 0.0f; }, "positive");
    r.check("rope_theta", t.ropeTheta, [](float e) { return e > 0.0f; }, "positive");
}

// rope_scaling: {"type": "xdrope", "alpha": 1000, "xdrope_section": [16,16,16,16], ...}
void readRope(KeyReader& r, const std::string& where, TextConfig& t)
{
    const json* rs = r.find("rope_scaling");
    if (!rs) return;
    if (!rs->is_object()) return r.check("rope_scaling", 0, [](int) { return false; }, "an object");
    KeyReader sub(*rs, where + " rope_scaling");
    sub.read("type", t.ropeType);
    sub.read("rope_type", t.ropeType);
    sub.read("alpha", t.ropeAlpha);
    sub.read("xdrope_section", t.xdropeSection);
    const int sum = std::accumulate(t.xdropeSection.begin(), t.xdropeSection.end(), 0);
    sub.check("xdrope_section", t.xdropeSection,
              [&](const std::vector<int>& s) { return !s.empty() && sum * 2 == t.headDim; },
              "a list whose sum is head_dim / 2");
    sub.check("alpha", t.ropeAlpha, [](float a) { return a > 0.0f; }, "positive");
    if (sub.error()) r.check("rope_scaling", 0, [](int) { return false; }, "valid: " + sub.error()->message);
}

void readTokens(KeyReader& r, TokenIds& ids)
{
    r.read("bos_token_id", ids.bos);
    r.read("image_start_token_id", ids.imageStart);
    r.read("image_end_token_id", ids.imageEnd);
    r.read("image_token_id", ids.image);
    r.read("image_newline_token_id", ids.imageNewline);
    r.read("pad_id", ids.pad);
    if (auto eos = r.readIds("eos_token_id"); eos && !eos->empty()) {
        ids.stop = *eos;
        ids.eos = eos->back();
    }
    r.read("eod_token_id", ids.eos);  // the end-of-document id is the real EOS (120020)
}

void readPreprocess(KeyReader& r, PreprocessConfig& p)
{
    r.read("min_pixels", p.minPixels);
    r.read("max_pixels", p.maxPixels);
    r.read("patch_size", p.patchSize);
    r.read("merge_size", p.mergeSize);
    r.read("temporal_patch_size", p.temporalPatchSize);
    r.read("image_mean", p.mean);
    r.read("image_std", p.std);
    // Newer processors nest the pixel budget in "size": {"shortest_edge": min, "longest_edge": max}.
    if (const json* size = r.find("size"); size && size->is_object()) {
        KeyReader sub(*size, "preprocessor_config.json size");
        sub.read("shortest_edge", p.minPixels);
        sub.read("longest_edge", p.maxPixels);
    }
    r.check("min_pixels", p.minPixels, [](int64_t v) { return v > 0; }, "positive");
    r.check("max_pixels", p.maxPixels, [&](int64_t v) { return v >= p.minPixels; }, "at least min_pixels");
    r.check("patch_size", p.patchSize, [](int v) { return v > 0; }, "positive");
    r.check("merge_size", p.mergeSize, [](int v) { return v > 0; }, "positive");
    r.check("image_std", p.std, [](const std::array<float, 3>& s) { return s[0] > 0 && s[1] > 0 && s[2] > 0; },
            "three positive numbers");
}

// generation_config.json follows Hugging Face semantics: a key that is absent takes HF's default
// (repetition_penalty 1.0, temperature 1.0 when sampling), and do_sample=false means greedy.
void readGeneration(KeyReader& r, GenerationDefaults& g, TokenIds& ids)
{
    g = GenerationDefaults{};
    g.repetitionPenalty = 1.0f;
    float temperature = 1.0f;
    r.read("repetition_penalty", g.repetitionPenalty);
    r.read("do_sample", g.doSample);
    r.read("temperature", temperature);
    r.read("top_p", g.topP);
    r.read("top_k", g.topK);
    g.temperature = g.doSample ? temperature : 0.0f;
    if (!g.doSample) {
        g.topP = 1.0f;
        g.topK = 0;
    }
    if (auto eos = r.readIds("eos_token_id"); eos && !eos->empty()) ids.stop = *eos;
    int pad = -1;
    r.read("pad_token_id", pad);
    if (pad >= 0) ids.pad = pad;
    r.check("repetition_penalty", g.repetitionPenalty, [](float p) { return p > 0.0f; }, "positive");
    r.check("top_p", g.topP, [](float p) { return p > 0.0f && p <= 1.0f; }, "in (0, 1]");
    r.check("top_k", g.topK, [](int k) { return k >= 0; }, "non-negative");
    r.check("temperature", temperature, [](float t) { return t >= 0.0f; }, "non-negative");
}

}  // namespace

Result<HunyuanConfig> loadConfig(const fs::path& modelDir)
{
    std::error_code ec;
    if (!fs::is_directory(modelDir, ec))
        return makeError("model_not_found", modelDir.string() + ": model directory does not exist");
    const fs::path configPath = modelDir / "config.json";
    if (!fs::exists(configPath, ec))
        return makeError("model_not_found", configPath.string() + ": missing (not a HunyuanOCR model directory?)");

    HunyuanConfig cfg;
    auto config = readJson(configPath);
    if (!config) return config.error();
    const json& root = *config;
    KeyReader top(root, configPath.string());

    // 1.5 nests the decoder (and maybe its token ids) in "text_config"; 1.0 keeps them at the top level.
    const json* textNode = top.find("text_config");
    if (textNode && !textNode->is_object())
        return makeError("bad_model", configPath.string() + ": key \"text_config\" must be an object");
    cfg.version = textNode ? "1.5" : "1.0";
    const json& textObj = textNode ? *textNode : root;
    const std::string textWhere = configPath.string() + (textNode ? " text_config" : "");
    KeyReader text(textObj, textWhere);
    readText(text, cfg.text);
    readRope(text, textWhere, cfg.text);
    if (textNode) readTokens(text, cfg.tokens);
    readTokens(top, cfg.tokens);  // top-level ids win where both exist
    top.read("tie_word_embeddings", cfg.text.tieWordEmbeddings);
    if (text.error()) return *text.error();
    if (top.error()) return *top.error();

    const json* visionNode = top.find("vision_config");
    if (!visionNode || !visionNode->is_object())
        return makeError("bad_model", configPath.string() + ": missing object \"vision_config\"");
    KeyReader vision(*visionNode, configPath.string() + " vision_config");
    readVision(vision, cfg.vision);
    cfg.vision.posEmbedPlusTenth = cfg.version == "1.0";
    if (vision.error()) return *vision.error();

    if (const fs::path p = modelDir / "preprocessor_config.json"; fs::exists(p, ec)) {
        auto j = readJson(p);
        if (!j) return j.error();
        KeyReader r(*j, p.string());
        readPreprocess(r, cfg.preprocess);
        if (r.error()) return *r.error();
    }
    if (cfg.preprocess.patchSize != cfg.vision.patchSize ||
        cfg.preprocess.mergeSize != cfg.vision.spatialMergeSize)
        return makeError("bad_model", (modelDir / "preprocessor_config.json").string() +
                                          ": patch_size/merge_size disagree with config.json vision_config");

    if (const fs::path p = modelDir / "generation_config.json"; fs::exists(p, ec)) {
        auto j = readJson(p);
        if (!j) return j.error();
        KeyReader r(*j, p.string());
        readGeneration(r, cfg.generation, cfg.tokens);
        if (r.error()) return *r.error();
    }
    return cfg;
}

}  // namespace lector::model::hunyuan
