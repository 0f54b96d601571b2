// Field extraction from PP-OCR lines for the card / invoice / receipt presets: finds the printed labels
// of each field (姓名, 公民身份号码, 发票号码, 开票日期, 合计, Total, Date, ...) among the recognised
// lines and takes the value after the label in the same line, else the nearest line to its right, else
// the line below (using the lines' boxes). HunyuanOCR extracts fields itself (output_parser.h).
// Called by the engine thread after PP-OCR recognition; a pure function of its inputs.
//
// Rules per field come from the preset (preset.h FieldRule): labels (ASCII ones case-insensitive and
// whole-word), an optional regex the value must contain (the match becomes the value), sub-labels to
// strip, multi-line values (addresses), a fallback (regex anywhere, or the first line) and which hit
// wins when a label occurs several times (first, last, largest number).
#pragma once

#include <string>
#include <vector>

#include "core/doc/ocr_result.h"
#include "core/doc/preset.h"

namespace lector::doc {

// Sets result.fields (in field order; fields without a value are left out) from result.lines.
// fieldNames: the fields asked for; empty means the preset's defaults. A name the preset does not
// know is searched for as its own label.
void extractFieldsFromLines(const Preset& preset, OcrResult& result, const std::vector<std::string>& fieldNames = {});

}  // namespace lector::doc
