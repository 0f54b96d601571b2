// onnx::Graph: runs an ONNX inference graph on libtorch (ATen) ops. It exists because onnxruntime and
// OpenCV DNN are not options (docs/architecture.md); it supports exactly the operators of the PP-OCRv4
// det / rec and PP-OCR mobile v2 cls graphs (opsets 9 and 11), with dynamic batch, height and width.
// Weights (Constant nodes and initializers) are converted once at load, to the load device and dtype.
//
// Threading: load() anywhere; run() is const and may be called from one thread at a time per Graph
// (the engine thread). Errors: load() returns an Error naming the file ("bad_model"); run() throws
// std::runtime_error naming the node and operator when an input does not fit.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/common/result.h"

namespace lector::model::onnx {

struct LoadOptions {
    at::Device device = at::kCPU;
    at::ScalarType dtype = at::kFloat;  // float32 on CPU; float16 on CUDA
};

class Graph {
public:
    static Result<Graph> load(const std::filesystem::path& path, const LoadOptions& options = {});

    // inputs in the order of inputNames(); float tensors are cast to the graph dtype and moved to its
    // device. Returns the outputs in the order of outputNames(), on the graph's device and dtype.
    std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) const;

    const std::vector<std::string>& inputNames() const;
    const std::vector<std::string>& outputNames() const;
    const LoadOptions& options() const;

    Graph(Graph&&) noexcept;
    Graph& operator=(Graph&&) noexcept;
    ~Graph();

private:
    struct Impl;
    explicit Graph(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace lector::model::onnx
