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
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/model/onnx/model.h"

namespace lector::model::onnx {

struct LoadOptions {
    at::Device device = at::kCPU;
    at::ScalarType dtype = at::kFloat;  // float32 on CPU; float16 on CUDA
    // Load-time rewriting (constant folding, BatchNorm folding, fused activations, see optimize.h).
    // Off only to test the plain operator kernels.
    bool optimize = true;
    // CUDA only: a shape of inputs seen before is run as one CUDA graph of the whole plan, captured at its
    // second run and replayed from then on (one launch instead of hundreds of libtorch dispatches; the
    // first run, eager, creates cuDNN's plans and workspaces). Off: every run eager.
    bool cudaGraphs = true;
    // CUDA only: which convolutions leave cuDNN (ops_nn.cpp): the 1x1 and the depthwise ones (the
    // default), only the 1x1 ones, or none (as before those routes; the last two for comparison).
    enum class CudaConvRoutes { PointwiseAndDepthwise, PointwiseOnly, None };
    CudaConvRoutes cudaConvRoutes = CudaConvRoutes::PointwiseAndDepthwise;
};

// Wall time spent per operator type over the runs since setProfiling(true) (benchmarks, tests).
struct OpTiming {
    std::string opType;
    int64_t calls = 0;
    double ms = 0.0;
};

class Graph {
public:
    // Error codes: "file_not_found"; "bad_model" (truncated, not ONNX, unsupported operator X in node
    // Y, bad attribute ...; the message starts with the file name); "device_unavailable" (CUDA asked
    // for where there is none); "invalid_argument" (dtype not float32/float16/bfloat16).
    static Result<Graph> load(const std::filesystem::path& path, const LoadOptions& options = {});
    // The same from ModelProto bytes; `sourceName` stands for the file in messages.
    static Result<Graph> loadBytes(std::string_view bytes, const std::string& sourceName,
                                   const LoadOptions& options = {});
    // The same from a model built in memory (tests build tiny graphs this way).
    static Result<Graph> fromModel(ModelDesc model, const std::string& sourceName, const LoadOptions& options = {});

    // inputs in the order of inputNames(); float tensors are cast to the graph dtype and moved to its
    // device. Returns the outputs in the order of outputNames(), on the graph's device and dtype.
    std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs) const;

    const std::vector<std::string>& inputNames() const;
    const std::vector<std::string>& outputNames() const;
    const LoadOptions& options() const;

    // Number of executed steps after load-time rewriting (for tests of the optimizer).
    size_t numSteps() const;
    // Operator types of the steps, in execution order (fused ones are named "lector.*").
    std::vector<std::string> stepOpTypes() const;
    // Input shapes that run as a captured CUDA graph (LoadOptions::cudaGraphs); 0 on the CPU.
    size_t numCapturedShapes() const;
    // Per-operator timings need eager runs: while profiling, no graph is captured or replayed.
    void setProfiling(bool on);
    std::vector<OpTiming> profile() const;  // sorted by time, largest first

    Graph(Graph&&) noexcept;
    Graph& operator=(Graph&&) noexcept;
    ~Graph();

private:
    struct Impl;
    explicit Graph(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace lector::model::onnx
