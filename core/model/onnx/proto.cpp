// Protobuf wire-format reader and the ONNX ModelProto subset (see proto.h). Field numbers follow
// onnx/onnx.proto (IR version 8); unknown fields are skipped, as protobuf readers must.
#include "core/model/onnx/proto.h"

#include <cstring>
#include <limits>
#include <set>

namespace lector::model::onnx {

namespace {

// ModelProto / GraphProto / NodeProto / AttributeProto / TensorProto / ValueInfoProto field numbers.
namespace field {
constexpr uint32_t kModelIrVersion = 1, kModelOpsetImport = 8, kModelGraph = 7;
constexpr uint32_t kOpsetDomain = 1, kOpsetVersion = 2;
constexpr uint32_t kGraphNode = 1, kGraphInitializer = 5, kGraphInput = 11, kGraphOutput = 12,
                   kGraphSparseInitializer = 15;
constexpr uint32_t kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5,
                   kNodeDomain = 7;
constexpr uint32_t kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrS = 4, kAttrT = 5, kAttrFloats = 7,
                   kAttrInts = 8, kAttrType = 20;
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorSegment = 3, kTensorFloatData = 4,
                   kTensorInt32Data = 5, kTensorInt64Data = 7, kTensorName = 8, kTensorRawData = 9,
                   kTensorDoubleData = 10, kTensorUint64Data = 11, kTensorDataLocation = 14;
constexpr uint32_t kValueInfoName = 1, kValueInfoType = 2;
constexpr uint32_t kTypeTensor = 1, kTypeTensorElemType = 1, kTypeTensorShape = 2;
constexpr uint32_t kShapeDim = 1, kDimValue = 1, kDimParam = 2;
}  // namespace field

void expectWireType(const WireField& f, uint32_t wireType, const char* what)
{
    if (f.wireType != wireType)
        throw ModelError(std::string("field ") + what + " has wire type " + std::to_string(f.wireType) +
                         ", expected " + std::to_string(wireType) + " (not an ONNX model?)");
}

std::string readString(const WireField& f, const char* what)
{
    expectWireType(f, 2, what);
    return std::string(f.bytes);
}

int64_t readInt(const WireField& f, const char* what)
{
    expectWireType(f, 0, what);
    return static_cast<int64_t>(f.value);
}

float bitsToFloat(uint32_t bits)
{
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

// --- TensorProto ---

struct TensorFields {
    std::vector<int64_t> dims;
    int32_t dataType = 0;
    std::string name;
    std::string_view raw;
    bool hasRaw = false;
    std::vector<float> floats;
    std::vector<int64_t> ints;  // int32_data, int64_data or uint64_data, whichever the type uses
    std::vector<double> doubles;
};

void appendFixed64Doubles(const WireField& f, std::vector<double>& out)
{
    if (f.wireType == 1) {
        double v;
        std::memcpy(&v, &f.value, sizeof v);
        out.push_back(v);
        return;
    }
    expectWireType(f, 2, "double_data");
    if (f.bytes.size() % 8 != 0) throw ModelError("packed double_data has a partial element");
    for (size_t i = 0; i < f.bytes.size(); i += 8) {
        double v;
        std::memcpy(&v, f.bytes.data() + i, sizeof v);
        out.push_back(v);
    }
}

TensorFields readTensorFields(std::string_view bytes)
{
    TensorFields t;
    WireReader r(bytes);
    WireField f;
    while (r.next(f)) {
        switch (f.number) {
        case field::kTensorDims: appendVarints(f, t.dims); break;
        case field::kTensorDataType: t.dataType = static_cast<int32_t>(readInt(f, "data_type")); break;
        case field::kTensorName: t.name = readString(f, "tensor name"); break;
        case field::kTensorRawData:
            expectWireType(f, 2, "raw_data");
            t.raw = f.bytes;
            t.hasRaw = true;
            break;
        case field::kTensorFloatData: appendFixed32Floats(f, t.floats); break;
        case field::kTensorInt32Data:
        case field::kTensorInt64Data:
        case field::kTensorUint64Data: appendVarints(f, t.ints); break;
        case field::kTensorDoubleData: appendFixed64Doubles(f, t.doubles); break;
        case field::kTensorSegment: throw ModelError("segmented tensors are not supported");
        case field::kTensorDataLocation:
            if (readInt(f, "data_location") != 0)
                throw ModelError("tensors with external data are not supported");
            break;
        default: break;
        }
    }
    return t;
}

// Typed repeated values -> tensor of `dtype`, element by element.
at::Tensor tensorFromTypedFields(const TensorFields& t, at::ScalarType dtype, int64_t numel)
{
    auto out = at::empty({numel}, at::TensorOptions().dtype(dtype));
    auto check = [&](size_t have) {
        if (static_cast<int64_t>(have) != numel)
            throw ModelError("tensor '" + t.name + "' has " + std::to_string(have) + " values for " +
                             std::to_string(numel) + " elements");
    };
    switch (dtype) {
    case at::kFloat:
        check(t.floats.size());
        if (numel) std::memcpy(out.data_ptr(), t.floats.data(), numel * sizeof(float));
        break;
    case at::kDouble:
        check(t.doubles.size());
        if (numel) std::memcpy(out.data_ptr(), t.doubles.data(), numel * sizeof(double));
        break;
    case at::kHalf: {  // int32_data holds the 16-bit patterns
        check(t.ints.size());
        auto* p = static_cast<uint16_t*>(out.data_ptr());
        for (int64_t i = 0; i < numel; ++i) p[i] = static_cast<uint16_t>(t.ints[i]);
        break;
    }
    default: {
        check(t.ints.size());
        auto asLong = at::empty({numel}, at::kLong);
        if (numel) std::memcpy(asLong.data_ptr(), t.ints.data(), numel * sizeof(int64_t));
        out.copy_(asLong);
        break;
    }
    }
    return out;
}

at::Tensor readTensor(std::string_view bytes)
{
    TensorFields t = readTensorFields(bytes);
    const at::ScalarType dtype = scalarTypeFromOnnx(t.dataType);
    int64_t numel = 1;
    for (int64_t d : t.dims) {
        if (d < 0) throw ModelError("tensor '" + t.name + "' has a negative dimension");
        if (d != 0 && numel > std::numeric_limits<int64_t>::max() / d)
            throw ModelError("tensor '" + t.name + "' is too large");
        numel *= d;
    }
    at::Tensor out;
    if (t.hasRaw) {
        const size_t elemBytes = c10::elementSize(dtype);
        if (static_cast<uint64_t>(numel) > t.raw.size() / elemBytes || t.raw.size() != numel * elemBytes)
            throw ModelError("tensor '" + t.name + "' has " + std::to_string(t.raw.size()) +
                             " bytes of raw_data for " + std::to_string(numel) + " elements");
        out = at::empty({numel}, at::TensorOptions().dtype(dtype));
        if (numel) std::memcpy(out.data_ptr(), t.raw.data(), t.raw.size());
        if (dtype == at::kBool) out = out.view(at::kByte).ne(0);  // any nonzero byte is true
    } else {
        out = tensorFromTypedFields(t, dtype, numel);
    }
    return out.view(t.dims);
}

// --- AttributeProto / NodeProto / ValueInfoProto ---

Attribute readAttribute(std::string_view bytes)
{
    Attribute a;
    WireReader r(bytes);
    WireField f;
    int32_t declared = -1;
    AttrType seen = AttrType::Undefined;
    while (r.next(f)) {
        switch (f.number) {
        case field::kAttrName: a.name = readString(f, "attribute name"); break;
        case field::kAttrF:
            expectWireType(f, 5, "attribute f");
            a.f = bitsToFloat(static_cast<uint32_t>(f.value));
            seen = AttrType::Float;
            break;
        case field::kAttrI: a.i = readInt(f, "attribute i"); seen = AttrType::Int; break;
        case field::kAttrS: a.s = readString(f, "attribute s"); seen = AttrType::String; break;
        case field::kAttrT:
            expectWireType(f, 2, "attribute t");
            a.t = readTensor(f.bytes);
            seen = AttrType::Tensor;
            break;
        case field::kAttrFloats: appendFixed32Floats(f, a.floats); seen = AttrType::Floats; break;
        case field::kAttrInts: appendVarints(f, a.ints); seen = AttrType::Ints; break;
        case field::kAttrType: declared = static_cast<int32_t>(readInt(f, "attribute type")); break;
        default: break;
        }
    }
    // IR >= 4 writes `type`; older files leave it out and the set field tells. Types we do not read
    // (graphs, strings, tensor lists) stay Undefined and fail only when an operator asks for them.
    if (declared >= 0) {
        const bool known = declared == 1 || declared == 2 || declared == 3 || declared == 4 ||
                           declared == 6 || declared == 7;
        a.type = known ? static_cast<AttrType>(declared) : AttrType::Undefined;
    } else {
        a.type = seen;
    }
    return a;
}

Node readNode(std::string_view bytes)
{
    Node n;
    WireReader r(bytes);
    WireField f;
    while (r.next(f)) {
        switch (f.number) {
        case field::kNodeInput: n.inputs.push_back(readString(f, "node input")); break;
        case field::kNodeOutput: n.outputs.push_back(readString(f, "node output")); break;
        case field::kNodeName: n.name = readString(f, "node name"); break;
        case field::kNodeOpType: n.opType = readString(f, "op_type"); break;
        case field::kNodeAttribute:
            expectWireType(f, 2, "node attribute");
            n.attributes.push_back(readAttribute(f.bytes));
            break;
        case field::kNodeDomain: n.domain = readString(f, "node domain"); break;
        default: break;
        }
    }
    return n;
}

void readShape(std::string_view bytes, ValueInfo& info)
{
    info.hasShape = true;
    WireReader r(bytes);
    WireField f;
    while (r.next(f)) {
        if (f.number != field::kShapeDim) continue;
        expectWireType(f, 2, "shape dim");
        int64_t dim = -1;
        WireReader dr(f.bytes);
        WireField d;
        while (dr.next(d))
            if (d.number == field::kDimValue) dim = readInt(d, "dim_value");
        info.dims.push_back(dim > 0 ? dim : -1);
    }
}

ValueInfo readValueInfo(std::string_view bytes)
{
    ValueInfo info;
    WireReader r(bytes);
    WireField f;
    while (r.next(f)) {
        if (f.number == field::kValueInfoName) {
            info.name = readString(f, "value name");
        } else if (f.number == field::kValueInfoType) {
            expectWireType(f, 2, "value type");
            WireReader tr(f.bytes);
            WireField tf;
            while (tr.next(tf)) {
                if (tf.number != field::kTypeTensor) continue;  // sequences, maps: no shape for us
                expectWireType(tf, 2, "tensor type");
                WireReader er(tf.bytes);
                WireField ef;
                while (er.next(ef)) {
                    if (ef.number == field::kTypeTensorElemType)
                        info.elemType = static_cast<int32_t>(readInt(ef, "elem_type"));
                    else if (ef.number == field::kTypeTensorShape)
                        readShape(ef.bytes, info);
                }
            }
        }
    }
    return info;
}

void readGraph(std::string_view bytes, ModelDesc& model)
{
    std::vector<ValueInfo> declaredInputs;
    WireReader r(bytes);
    WireField f;
    while (r.next(f)) {
        switch (f.number) {
        case field::kGraphNode:
            expectWireType(f, 2, "graph node");
            model.nodes.push_back(readNode(f.bytes));
            break;
        case field::kGraphInitializer: {
            expectWireType(f, 2, "initializer");
            const std::string name = readTensorFields(f.bytes).name;
            if (name.empty()) throw ModelError("an initializer has no name");
            model.constants[name] = readTensor(f.bytes);
            break;
        }
        case field::kGraphInput:
            expectWireType(f, 2, "graph input");
            declaredInputs.push_back(readValueInfo(f.bytes));
            break;
        case field::kGraphOutput:
            expectWireType(f, 2, "graph output");
            model.outputs.push_back(readValueInfo(f.bytes));
            break;
        case field::kGraphSparseInitializer: throw ModelError("sparse initializers are not supported");
        default: break;
        }
    }
    // Before IR 4 initializers were also listed as inputs; the real inputs are the others.
    for (auto& in : declaredInputs)
        if (!model.constants.count(in.name)) model.inputs.push_back(std::move(in));
}

}  // namespace

// --- WireReader ---

uint64_t WireReader::readVarint()
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (m_pos == m_end) throw ModelError("truncated (a varint runs past the end of its message)");
        const auto byte = static_cast<uint8_t>(*m_pos++);
        if (shift == 63 && byte > 1) throw ModelError("malformed varint (more than 64 bits)");
        v |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return v;
    }
    throw ModelError("malformed varint (longer than 10 bytes)");
}

bool WireReader::next(WireField& field)
{
    if (m_pos == m_end) return false;
    const uint64_t key = readVarint();
    field.number = static_cast<uint32_t>(key >> 3);
    field.wireType = static_cast<uint32_t>(key & 7);
    field.bytes = {};
    field.value = 0;
    if (field.number == 0 || (key >> 3) > 0x1fffffff) throw ModelError("invalid field number (not an ONNX model?)");
    const auto remaining = static_cast<uint64_t>(m_end - m_pos);
    switch (field.wireType) {
    case 0: field.value = readVarint(); break;
    case 1:
        if (remaining < 8) throw ModelError("truncated (a fixed64 field runs past the end)");
        std::memcpy(&field.value, m_pos, 8);
        m_pos += 8;
        break;
    case 5: {
        if (remaining < 4) throw ModelError("truncated (a fixed32 field runs past the end)");
        uint32_t v;
        std::memcpy(&v, m_pos, 4);
        field.value = v;
        m_pos += 4;
        break;
    }
    case 2: {
        const uint64_t len = readVarint();
        if (len > static_cast<uint64_t>(m_end - m_pos))
            throw ModelError("truncated (a field of " + std::to_string(len) + " bytes runs past the end)");
        field.bytes = std::string_view(m_pos, static_cast<size_t>(len));
        m_pos += len;
        break;
    }
    default:
        throw ModelError("unsupported wire type " + std::to_string(field.wireType) + " (not an ONNX model?)");
    }
    return true;
}

void appendVarints(const WireField& f, std::vector<int64_t>& out)
{
    if (f.wireType == 0) {
        out.push_back(static_cast<int64_t>(f.value));
        return;
    }
    expectWireType(f, 2, "packed varints");
    // Packed varints have no keys: read them by hand with the same rules.
    const char* p = f.bytes.data();
    const char* end = p + f.bytes.size();
    while (p != end) {
        uint64_t v = 0;
        int shift = 0;
        for (;; shift += 7) {
            if (p == end) throw ModelError("truncated packed varint");
            if (shift >= 70) throw ModelError("malformed packed varint");
            const auto byte = static_cast<uint8_t>(*p++);
            v |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80)) break;
        }
        out.push_back(static_cast<int64_t>(v));
    }
}

void appendFixed32Floats(const WireField& f, std::vector<float>& out)
{
    if (f.wireType == 5) {
        out.push_back(bitsToFloat(static_cast<uint32_t>(f.value)));
        return;
    }
    expectWireType(f, 2, "packed floats");
    if (f.bytes.size() % 4 != 0) throw ModelError("packed floats have a partial element");
    const size_t n = f.bytes.size() / 4;
    const size_t base = out.size();
    out.resize(base + n);
    if (n) std::memcpy(out.data() + base, f.bytes.data(), n * 4);
}

at::ScalarType scalarTypeFromOnnx(int32_t onnxType)
{
    switch (onnxType) {
    case 1: return at::kFloat;
    case 2: return at::kByte;
    case 3: return at::kChar;
    case 5: return at::kShort;
    case 6: return at::kInt;
    case 7: return at::kLong;
    case 9: return at::kBool;
    case 10: return at::kHalf;
    case 11: return at::kDouble;
    case 16: return at::kBFloat16;
    default: throw ModelError("unsupported tensor data type " + std::to_string(onnxType));
    }
}

ModelDesc parseModel(std::string_view bytes)
{
    if (bytes.empty()) throw ModelError("empty file (not an ONNX model)");
    ModelDesc model;
    bool haveGraph = false, haveIr = false, haveOpset = false;
    WireReader r(bytes);
    WireField f;
    while (r.next(f)) {
        switch (f.number) {
        case field::kModelIrVersion:
            model.irVersion = readInt(f, "ir_version");
            haveIr = true;
            break;
        case field::kModelOpsetImport: {
            expectWireType(f, 2, "opset_import");
            std::string domain;
            int64_t version = 0;
            WireReader o(f.bytes);
            WireField of;
            while (o.next(of)) {
                if (of.number == field::kOpsetDomain) domain = readString(of, "opset domain");
                if (of.number == field::kOpsetVersion) version = readInt(of, "opset version");
            }
            if (domain.empty() || domain == "ai.onnx") {
                model.opset = version;
                haveOpset = true;
            }
            break;
        }
        case field::kModelGraph:
            expectWireType(f, 2, "graph");
            if (haveGraph) throw ModelError("more than one graph (not an ONNX model?)");
            readGraph(f.bytes, model);
            haveGraph = true;
            break;
        default: break;
        }
    }
    if (!haveIr || !haveGraph) throw ModelError("not an ONNX model (no ir_version or no graph)");
    if (!haveOpset) throw ModelError("no opset_import for the default ONNX domain");
    if (model.nodes.empty()) throw ModelError("the graph has no nodes");
    if (model.outputs.empty()) throw ModelError("the graph has no outputs");
    return model;
}

}  // namespace lector::model::onnx
