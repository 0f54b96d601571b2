// DB (differentiable binarisation) post-processing: the detector's probability map -> text line
// quads in image pixels. Called by PpOcrPipeline::detect() on the engine thread; pure functions.
//
// Steps, as PaddleOCR's DBPostProcess (box_type "quad"): threshold the map, trace the outer
// contours of the text regions, take each contour's minimum-area rotated rectangle, drop rectangles
// whose short side is below minSide or whose mean probability inside is below boxThreshold, expand
// ("unclip") the rectangle by distance = area * unclipRatio / perimeter on every side, and scale the
// corners from detector-input pixels to image pixels. Quads are in pixel-corner coordinates (pixel i
// spans [i, i+1)), so an axis-aligned quad from x0 to x1 holds the pixels x0 .. x1-1.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "core/ocr/types.h"

namespace lector::pipeline {

struct DbOptions {
    float threshold = 0.3f;
    float boxThreshold = 0.6f;
    float unclipRatio = 1.5f;
    float minSide = 3.0f;
    int maxCandidates = 1000;
};

// prob: [H, W] (or [1, 1, H, W]) float32 on CPU, the probability map of a detector input that was
// resized from an imageWidth x imageHeight image. Returns the lines in image pixels, corners rounded
// to whole pixels and clipped to the image, in contour order. Boxes thinner than 4 image pixels are dropped.
std::vector<DetectedLine> dbPostprocess(const at::Tensor& prob, int imageWidth, int imageHeight,
                                        const DbOptions& options);

// Corners of a rotated rectangle (centre, size, angle in degrees as OpenCV's RotatedRect) ordered
// top-left, top-right, bottom-right, bottom-left by PaddleOCR's rule: the two leftmost corners are the
// left side, the upper of each side is its top.
Quad orderedRectCorners(PointF center, float width, float height, float angleDeg);

// Mean of prob inside the quad (PaddleOCR box_score_fast). prob: [H, W] float32 CPU.
float boxScore(const at::Tensor& prob, const Quad& quad);

// Expansion distance for a rectangle of this size: area * ratio / perimeter.
float unclipDistance(float width, float height, float unclipRatio);

}  // namespace lector::pipeline
