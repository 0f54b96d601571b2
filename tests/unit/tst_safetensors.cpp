// SafetensorsFile against the fixtures (known shapes and dtypes) and against broken files.
#include "tests/support/lector_test.h"

#include <fstream>

#include "core/model/safetensors.h"

using lector::model::SafetensorsFile;
namespace fs = std::filesystem;

namespace {
void writeBytes(const fs::path& p, const std::string& bytes)
{
    std::ofstream(p, std::ios::binary) << bytes;
}
std::string withHeader(const std::string& json, const std::string& data = "")
{
    std::string s(8, '\0');
    const uint64_t n = json.size();
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    return s + json + data;
}
}  // namespace

LECTOR_TEST(readsFixtureTensorsWithShapesAndDtypes)
{
    auto f = SafetensorsFile::open(lector::test::fixture("fixtures/ppocr/ppocr_doc_en.safetensors"));
    LECTOR_CHECK_MSG(f.ok(), f.error().message);
    const auto* det = (*f)->find("det_output");
    LECTOR_CHECK(det != nullptr);
    LECTOR_CHECK(det->dtype == at::kHalf);
    LECTOR_CHECK_EQ(det->shape, (std::vector<int64_t>{1, 1, 352, 800}));
    auto in = (*f)->tensor("det_input_bgr_u8");
    LECTOR_CHECK(in.scalar_type() == at::kByte);
    LECTOR_CHECK_EQ(in.sizes().vec(), (std::vector<int64_t>{352, 800, 3}));
    auto p = (*f)->tensor("det_output").to(at::kFloat);
    LECTOR_CHECK(p.min().item<float>() >= 0.0f && p.max().item<float>() <= 1.0f);
}

LECTOR_TEST(readsBf16ShardOfTinyModel)
{
    auto f = SafetensorsFile::open(lector::test::fixture("fixtures/hunyuan/tiny_model/model-00001-of-00002.safetensors"));
    LECTOR_CHECK_MSG(f.ok(), f.error().message);
    LECTOR_CHECK(!(*f)->tensors().empty());
    for (const auto& t : (*f)->tensors()) LECTOR_CHECK_EQ(t.dtypeName, std::string("BF16"));
}

LECTOR_TEST(roundTripsWrittenTensors)
{
    const auto p = lector::test::tempDir() / "x.safetensors";
    auto a = at::arange(12, at::kFloat).view({3, 4});
    auto b = at::arange(5, at::kLong);
    auto w = lector::model::writeSafetensors(p, {{"a", a}, {"b", b.to(at::kHalf)}});
    LECTOR_CHECK(w.ok());
    auto f = SafetensorsFile::open(p);
    LECTOR_CHECK(f.ok());
    LECTOR_CHECK(at::equal((*f)->tensor("a"), a));
    LECTOR_CHECK(at::equal((*f)->tensor("b").to(at::kLong), b));
}

LECTOR_TEST(rejectsBrokenFilesWithNamedErrors)
{
    const auto dir = lector::test::tempDir();
    struct Case {
        const char* name;
        std::string bytes;
        const char* expect;
    };
    const Case cases[] = {
        {"empty.safetensors", "", "shorter than the 8-byte"},
        {"huge_len.safetensors", std::string("\xff\xff\xff\xff\xff\xff\x00\x00", 8) + "{}", "exceeds the file"},
        {"not_json.safetensors", withHeader("{not json"), "not valid JSON"},
        {"bad_dtype.safetensors", withHeader(R"({"t":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", "x"), "unsupported dtype"},
        {"truncated.safetensors", withHeader(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", "abcd"), "truncated"},
        {"wrong_size.safetensors", withHeader(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"), "need 8"},
        {"no_offsets.safetensors", withHeader(R"({"t":{"dtype":"F32","shape":[1]}})"), "lacks"},
    };
    for (const auto& c : cases) {
        const auto p = dir / c.name;
        writeBytes(p, c.bytes);
        auto f = SafetensorsFile::open(p);
        LECTOR_CHECK_MSG(!f.ok(), c.name);
        LECTOR_CHECK_EQ(f.error().code, std::string("bad_safetensors"));
        LECTOR_CHECK_MSG(f.error().message.find(c.name) != std::string::npos, f.error().message);
        LECTOR_CHECK_MSG(f.error().message.find(c.expect) != std::string::npos, f.error().message);
    }
    auto missing = SafetensorsFile::open(dir / "nope.safetensors");
    LECTOR_CHECK_EQ(missing.error().code, std::string("file_not_found"));
}
