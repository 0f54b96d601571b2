// Reading order of detected lines and their grouping into text rows and paragraphs. Called by
// PpOcrPipeline::assemble() on the engine thread; pure function.
//
// Central idea: a recursive XY-cut in the page's own text frame. The frame is the dominant reading
// direction of the lines (from each quad and how its crop was turned), so skewed, rotated and upside
// down pages are ordered as if upright. In that frame a region is split
//  - into columns at a vertical gutter when the text on both sides is wide (median line width at least
//    columnMinWidth line heights): text columns, read left one first, each top to bottom;
//  - otherwise into horizontal bands at vertical gaps, top to bottom; consecutive bands that share a
//    valid column gutter (a two-column body under a full-width title) are regrouped into columns first.
// A gutter with narrow text on one side (receipt labels and prices, table cells) is not a column: such
// rows are read left to right. Boxes of one band in one region form one text row, so a row never
// joins text from two columns.
#pragma once

#include <span>
#include <vector>

#include "core/ocr/types.h"

namespace lector::pipeline {

struct LineGeometry {
    Quad quad;               // image pixels, tl, tr, br, bl in image axes (Detection order)
    bool rotated90 = false;  // LineText::rotated90: text runs along tl->bl
    bool rotated180 = false; // LineText::rotated180: text runs backwards
};

struct ReadingOrderOptions {
    float paragraphGap = 1.2f;     // band gap, in median line heights, that starts a paragraph
    float columnMinGap = 0.8f;     // narrowest column gutter, in median line heights
    float columnMinWidth = 5.0f;   // median line width on both sides of a column gutter, in line heights
};

struct TextRow {
    std::vector<int> lines;        // indices into the input, left to right
    bool paragraphBefore = false;  // a blank line precedes this row in the text
};

// Rows in reading order; every input index appears in exactly one row.
std::vector<TextRow> readingOrder(std::span<const LineGeometry> lines, const ReadingOrderOptions& options = {});

// Unit vector of a line's reading direction in image axes.
PointF readingDirection(const LineGeometry& line);

}  // namespace lector::pipeline
