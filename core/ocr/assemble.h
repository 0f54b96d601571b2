// Text assembly for one image: recognised lines -> OcrResult.lines (reading order) and OcrResult.text
// (rows joined with "\n", paragraphs separated by a blank line, boxes of one row joined by a space).
// Called by PpOcrPipeline::assemble() on the engine thread; pure function.
#pragma once

#include <span>

#include "core/doc/ocr_result.h"
#include "core/ocr/types.h"

namespace lector::pipeline {

// texts[i] belongs to detection.lines[i]. Lines with empty text or confidence below
// options.dropScore are left out. Sets result.width, .height, .lines, .text only.
void assembleResult(const Detection& detection, std::span<const LineText> texts, const PipelineOptions& options,
                    doc::OcrResult& result);

// Integer bounding box (x0, y0, x1, y1) of a quad: floor of the minimum, ceil of the maximum, clipped
// to [0, width] x [0, height].
std::array<int, 4> quadBoundingBox(const Quad& quad, int width, int height);

}  // namespace lector::pipeline
