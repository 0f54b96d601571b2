// Attribute access on onnx::Node (see model.h).
#include "core/model/onnx/model.h"

namespace lector::model::onnx {

namespace {
[[noreturn]] void wrongType(const Node& node, const std::string& attrName, const char* expected)
{
    throw ModelError("attribute '" + attrName + "' of node '" + node.name + "' (" + node.opType +
                     ") is not " + expected);
}
}  // namespace

const Attribute* Node::attr(const std::string& attrName) const
{
    for (const auto& a : attributes)
        if (a.name == attrName) return &a;
    return nullptr;
}

int64_t Node::attrInt(const std::string& attrName, int64_t fallback) const
{
    const Attribute* a = attr(attrName);
    if (!a) return fallback;
    if (a->type != AttrType::Int) wrongType(*this, attrName, "an int");
    return a->i;
}

float Node::attrFloat(const std::string& attrName, float fallback) const
{
    const Attribute* a = attr(attrName);
    if (!a) return fallback;
    if (a->type != AttrType::Float) wrongType(*this, attrName, "a float");
    return a->f;
}

std::string Node::attrString(const std::string& attrName, const std::string& fallback) const
{
    const Attribute* a = attr(attrName);
    if (!a) return fallback;
    if (a->type != AttrType::String) wrongType(*this, attrName, "a string");
    return a->s;
}

std::vector<int64_t> Node::attrInts(const std::string& attrName, std::vector<int64_t> fallback) const
{
    const Attribute* a = attr(attrName);
    if (!a) return fallback;
    if (a->type != AttrType::Ints) wrongType(*this, attrName, "a list of ints");
    return a->ints;
}

void Node::setAttr(Attribute a)
{
    for (auto& existing : attributes) {
        if (existing.name == a.name) {
            existing = std::move(a);
            return;
        }
    }
    attributes.push_back(std::move(a));
}

}  // namespace lector::model::onnx
