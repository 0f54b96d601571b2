// A forgiving reader for the JSON that vision-language models write when asked for fields: code fences
// (```json ... ```), prose before or after, Python-style single quotes, trailing or missing commas,
// full-width punctuation (｛｝：，“”‘’), bare keys and values, unquoted quotes inside values, and output
// cut off mid-object. Used by output_parser.cpp; pure functions, any thread.
//
// Scalars keep their source text ("128.50" stays "128.50", not 128.5); nested objects and arrays
// become compact JSON text, since a field value is a string in the result schema.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lector::doc {

using FieldList = std::vector<std::pair<std::string, std::string>>;

// The fields of the first JSON object found in `text` (a top-level array of objects is merged;
// a key seen twice keeps both values joined by "; "). nullopt when no object with at least one key
// can be read.
std::optional<FieldList> parseLenientJsonFields(std::string_view text);

// "key: value" / "key：value" lines (Markdown bold and list markers tolerated), for models that answer
// an extraction prompt without JSON. nullopt when no such line exists.
std::optional<FieldList> parseKeyValueLines(std::string_view text);

// The content of the first ``` fenced block (language tag dropped; an unterminated fence runs to the
// end), or nullopt when there is none.
std::optional<std::string_view> fencedBlock(std::string_view text);

}  // namespace lector::doc
