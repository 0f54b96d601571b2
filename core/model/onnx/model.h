// onnx::ModelDesc: the in-memory form of an ONNX model that the runtime works on: nodes with their
// attributes, constant tensors (initializers and Constant nodes), graph inputs and outputs, opset.
// parseModel() (proto.cpp) fills it from ModelProto bytes; tests may also build one by hand and hand
// it to Graph::fromModel(). The optimizer (optimize.cpp) rewrites it in place before the plan is
// built: it adds nodes of the internal "lector.*" operators and fills Node::postOps.
// Plain data; no threading concerns.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/onnx/post_op.h"

namespace lector::model::onnx {

// AttributeProto.AttributeType values of the ONNX schema.
enum class AttrType : int { Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Floats = 6, Ints = 7 };

struct Attribute {
    std::string name;
    AttrType type = AttrType::Undefined;
    float f = 0.0f;
    int64_t i = 0;
    std::string s;
    at::Tensor t;  // CPU, in the stored dtype
    std::vector<float> floats;
    std::vector<int64_t> ints;
};

struct Node {
    std::string name;
    std::string opType;
    std::string domain;
    std::vector<std::string> inputs;   // "" marks an omitted optional input
    std::vector<std::string> outputs;
    std::vector<Attribute> attributes;
    std::vector<PostOp> postOps;       // filled by the optimizer only

    const Attribute* attr(const std::string& attrName) const;
    // Typed getters: the attribute's value, `fallback` when it is absent. They throw ModelError when
    // the attribute exists with another type.
    int64_t attrInt(const std::string& attrName, int64_t fallback) const;
    float attrFloat(const std::string& attrName, float fallback) const;
    std::string attrString(const std::string& attrName, const std::string& fallback) const;
    std::vector<int64_t> attrInts(const std::string& attrName, std::vector<int64_t> fallback = {}) const;
    void setAttr(Attribute a);
};

// A named graph input or output with its declared shape (-1 for a symbolic dimension; empty when the
// file gives no shape) and ONNX element type (0 when not given).
struct ValueInfo {
    std::string name;
    int32_t elemType = 0;
    std::vector<int64_t> dims;
    bool hasShape = false;
};

struct ModelDesc {
    int64_t irVersion = 0;
    int64_t opset = 0;  // of the default ("" / "ai.onnx") domain
    std::vector<Node> nodes;  // topologically sorted, as ONNX requires
    std::map<std::string, at::Tensor> constants;  // initializers + Constant node values, CPU
    std::vector<ValueInfo> inputs;   // graph inputs that are not initializers
    std::vector<ValueInfo> outputs;
};

// Thrown inside the loader and optimizer for a malformed or unsupported model; load() turns it into
// an Error with code "bad_model" whose message starts with the file name.
struct ModelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ONNX TensorProto.DataType -> ATen dtype; throws ModelError for the types we do not support.
at::ScalarType scalarTypeFromOnnx(int32_t onnxType);

}  // namespace lector::model::onnx
