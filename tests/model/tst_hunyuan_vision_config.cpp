// HunyuanOCR vision side, the parts that need no forward pass: config loading (the fixture model's 1.0
// flat config.json and a crafted 1.5-style nested one), WeightStore over shards and its errors, smart
// resize against the spec's worked examples, and the position-table interpolation against PyTorch's
// formula on a table whose values are their own coordinates.
#include "tests/support/lector_test.h"

#include <fstream>

#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/hunyuan/weights.h"

namespace fs = std::filesystem;
namespace hy = lector::model::hunyuan;

namespace {

fs::path tinyModel() { return lector::test::fixture("fixtures/hunyuan/tiny_model"); }

void writeText(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A copy of the tiny model directory to break things in.
fs::path copyOfTinyModel()
{
    const auto dir = lector::test::tempDir() / "model";
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(tinyModel())) {
        fs::copy_file(e.path(), dir / e.path().filename());
        fs::permissions(dir / e.path().filename(), fs::perms::owner_read | fs::perms::owner_write);
    }
    return dir;
}

bool contains(const std::string& haystack, const std::string& needle)
{
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

LECTOR_TEST(loadsTinyModelFlatConfig)
{
    auto cfg = hy::loadConfig(tinyModel());
    LECTOR_CHECK_MSG(cfg.ok(), cfg.error().message);
    LECTOR_CHECK_EQ(cfg->version, std::string("1.0"));
    LECTOR_CHECK(cfg->vision.posEmbedPlusTenth);
    const auto& v = cfg->vision;
    LECTOR_CHECK_EQ(v.hiddenSize, 32);
    LECTOR_CHECK_EQ(v.numLayers, 2);
    LECTOR_CHECK_EQ(v.numHeads, 2);
    LECTOR_CHECK_EQ(v.intermediateSize, 64);
    LECTOR_CHECK_EQ(v.patchSize, 16);
    LECTOR_CHECK_EQ(v.spatialMergeSize, 2);
    LECTOR_CHECK_EQ(v.outHiddenSize, 32);
    LECTOR_CHECK_EQ(v.maxImageSize, 2048);
    LECTOR_CHECK_EQ(v.posGridSize(), 128);
    LECTOR_CHECK(v.addPatchEmbedBias);
    LECTOR_CHECK_NEAR(v.layerNormEps, 1e-5, 1e-12);
    const auto& t = cfg->text;
    LECTOR_CHECK_EQ(t.hiddenSize, 32);
    LECTOR_CHECK_EQ(t.numLayers, 2);
    LECTOR_CHECK_EQ(t.numHeads, 4);
    LECTOR_CHECK_EQ(t.numKvHeads, 2);
    LECTOR_CHECK_EQ(t.headDim, 16);
    LECTOR_CHECK_EQ(t.intermediateSize, 64);
    LECTOR_CHECK_EQ(t.vocabSize, 120818);
    LECTOR_CHECK_EQ(t.maxPositionEmbeddings, 32768);
    LECTOR_CHECK_NEAR(t.ropeTheta, 10000.0, 1e-3);
    LECTOR_CHECK_NEAR(t.ropeAlpha, 1000.0, 1e-3);
    LECTOR_CHECK_EQ(t.xdropeSection, (std::vector<int>{2, 2, 2, 2}));
    LECTOR_CHECK(t.useQkNorm);
    LECTOR_CHECK(t.tieWordEmbeddings);
    const auto& ids = cfg->tokens;
    LECTOR_CHECK_EQ(ids.bos, 120000);
    LECTOR_CHECK_EQ(ids.eos, 120020);
    LECTOR_CHECK_EQ(ids.pad, 120002);
    LECTOR_CHECK_EQ(ids.imageStart, 120118);
    LECTOR_CHECK_EQ(ids.imageEnd, 120119);
    LECTOR_CHECK_EQ(ids.image, 120120);
    LECTOR_CHECK_EQ(ids.imageNewline, 120121);
    LECTOR_CHECK_EQ(ids.stop, (std::vector<int>{120007, 120020}));
    LECTOR_CHECK_EQ(cfg->preprocess.minPixels, int64_t{262144});
    LECTOR_CHECK_EQ(cfg->preprocess.maxPixels, int64_t{4194304});
    LECTOR_CHECK_NEAR(cfg->preprocess.mean[1], 0.4578275, 1e-7);
    LECTOR_CHECK_NEAR(cfg->preprocess.std[2], 0.27577711, 1e-7);
    LECTOR_CHECK_NEAR(cfg->generation.repetitionPenalty, 1.03, 1e-6);
    LECTOR_CHECK_EQ(cfg->generation.temperature, 0.0f);  // do_sample false -> greedy
}

// HunyuanOCR 1.5 keeps vision_config but nests the decoder under text_config, and its
// generation_config has no repetition_penalty (HF default 1.0).
LECTOR_TEST(loadsNestedTextConfig)
{
    const auto dir = lector::test::tempDir();
    writeText(dir / "config.json", R"({
      "architectures": ["HunYuanVLForConditionalGeneration"], "model_type": "hunyuan_vl",
      "image_token_id": 120120, "image_start_token_id": 120118, "image_end_token_id": 120119,
      "text_config": {
        "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 8,
        "head_dim": 128, "intermediate_size": 3584, "vocab_size": 120818, "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0, "use_qk_norm": true, "tie_word_embeddings": true,
        "max_position_embeddings": 65536, "bos_token_id": 120000, "eos_token_id": 120020,
        "rope_scaling": {"type": "xdrope", "alpha": 1000.0, "xdrope_section": [16, 16, 16, 16]}
      },
      "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27, "num_attention_heads": 16,
        "intermediate_size": 4304, "patch_size": 16, "spatial_merge_size": 2, "out_hidden_size": 1024,
        "max_image_size": 2048, "rms_norm_eps": 1e-05, "add_patchemb_bias": true, "max_vit_seq_len": 65536}
    })");
    writeText(dir / "generation_config.json", R"({"eos_token_id": [120020, 120007], "do_sample": false})");
    auto cfg = hy::loadConfig(dir);
    LECTOR_CHECK_MSG(cfg.ok(), cfg.error().message);
    LECTOR_CHECK_EQ(cfg->version, std::string("1.5"));
    LECTOR_CHECK(!cfg->vision.posEmbedPlusTenth);  // 1.5 resamples the position table with size=
    LECTOR_CHECK_EQ(cfg->text.hiddenSize, 1024);
    LECTOR_CHECK_EQ(cfg->text.numLayers, 24);
    LECTOR_CHECK_EQ(cfg->text.numKvHeads, 8);
    LECTOR_CHECK_EQ(cfg->text.headDim, 128);
    LECTOR_CHECK_EQ(cfg->text.maxPositionEmbeddings, 65536);
    LECTOR_CHECK_EQ(cfg->text.xdropeSection, (std::vector<int>{16, 16, 16, 16}));
    LECTOR_CHECK_EQ(cfg->vision.hiddenSize, 1152);
    LECTOR_CHECK_EQ(cfg->vision.numLayers, 27);
    LECTOR_CHECK_EQ(cfg->vision.headDim(), 72);
    LECTOR_CHECK_EQ(cfg->vision.maxVitSeqLen, 65536);
    LECTOR_CHECK_EQ(cfg->tokens.eos, 120020);
    LECTOR_CHECK_EQ(cfg->tokens.stop, (std::vector<int>{120020, 120007}));
    LECTOR_CHECK_NEAR(cfg->generation.repetitionPenalty, 1.0, 1e-9);
    // No preprocessor_config.json: the 1.0 defaults.
    LECTOR_CHECK_EQ(cfg->preprocess.maxPixels, int64_t{4194304});
}

LECTOR_TEST(configErrorsNameFileAndKey)
{
    const auto none = lector::test::tempDir() / "absent";
    auto r = hy::loadConfig(none);
    LECTOR_CHECK(!r.ok());
    LECTOR_CHECK_EQ(r.error().code, std::string("model_not_found"));
    LECTOR_CHECK(contains(r.error().message, "absent"));

    const auto empty = lector::test::tempDir();
    r = hy::loadConfig(empty);
    LECTOR_CHECK_EQ(r.error().code, std::string("model_not_found"));
    LECTOR_CHECK(contains(r.error().message, "config.json"));

    const auto dir = copyOfTinyModel();
    writeText(dir / "config.json", "{\"hidden_size\": 32, ");
    r = hy::loadConfig(dir);
    LECTOR_CHECK_EQ(r.error().code, std::string("bad_model"));
    LECTOR_CHECK(contains(r.error().message, "config.json"));

    writeText(dir / "config.json", R"({"hidden_size": "wide", "vision_config": {}})");
    r = hy::loadConfig(dir);
    LECTOR_CHECK_EQ(r.error().code, std::string("bad_model"));
    LECTOR_CHECK_MSG(contains(r.error().message, "hidden_size"), r.error().message);

    writeText(dir / "config.json", R"({"head_dim": 16, "hidden_size": 32})");
    r = hy::loadConfig(dir);
    LECTOR_CHECK_EQ(r.error().code, std::string("bad_model"));
    LECTOR_CHECK_MSG(contains(r.error().message, "vision_config"), r.error().message);

    fs::copy_file(tinyModel() / "config.json", dir / "config.json", fs::copy_options::overwrite_existing);
    writeText(dir / "preprocessor_config.json", R"({"image_mean": [0.5, 0.5]})");
    r = hy::loadConfig(dir);
    LECTOR_CHECK_EQ(r.error().code, std::string("bad_model"));
    LECTOR_CHECK_MSG(contains(r.error().message, "preprocessor_config.json") && contains(r.error().message, "image_mean"),
                     r.error().message);
}

LECTOR_TEST(weightStoreReadsShardsWithShapes)
{
    auto ws = hy::WeightStore::open(tinyModel());
    LECTOR_CHECK_MSG(ws.ok(), ws.error().message);
    LECTOR_CHECK(ws->contains("model.embed_tokens.weight"));
    LECTOR_CHECK(ws->contains("vit.perceive.image_newline"));
    LECTOR_CHECK(ws->contains("vit.vit.perceive.image_newline"));  // doubled prefix is tolerated
    LECTOR_CHECK(!ws->contains("lm_head.weight"));
    LECTOR_CHECK_EQ(ws->shape("vit.embeddings.position_embedding.weight"), (std::vector<int64_t>{16385, 32}));
    LECTOR_CHECK_EQ(ws->shape("vit.perceive.proj.0.weight"), (std::vector<int64_t>{64, 32, 2, 2}));
    LECTOR_CHECK_EQ(ws->shape("model.embed_tokens.weight"), (std::vector<int64_t>{120818, 32}));
    auto t = ws->get("vit.perceive.image_newline");
    LECTOR_CHECK(t.scalar_type() == at::kFloat);
    LECTOR_CHECK_EQ(t.sizes().vec(), (std::vector<int64_t>{128}));
    // A bf16 weight converted to float32 is exact: converting back gives the same bits.
    auto bf = ws->get("vit.perceive.image_newline", at::kBFloat16);
    LECTOR_CHECK(at::equal(bf.to(at::kFloat), t));
    bool threw = false;
    try {
        (void)ws->get("vit.no_such.weight");
    } catch (const std::out_of_range& e) {
        threw = contains(e.what(), "vit.no_such.weight");
    }
    LECTOR_CHECK(threw);
    auto bad = ws->load("vit.perceive.image_newline", {4608});
    LECTOR_CHECK(!bad.ok());
    LECTOR_CHECK_MSG(contains(bad.error().message, "image_newline") && contains(bad.error().message, "4608"),
                     bad.error().message);
}

LECTOR_TEST(weightStoreAcceptsSingleFileWithDoubledPrefix)
{
    const auto dir = lector::test::tempDir();
    auto w = lector::model::writeSafetensors(dir / "model.safetensors",
                                             {{"vit.vit.perceive.image_begin", at::arange(4, at::kFloat)},
                                              {"model.norm.weight", at::ones({4}, at::kFloat).to(at::kBFloat16)}});
    LECTOR_CHECK(w.ok());
    auto ws = hy::WeightStore::open(dir);
    LECTOR_CHECK_MSG(ws.ok(), ws.error().message);
    LECTOR_CHECK(at::equal(ws->get("vit.perceive.image_begin"), at::arange(4, at::kFloat)));
    LECTOR_CHECK(at::equal(ws->get("model.norm.weight"), at::ones({4}, at::kFloat)));
    LECTOR_CHECK_EQ(ws->names(), (std::vector<std::string>{"model.norm.weight", "vit.perceive.image_begin"}));
}

LECTOR_TEST(weightStoreErrorsNameTheFile)
{
    auto r = hy::WeightStore::open(lector::test::tempDir());  // empty directory
    LECTOR_CHECK_EQ(r.error().code, std::string("model_not_found"));
    LECTOR_CHECK(contains(r.error().message, "model.safetensors"));

    {  // a shard listed in the index is missing
        const auto dir = copyOfTinyModel();
        fs::remove(dir / "model-00002-of-00002.safetensors");
        r = hy::WeightStore::open(dir);
        LECTOR_CHECK_EQ(r.error().code, std::string("model_not_found"));
        LECTOR_CHECK_MSG(contains(r.error().message, "model-00002-of-00002.safetensors"), r.error().message);
    }
    {  // the index names a tensor its shard does not hold
        const auto dir = copyOfTinyModel();
        std::ifstream in(dir / "model.safetensors.index.json");
        std::string idx((std::istreambuf_iterator<char>(in)), {});
        in.close();
        idx.replace(idx.find("\"weight_map\": {") + 15, 0,
                    "\n    \"vit.ghost.weight\": \"model-00001-of-00002.safetensors\",");
        writeText(dir / "model.safetensors.index.json", idx);
        r = hy::WeightStore::open(dir);
        LECTOR_CHECK_EQ(r.error().code, std::string("bad_model"));
        LECTOR_CHECK_MSG(contains(r.error().message, "vit.ghost.weight") &&
                             contains(r.error().message, "model-00001-of-00002.safetensors"),
                         r.error().message);
    }
    {  // a shard with a malformed header
        const auto dir = copyOfTinyModel();
        std::string bytes(8, '\0');
        bytes[0] = 9;
        writeText(dir / "model-00001-of-00002.safetensors", bytes + "{garbage!");
        r = hy::WeightStore::open(dir);
        LECTOR_CHECK_EQ(r.error().code, std::string("bad_model"));
        LECTOR_CHECK_MSG(contains(r.error().message, "model-00001-of-00002.safetensors"), r.error().message);
    }
    {  // a malformed index
        const auto dir = copyOfTinyModel();
        writeText(dir / "model.safetensors.index.json", "{\"weight_map\": [1, 2]}");
        r = hy::WeightStore::open(dir);
        LECTOR_CHECK_EQ(r.error().code, std::string("bad_model"));
        LECTOR_CHECK_MSG(contains(r.error().message, "model.safetensors.index.json"), r.error().message);
    }
}

// Worked examples of docs/hunyuanocr-spec.md §2.1 plus a round-half-to-even case.
LECTOR_TEST(smartResizeMatchesReferenceExamples)
{
    auto sz = [](int h, int w) {
        auto r = hy::smartResize(h, w, 32, 262144, 4194304);
        LECTOR_CHECK_MSG(r.ok(), r.error().message);
        return std::pair{r->height, r->width};
    };
    LECTOR_CHECK((sz(1080, 1920) == std::pair{1088, 1920}));
    LECTOR_CHECK((sz(100, 400) == std::pair{256, 1024}));     // up-scaled to the minimum budget
    LECTOR_CHECK((sz(3301, 2550) == std::pair{2304, 1792}));  // down-scaled to the maximum budget
    LECTOR_CHECK((sz(480, 640) == std::pair{480, 640}));      // receipt_zh fixture: unchanged
    LECTOR_CHECK((sz(360, 800) == std::pair{352, 800}));      // doc_en fixture: 11.25 -> 11
    // 528/32 = 16.5 and 1040/32 = 32.5: Python's round() gives 16 and 32 (half up would give 17, 33).
    LECTOR_CHECK((sz(528, 1040) == std::pair{512, 1024}));
    LECTOR_CHECK((sz(560, 1008) == std::pair{576, 1024}));  // 17.5 -> 18, 31.5 -> 32
    LECTOR_CHECK((sz(2048, 2048) == std::pair{2048, 2048}));
    auto bad = hy::smartResize(10, 2010, 32, 262144, 4194304);  // aspect 201
    LECTOR_CHECK(!bad.ok());
    LECTOR_CHECK_EQ(bad.error().code, std::string("bad_image"));
    LECTOR_CHECK(contains(bad.error().message, "aspect ratio"));
    LECTOR_CHECK(hy::smartResize(10, 2000, 32, 262144, 4194304).ok());  // exactly 200 is allowed
    LECTOR_CHECK(!hy::smartResize(0, 100, 32, 262144, 4194304).ok());
}

LECTOR_TEST(preprocessRejectsExtremeAspect)
{
    lector::Image img(1000, 4);
    auto r = hy::preprocessImage(img, hy::PreprocessConfig{});
    LECTOR_CHECK(!r.ok());
    LECTOR_CHECK_EQ(r.error().code, std::string("bad_image"));
    r = hy::preprocessImage(lector::Image{}, hy::PreprocessConfig{});
    LECTOR_CHECK(!r.ok());
}

// table[r][c] = (r, c): bilinear interpolation of a linear function returns the (clamped) source
// coordinate itself, so every output must equal PyTorch's source-index formula for the given scale:
// src = max(0, (dst + 0.5) * 128 / (grid + 0.1) - 0.5), capped at 127.
LECTOR_TEST(positionInterpolationUsesGivenScale)
{
    const int g = 128;
    auto r = at::arange(g, at::kFloat).view({g, 1, 1}).expand({g, g, 1});
    auto c = at::arange(g, at::kFloat).view({1, g, 1}).expand({g, g, 1});
    const auto table = at::cat({r, c}, 2).contiguous();  // [128, 128, 2]
    for (auto [gh, gw] : {std::pair{22, 50}, std::pair{30, 40}, std::pair{2, 128}, std::pair{128, 256}}) {
        const auto out = hy::interpolatePositionTable(table, gh, gw).view({gh, gw, 2});
        auto expect = [](int dst, int grid) {
            double s = (dst + 0.5) * 128.0 / (grid + 0.1) - 0.5;
            return std::min(std::max(s, 0.0), 127.0);
        };
        for (int y = 0; y < gh; ++y)
            LECTOR_CHECK_NEAR(out[y][0][0].item<float>(), expect(y, gh), 2e-4);
        for (int x = 0; x < gw; ++x)
            LECTOR_CHECK_NEAR(out[0][x][1].item<float>(), expect(x, gw), 2e-4);
    }
    // And against libtorch's own kernel given the same scales, on random values.
    const auto rnd = at::randn({g, g, 3}, at::TensorOptions().dtype(at::kFloat));
    const int gh = 22, gw = 50;
    const auto ours = hy::interpolatePositionTable(rnd, gh, gw);
    const auto theirs = at::upsample_bilinear2d(rnd.permute({2, 0, 1}).unsqueeze(0), {gh, gw}, false,
                                                (gh + 0.1) / 128.0, (gw + 0.1) / 128.0)
                            .squeeze(0)
                            .permute({1, 2, 0})
                            .reshape({gh * gw, 3});
    // Up to one float ulp of the source coordinate apart: libtorch 1.13 computes (dst + 0.5) * ratio in
    // double, 2.x (the fixture's reference) in float, as we do.
    LECTOR_CHECK_NEAR((ours - theirs).abs().max().item<float>(), 0.0, 5e-5);
    // The plain size= resampling (1.5 semantics) is measurably different: the test can tell them apart.
    const auto sized = at::upsample_bilinear2d(rnd.permute({2, 0, 1}).unsqueeze(0), {gh, gw}, false)
                           .squeeze(0)
                           .permute({1, 2, 0})
                           .reshape({gh * gw, 3});
    LECTOR_CHECK((ours - sized).abs().max().item<float>() > 1e-2);
    // ... and it is what plusTenth=false (the 1.5 layout) reproduces.
    const auto ours15 = hy::interpolatePositionTable(rnd, gh, gw, /*plusTenth=*/false);
    LECTOR_CHECK_NEAR((ours15 - sized).abs().max().item<float>(), 0.0, 5e-5);
}
