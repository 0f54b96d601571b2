// JSON and JSON Lines form of OcrResult, exactly as docs/result-schema.md fixes it, and the way back
// (fromJson) for `lector-cli batch --resume` and the GUI's "open results". Called by the CLI, the batch
// writer (result_writer.h) and the GUI export, from any thread (pure functions).
//
// Shape decisions (the schema leaves them open):
// - Keys come in schema order and "fields" in model order: the type is nlohmann::ordered_json.
//   (A plain nlohmann::json converts to it implicitly, so fromJson also takes those.)
// - Optional fields that are absent are omitted; "error" is always there (null when fine).
// - A failed result has "error": {"code","message"} and no "lines"/"text"/"fields"/"markdown".
// - Numbers: box and polygon coordinates as integers (pixels), confidence rounded to 4 decimals,
//   timings to 0.1 ms. Strings are made valid UTF-8 (U+FFFD), so dump() never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/result.h"
#include "core/doc/ocr_result.h"

namespace lector::doc {

using Json = nlohmann::ordered_json;

Json toJson(const OcrResult& result);
// An array of result objects (for `recognize --format json` with several images).
Json toJsonArray(const std::vector<OcrResult>& results);
// One compact line without the trailing newline (JSON Lines).
std::string toJsonLine(const OcrResult& result);
// Pretty JSON text: one object for one result, an array for any other count, "\n" at the end.
std::string toJsonText(const std::vector<OcrResult>& results, int indent = 2);

// Reads one result object. Unknown keys are ignored, absent optional ones stay empty.
// Error "bad_result" (message prefixed by `source` when given) when a key has the wrong type or
// "image" is missing.
Result<OcrResult> fromJson(const Json& object, std::string_view source = {});

// Reads a whole results file's text: one object, an array of objects, or JSON Lines (one object a
// line; blank lines skipped). Error "bad_result" names `source` and the line/index that failed.
Result<std::vector<OcrResult>> resultsFromJsonText(std::string_view text, std::string_view source);

}  // namespace lector::doc
