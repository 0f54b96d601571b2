// CTC greedy decoding: hand-made frame sequences, and onnxruntime's recogniser outputs of the fixture
// lines, which must decode exactly to the reference pipeline's texts (greedy) and, with space recovery,
// to the expected texts of the rendered images.
#include "tests/unit/tst_ocr_support.h"

#include "core/ocr/ctc_decoder.h"

using namespace lector::pipeline;
namespace ocr = lector::test::ocr;

namespace {

CtcDecoder loadKeys()
{
    auto d = CtcDecoder::load(lector::test::ppocrModelDir() / "ppocr_keys_v1.txt");
    if (!d.ok()) lector::test::fail(__FILE__, __LINE__, d.error().message);
    return std::move(d).value();
}

struct Frames {
    std::vector<int64_t> ids;
    std::vector<float> best, space;
};

// Argmax, its probability and the space-class probability of every frame of a [1, T, C] output.
Frames framesOf(const at::Tensor& out, int64_t spaceId)
{
    const at::Tensor p = out.to(at::kFloat)[0];  // [T, C]
    const auto [best, ids] = p.max(1);
    Frames f;
    const at::Tensor idsL = ids.to(at::kLong).contiguous(), bestF = best.contiguous(), sp = p.select(1, spaceId).contiguous();
    f.ids.assign(idsL.data_ptr<int64_t>(), idsL.data_ptr<int64_t>() + idsL.numel());
    f.best.assign(bestF.data_ptr<float>(), bestF.data_ptr<float>() + bestF.numel());
    f.space.assign(sp.data_ptr<float>(), sp.data_ptr<float>() + sp.numel());
    return f;
}

}  // namespace

LECTOR_TEST(mapsClassIdsToKeysAndSpace)
{
    const CtcDecoder d = loadKeys();
    LECTOR_CHECK_EQ(d.numClasses(), 6625);
    LECTOR_CHECK_EQ(d.spaceId(), 6624);
    LECTOR_CHECK_EQ(d.token(6624), std::string(" "));
    LECTOR_CHECK_EQ(d.token(0), std::string());
    LECTOR_CHECK_EQ(d.token(1), std::string("'"));  // first line of ppocr_keys_v1.txt
    LECTOR_CHECK_EQ(d.token(6625), std::string());
}

LECTOR_TEST(dropsBlanksAndRepeatsAndAveragesKeptFrames)
{
    const CtcDecoder d(std::vector<std::string>{"a", "b", "c"});  // ids 1..3, space 4
    const std::vector<int64_t> ids = {0, 1, 1, 0, 1, 2, 2, 4, 3, 0};
    const std::vector<float> best = {0.9f, 0.8f, 0.1f, 0.9f, 0.6f, 0.7f, 0.2f, 0.5f, 0.4f, 1.0f};
    const DecodedText t = d.decode(ids, best, {}, CtcOptions{});
    LECTOR_CHECK_EQ(t.text, std::string("aab c"));
    LECTOR_CHECK_NEAR(t.confidence, (0.8 + 0.6 + 0.7 + 0.5 + 0.4) / 5.0, 1e-6);
    LECTOR_CHECK_EQ(t.frames, (std::vector<int>{1, 4, 5, 7, 8}));
    const DecodedText none = d.decode(std::vector<int64_t>{0, 0, 0}, std::vector<float>{1, 1, 1}, {}, CtcOptions{});
    LECTOR_CHECK_EQ(none.text, std::string());
    LECTOR_CHECK_EQ(none.confidence, 0.0f);
}

LECTOR_TEST(recoversSpaceFromSpaceClassProbability)
{
    const CtcDecoder d(std::vector<std::string>{"a", "b", ":"});
    const std::vector<int64_t> ids = {1, 0, 0, 3, 0, 0, 2};
    const std::vector<float> best(7, 0.9f);
    std::vector<float> space(7, 0.0f);
    space[4] = 0.3f;  // between ':' and 'b'
    CtcOptions on;
    LECTOR_CHECK_EQ(d.decode(ids, best, space, on).text, std::string("a: b"));
    CtcOptions off;
    off.recoverSpaces = false;
    LECTOR_CHECK_EQ(d.decode(ids, best, space, off).text, std::string("a:b"));
    space[4] = 0.01f;
    LECTOR_CHECK_EQ(d.decode(ids, best, space, on).text, std::string("a:b"));
}

LECTOR_TEST(decodesFixtureOutputsToReferenceTexts)
{
    const CtcDecoder d = loadKeys();
    const auto ref = ocr::reference();
    CtcOptions greedy;
    greedy.recoverSpaces = false;
    for (const auto& name : ocr::fixtureImages()) {
        const auto file = ocr::tensors(name);
        const auto& lines = ref.at(name).at("reference_lines");
        for (size_t i = 0; i < lines.size(); ++i) {
            const Frames f = framesOf(file->tensor("rec_output_" + std::to_string(i)), d.spaceId());
            const DecodedText t = d.decode(f.ids, f.best, f.space, greedy);
            LECTOR_CHECK_EQ(t.text, lines[i].at("text").get<std::string>());
            LECTOR_CHECK(t.confidence > 0.8f && t.confidence <= 1.0f);
        }
    }
}

LECTOR_TEST(recoversTheSpacesOfTheExpectedTexts)
{
    const CtcDecoder d = loadKeys();
    const auto ref = ocr::reference();
    for (const auto& name : ocr::fixtureImages()) {
        const auto file = ocr::tensors(name);
        const auto& expected = ref.at(name).at("expected");
        for (size_t i = 0; i < expected.size(); ++i) {
            const Frames f = framesOf(file->tensor("rec_output_" + std::to_string(i)), d.spaceId());
            LECTOR_CHECK_EQ(d.decode(f.ids, f.best, f.space, CtcOptions{}).text, expected[i].get<std::string>());
        }
    }
}

LECTOR_TEST(reportsMissingKeysFile)
{
    auto d = CtcDecoder::load(lector::test::tempDir() / "ppocr_keys_v1.txt");
    LECTOR_CHECK(!d.ok());
    LECTOR_CHECK_EQ(d.error().code, std::string("model_not_found"));
    LECTOR_CHECK(d.error().message.find("ppocr_keys_v1.txt") != std::string::npos);
}
