// onnx::Graph loading: our protobuf reader on hand-written ModelProto bytes (every TensorProto
// encoding we support) and on broken files: each must give an Error naming the file, never a crash.
#include "tests/support/lector_test.h"

#include <cstdio>
#include <fstream>

#include "tests/model/tst_onnx_util.h"

using lector::model::onnx::Graph;
using namespace lector::test::onnx;
namespace fs = std::filesystem;

namespace {

std::string readFile(const fs::path& p)
{
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
// A file in the test's temporary folder, unlinked when the case ends. (With PyTorch 2.11's libtorch
// on the GPU machine, the harness's std::filesystem::remove_all of a non-empty folder at exit
// crashes; empty folders are fine.)
struct ScratchFile {
    fs::path path;
    ScratchFile(const std::string& name, const std::string& bytes) : path(lector::test::tempDir() / name) { write(bytes); }
    void write(const std::string& bytes) const { std::ofstream(path, std::ios::binary) << bytes; }
    ~ScratchFile() { std::remove(path.c_str()); }
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;
};
fs::path detModel()
{
    const auto p = lector::test::ppocrModelDir() / "ch_PP-OCRv4_det_infer.onnx";
    if (!fs::exists(p)) LECTOR_SKIP("PP-OCR models not fetched");
    return p;
}

void expectBadModel(const fs::path& p, const std::string& needle)
{
    auto g = Graph::load(p);
    LECTOR_CHECK(!g.ok());
    LECTOR_CHECK_EQ(g.error().code, std::string("bad_model"));
    LECTOR_CHECK_MSG(g.error().message.find(p.string()) != std::string::npos, g.error().message);
    LECTOR_CHECK_MSG(g.error().message.find(needle) != std::string::npos, g.error().message);
}

// --- hand-written ModelProto ---

std::string tensorProto(int32_t dataType, std::vector<int64_t> dims, const std::string& typedFields)
{
    std::string t;
    for (int64_t d : dims) putInt(t, 1, d);  // dims, unpacked
    putInt(t, 2, dataType);
    return t + typedFields;
}

std::string constantNode(const std::string& output, const std::string& tensor)
{
    std::string attr;
    putBytes(attr, 1, "value");
    putInt(attr, 20, 4);  // AttributeProto.TENSOR
    putBytes(attr, 5, tensor);
    std::string node;
    putBytes(node, 2, output);
    putBytes(node, 3, "const_" + output);
    putBytes(node, 4, "Constant");
    putBytes(node, 5, attr);
    return node;
}

std::string modelProto(const std::vector<std::string>& nodes, const std::vector<std::string>& outputs)
{
    std::string graph;
    for (const auto& n : nodes) putBytes(graph, 1, n);
    putBytes(graph, 2, "hand_made");
    for (const auto& o : outputs) {
        std::string vi;
        putBytes(vi, 1, o);
        putBytes(graph, 12, vi);
    }
    std::string opset;
    putBytes(opset, 1, "");
    putInt(opset, 2, 11);
    std::string model;
    putInt(model, 1, 7);  // ir_version
    putBytes(model, 8, opset);
    putBytes(model, 7, graph);
    return model;
}

std::string packedFloats(std::vector<float> v)
{
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

}  // namespace

LECTOR_TEST(readsEveryTensorEncodingAndAttributeType)
{
    std::vector<std::string> nodes;
    std::string f;
    putBytes(f, 4, packedFloats({1.5f, -2.0f}));  // float_data, packed
    nodes.push_back(constantNode("c_float", tensorProto(1, {2}, f)));
    std::string f2;
    putFixed32(f2, 4, 3.0f);  // float_data, unpacked
    putFixed32(f2, 4, 4.0f);
    nodes.push_back(constantNode("c_float2d", tensorProto(1, {2, 1}, f2)));
    std::string varints;
    putVarint(varints, static_cast<uint64_t>(int64_t{-3}));
    putVarint(varints, 7);
    std::string i64;
    putBytes(i64, 7, varints);  // int64_data, packed
    nodes.push_back(constantNode("c_int64", tensorProto(7, {2}, i64)));
    std::string i32;
    putInt(i32, 5, -5);  // int32_data, unpacked (negative: 10-byte varint)
    putInt(i32, 5, 9);
    nodes.push_back(constantNode("c_int32", tensorProto(6, {2}, i32)));
    std::string f16;
    putInt(f16, 5, 0x3800);  // float16 bit patterns in int32_data: 0.5, -2
    putInt(f16, 5, 0xC000);
    nodes.push_back(constantNode("c_half", tensorProto(10, {2}, f16)));
    std::string u8;
    putBytes(u8, 9, std::string("\x01\xff", 2));  // raw_data
    nodes.push_back(constantNode("c_u8", tensorProto(2, {2}, u8)));
    std::string b;
    putInt(b, 5, 1);
    putInt(b, 5, 0);
    nodes.push_back(constantNode("c_bool", tensorProto(9, {2}, b)));
    std::string d;
    putFixed64(d, 10, 0.25);  // double_data
    nodes.push_back(constantNode("c_double", tensorProto(11, {1}, d)));
    std::string s;
    putBytes(s, 9, packedFloats({1.0f}));  // a rank-0 float in raw_data
    nodes.push_back(constantNode("c_one", tensorProto(1, {}, s)));
    // Transpose(ints attribute) and HardSigmoid(float attributes), folded at load
    std::string perm, permAttr;
    putInt(perm, 1, 1);
    putInt(perm, 1, 0);
    putBytes(permAttr, 1, "perm");
    putInt(permAttr, 20, 7);
    putVarint(permAttr, (8 << 3) | 2);  // ints, packed
    std::string permValues;
    putVarint(permValues, 1);
    putVarint(permValues, 0);
    putVarint(permAttr, permValues.size());
    permAttr += permValues;
    std::string transpose;
    putBytes(transpose, 1, "c_float2d");
    putBytes(transpose, 2, "t");
    putBytes(transpose, 4, "Transpose");
    putBytes(transpose, 5, permAttr);
    nodes.push_back(transpose);
    std::string alpha, beta, hs;
    putBytes(alpha, 1, "alpha");
    putFixed32(alpha, 2, 0.5f);
    putInt(alpha, 20, 1);
    putBytes(beta, 1, "beta");
    putFixed32(beta, 2, 0.25f);  // no type field: older writers; the set field tells
    putBytes(hs, 1, "c_one");
    putBytes(hs, 2, "hs");
    putBytes(hs, 4, "HardSigmoid");
    putBytes(hs, 5, alpha);
    putBytes(hs, 5, beta);
    nodes.push_back(hs);

    const std::vector<std::string> outs{"c_float", "c_int64", "c_int32", "c_half", "c_u8", "c_bool", "c_double", "c_one", "t", "hs"};
    const ScratchFile file("hand_made.onnx", modelProto(nodes, outs));
    const auto& path = file.path;
    for (bool optimize : {false, true}) {
        lector::model::onnx::LoadOptions options;
        options.optimize = optimize;
        auto g = Graph::load(path, options);
        LECTOR_CHECK_MSG(g.ok(), g.error().message);
        LECTOR_CHECK(g->inputNames().empty());
        LECTOR_CHECK_EQ(g->outputNames(), outs);
        auto o = g->run({});
        LECTOR_CHECK(at::equal(o[0], at::tensor({1.5f, -2.0f})));
        LECTOR_CHECK(o[1].scalar_type() == at::kLong && at::equal(o[1], at::tensor({int64_t{-3}, int64_t{7}})));
        LECTOR_CHECK(o[2].scalar_type() == at::kInt && at::equal(o[2], at::tensor({-5, 9}, at::kInt)));
        LECTOR_CHECK(o[3].scalar_type() == at::kFloat && at::equal(o[3], at::tensor({0.5f, -2.0f})));  // graph dtype
        LECTOR_CHECK(o[4].scalar_type() == at::kByte && o[4][0].item<int>() == 1 && o[4][1].item<int>() == 255);
        LECTOR_CHECK(o[5].scalar_type() == at::kBool && o[5][0].item<bool>() && !o[5][1].item<bool>());
        LECTOR_CHECK(o[6].scalar_type() == at::kDouble && o[6][0].item<double>() == 0.25);
        LECTOR_CHECK(o[7].dim() == 0 && o[7].item<float>() == 1.0f);
        LECTOR_CHECK(at::equal(o[8], at::tensor({3.0f, 4.0f}).view({1, 2})));
        LECTOR_CHECK_NEAR(o[9].item<float>(), 0.75, 1e-7);
    }
}

LECTOR_TEST(zeroByteFileIsABadModel)
{
    const ScratchFile f("empty.onnx", "");
    expectBadModel(f.path, "empty");
}

LECTOR_TEST(textFileIsABadModel)
{
    const ScratchFile f("notes.onnx", "These are not the weights you are looking for.\nDet model: see README.\n");
    expectBadModel(f.path, "");
}

LECTOR_TEST(truncatedDetModelIsABadModel)
{
    const std::string bytes = readFile(detModel());
    const ScratchFile f("det_truncated.onnx", "");
    for (size_t keep : {bytes.size() / 2, bytes.size() - 1, size_t{3}}) {
        f.write(bytes.substr(0, keep));
        expectBadModel(f.path, "truncated");
    }
}

LECTOR_TEST(unknownOperatorInTheDetModelIsNamed)
{
    std::string bytes = readFile(detModel());
    // NodeProto.op_type (field 4, length 7) "Sigmoid" -> "Sigmoix"
    const std::string from("\x22\x07Sigmoid", 9);
    const auto at = bytes.find(from);
    LECTOR_CHECK(at != std::string::npos);
    bytes[at + 8] = 'x';
    const ScratchFile f("det_unknown_op.onnx", bytes);
    expectBadModel(f.path, "unsupported operator Sigmoix in node '");
}

LECTOR_TEST(missingFileIsFileNotFound)
{
    auto g = Graph::load(lector::test::tempDir() / "nope.onnx");
    LECTOR_CHECK(!g.ok());
    LECTOR_CHECK_EQ(g.error().code, std::string("file_not_found"));
}

LECTOR_TEST(realModelsDeclareTheirInputsAndOpsets)
{
    for (const char* name : {"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx"}) {
        const auto p = detModel().parent_path() / name;
        auto g = Graph::load(p);
        LECTOR_CHECK_MSG(g.ok(), g.error().message);
        LECTOR_CHECK_EQ(g->inputNames(), (std::vector<std::string>{"x"}));
        LECTOR_CHECK_EQ(g->outputNames().size(), size_t{1});
    }
}

LECTOR_TEST(cudaLoadsInFloat16OrIsDeviceUnavailable)
{
    lector::model::onnx::LoadOptions options;
    options.device = at::Device(at::kCUDA, 0);
    options.dtype = at::kHalf;
    auto g = Graph::load(detModel(), options);
    if (!at::hasCUDA()) {
        LECTOR_CHECK(!g.ok());
        LECTOR_CHECK_EQ(g.error().code, std::string("device_unavailable"));
        return;
    }
    LECTOR_CHECK_MSG(g.ok(), g.error().message);
    auto out = g->run({at::zeros({1, 3, 64, 96})}).at(0);  // float32 CPU input: cast and moved by run()
    LECTOR_CHECK(out.is_cuda() && out.scalar_type() == at::kHalf);
    LECTOR_CHECK_EQ(out.sizes().vec(), (std::vector<int64_t>{1, 1, 64, 96}));
}
