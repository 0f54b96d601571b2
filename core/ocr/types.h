// Plain data passed between the PP-OCR pipeline stages (core/ocr): line quads from detection, crop
// references for recognition, recognised line texts, stage timings and the tunable options. No logic.
// Produced and consumed on the engine thread (PpOcrPipeline), but being values they may be copied to
// any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/common/image.h"
#include "core/doc/ocr_result.h"

namespace lector::pipeline {

using doc::PointF;

// Four corners in image pixels: top-left, top-right, bottom-right, bottom-left as seen in image axes
// (clockwise). For text turned by 90 degrees "top-left" is still the corner nearest the image's top left.
using Quad = std::array<PointF, 4>;

struct DetectedLine {
    Quad quad;
    float score = 0;  // mean text probability inside the (un-expanded) box, 0..1
};

struct Detection {
    int imageWidth = 0;
    int imageHeight = 0;
    int inputWidth = 0;   // detector input size (multiples of 32) after the resolution bound
    int inputHeight = 0;
    std::vector<DetectedLine> lines;  // in detector order (not reading order)
    double preprocessMs = 0;
    double detMs = 0;
    double postprocessMs = 0;
};

// One line to recognise: a quad of an image that the caller keeps alive for the call.
struct CropRef {
    const Image* image = nullptr;
    Quad quad;
};

struct LineText {
    std::string text;          // UTF-8; empty when nothing was read
    float confidence = 0;      // mean max-probability of the kept CTC frames, 0 when text is empty
    bool rotated90 = false;    // the crop was tall and turned 90 degrees counter-clockwise before reading
    bool rotated180 = false;   // the angle classifier turned the crop upside down before reading
};

struct StageTimes {
    double cropMs = 0;
    double clsMs = 0;
    double recMs = 0;  // recognition network + CTC decoding
};

struct PipelineOptions {
    // --- detection ---
    // Resolution bound: images above this many pixels are scaled down (aspect kept) before rounding to
    // multiples of 32. Chosen on SROIE receipts, see docs in det_preprocess.h.
    std::int64_t detMaxPixels = 2'000'000;
    float detThreshold = 0.3f;   // probability -> text bitmap
    float boxThreshold = 0.6f;   // minimum mean probability inside a box
    float unclipRatio = 1.5f;    // box expansion: distance = area * ratio / perimeter
    float minBoxSide = 3.0f;     // in detector pixels, before expansion (+2 after)
    int maxCandidates = 1000;
    // Input shape buckets: the detector input is padded (with the normalised value of white) up to a
    // multiple of this many pixels, and classifier / recogniser batches to a power of two, so that few
    // distinct shapes reach the device (on CUDA each new shape costs cuDNN a new plan, ~ms per
    // convolution). -1: automatic (128 on CUDA, off on the CPU, where padding only costs time); 0: off.
    int shapeBucket = -1;
    // --- angle classification ---
    bool useAngleClassifier = true;
    float clsThreshold = 0.9f;   // turn by 180 degrees only above this probability
    // --- recognition ---
    int recMaxBatch = 16;              // crops per recognition batch (sorted by width)
    std::int64_t recMaxBatchPixels = 48 * 320 * 16;  // batch is closed when padded size exceeds this
    float dropScore = 0.5f;            // lines below this confidence are dropped from the result
    bool recoverSpaces = true;         // spaces from CTC frames the greedy path missed (ctc_decoder.h)
    float spaceProbThreshold = 0.05f;  // space-class probability between two characters that means a space
    float cjkGapFactor = 1.15f;        // CJK/Latin boundary gap, relative to the expected pitch, for a space
    // --- text assembly ---
    float paragraphGap = 1.2f;  // vertical gap, in median line heights, that starts a new paragraph
};

}  // namespace lector::pipeline
