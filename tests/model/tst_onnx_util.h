// Helpers for the onnx::Graph tests: a builder for tiny in-memory graphs (ModelDesc), a small protobuf
// writer for hand-made ModelProto bytes, and the loader of the fetched PP-OCR graphs. Test-only;
// single-threaded.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/model/onnx/graph.h"
#include "core/model/onnx/model.h"
#include "tests/support/lector_test.h"

namespace lector::test::onnx {

using model::onnx::AttrType;
using model::onnx::Attribute;
using model::onnx::ModelDesc;
using model::onnx::Node;
using model::onnx::ValueInfo;

inline Attribute attrInt(const std::string& name, int64_t v)
{
    Attribute a;
    a.name = name;
    a.type = AttrType::Int;
    a.i = v;
    return a;
}
inline Attribute attrFloat(const std::string& name, float v)
{
    Attribute a;
    a.name = name;
    a.type = AttrType::Float;
    a.f = v;
    return a;
}
inline Attribute attrString(const std::string& name, const std::string& v)
{
    Attribute a;
    a.name = name;
    a.type = AttrType::String;
    a.s = v;
    return a;
}
inline Attribute attrInts(const std::string& name, std::vector<int64_t> v)
{
    Attribute a;
    a.name = name;
    a.type = AttrType::Ints;
    a.ints = std::move(v);
    return a;
}

// Builds a ModelDesc: inputs, constants, nodes, outputs.
class GraphBuilder {
public:
    explicit GraphBuilder(int64_t opset = 11) { m_model.opset = opset; m_model.irVersion = 6; }
    GraphBuilder& input(const std::string& name, std::vector<int64_t> dims = {})
    {
        ValueInfo v;
        v.name = name;
        v.elemType = 1;
        v.dims = std::move(dims);
        v.hasShape = !v.dims.empty();
        m_model.inputs.push_back(v);
        return *this;
    }
    GraphBuilder& constant(const std::string& name, at::Tensor t)
    {
        m_model.constants[name] = std::move(t);
        return *this;
    }
    GraphBuilder& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                       std::vector<Attribute> attrs = {})
    {
        Node n;
        n.name = op + "_" + std::to_string(m_model.nodes.size());
        n.opType = op;
        n.inputs = std::move(ins);
        n.outputs = std::move(outs);
        n.attributes = std::move(attrs);
        m_model.nodes.push_back(std::move(n));
        return *this;
    }
    GraphBuilder& output(const std::string& name)
    {
        ValueInfo v;
        v.name = name;
        m_model.outputs.push_back(v);
        return *this;
    }
    const ModelDesc& model() const { return m_model; }

private:
    ModelDesc m_model;
};

// --- protobuf writer ---

inline void putVarint(std::string& out, uint64_t v)
{
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
inline void putKey(std::string& out, uint32_t field, uint32_t wireType) { putVarint(out, (uint64_t{field} << 3) | wireType); }
inline void putInt(std::string& out, uint32_t field, int64_t v)
{
    putKey(out, field, 0);
    putVarint(out, static_cast<uint64_t>(v));
}
inline void putBytes(std::string& out, uint32_t field, const std::string& bytes)
{
    putKey(out, field, 2);
    putVarint(out, bytes.size());
    out += bytes;
}
inline void putFixed32(std::string& out, uint32_t field, float v)
{
    putKey(out, field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    out.append(b, 4);
}
inline void putFixed64(std::string& out, uint32_t field, double v)
{
    putKey(out, field, 1);
    char b[8];
    std::memcpy(b, &v, 8);
    out.append(b, 8);
}

// One of the fetched PP-OCR graphs (file name under models/ppocr-v4); skips the case when the models
// were not fetched, fails it when the graph does not load.
inline model::onnx::Graph loadPpocrGraph(const std::string& file, const model::onnx::LoadOptions& options = {})
{
    const auto path = lector::test::ppocrModelDir() / file;
    if (!std::filesystem::exists(path)) LECTOR_SKIP("PP-OCR models not fetched");
    auto g = model::onnx::Graph::load(path, options);
    LECTOR_CHECK_MSG(g.ok(), g.error().message);
    return std::move(g).value();
}

}  // namespace lector::test::onnx
