// OcrResult: the one result object of docs/result-schema.md, produced by every model and read by the
// exporters (export_json.h, export_csv.h), the CLI and the GUI. Plain data, no logic. Optional fields
// that a model does not produce stay empty and are omitted from the JSON.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/common/result.h"

namespace lector::doc {

struct PointF {
    float x = 0;
    float y = 0;
};

struct TextLine {
    std::string text;
    std::array<int, 4> box{};              // x0, y0, x1, y1 in pixels of the oriented input image
    std::array<PointF, 4> polygon{};       // clockwise from top-left, pixels
    std::optional<float> confidence;       // model's own score in [0,1]; absent for VLMs without one
};

struct TokenCounts {
    int prompt = 0;
    int generated = 0;
};

struct OcrResult {
    std::string image;                     // path as given (relative to the batch root in batch mode)
    int width = 0;                         // after EXIF orientation, before any model resize
    int height = 0;
    std::string model;                     // "ppocr-v4" or "hunyuan-ocr-1.0"
    std::string device;                    // "cpu" or "cuda:0"
    std::string dtype;                     // float32 / float16 / bfloat16
    std::string preset;                    // text, card, invoice, receipt, translate, parse, subtitle, custom
    std::optional<std::string> prompt;     // prompt-driven models only
    std::vector<TextLine> lines;           // reading order
    std::string text;                      // lines joined with \n, paragraphs with a blank line
    std::vector<std::pair<std::string, std::string>> fields;  // extraction presets, in model order
    std::optional<std::string> markdown;   // document parsing
    std::optional<std::string> raw;        // model output before parsing
    std::vector<std::pair<std::string, double>> timingMs;      // stage -> ms, in pipeline order; "total" last
    std::optional<TokenCounts> tokens;
    std::optional<Error> error;            // set: the image failed, lines are empty

    bool failed() const { return error.has_value(); }
    void setTiming(const std::string& stage, double ms);
    double timing(const std::string& stage) const;  // 0 when absent
};

// A result object for an input that failed before or during recognition.
OcrResult makeErrorResult(std::string image, Error error);

}  // namespace lector::doc
