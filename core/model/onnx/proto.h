// Our own reader of the protobuf wire format (no libprotobuf, no libonnx) and the ONNX ModelProto
// subset the runtime needs: graph nodes with attributes (float, int, string, tensor, floats, ints),
// initializers, TensorProto data (raw_data and the typed repeated fields; float, int64, int32,
// float16, uint8, int8, bool, double), graph inputs/outputs with their shapes, and the opset.
// Called by Graph::load() on any thread; every malformed input is a ModelError, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/onnx/model.h"

namespace lector::model::onnx {

// One field of a protobuf message: its number, wire type and payload (varint / fixed value, or the
// bytes of a length-delimited field, which point into the caller's buffer).
struct WireField {
    uint32_t number = 0;
    uint32_t wireType = 0;   // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
    uint64_t value = 0;      // varint, fixed32 or fixed64 payload
    std::string_view bytes;  // length-delimited payload
};

// Walks the fields of one message. Throws ModelError("truncated ..." / "bad wire type ...").
class WireReader {
public:
    explicit WireReader(std::string_view data) : m_pos(data.data()), m_end(data.data() + data.size()) {}
    bool next(WireField& field);  // false at the end of the message
    bool atEnd() const { return m_pos == m_end; }

private:
    uint64_t readVarint();
    const char* m_pos;
    const char* m_end;
};

// Packed or unpacked repeated scalar fields append to `out`.
void appendVarints(const WireField& f, std::vector<int64_t>& out);
void appendFixed32Floats(const WireField& f, std::vector<float>& out);

// Parses ModelProto bytes. Throws ModelError with a message that says what is wrong (the caller adds
// the file name).
ModelDesc parseModel(std::string_view bytes);

}  // namespace lector::model::onnx
