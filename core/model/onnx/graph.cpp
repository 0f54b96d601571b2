// onnx::Graph: load (parse -> validate -> constants -> fold -> fuse -> plan) and run.
//
// The plan is a list of steps over a table of value slots. Liveness is computed once at load: after
// each step the slots it read for the last time are released, so peak memory is the live set, not
// the whole graph, and a kernel may reuse a dying input as its output buffer (StepContext).
#include "core/model/onnx/graph.h"

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/common/log.h"
#include "core/model/onnx/ops.h"
#include "core/model/onnx/optimize.h"
#include "core/model/onnx/proto.h"
#include "gpu/device.h"

namespace lector::model::onnx {

namespace {

struct Step {
    std::string name;
    std::string opType;
    StepIO io;
    Kernel kernel;
    std::vector<PostOp> postOps;  // applied by the executor (lector.Eltwise applies its own)
    std::vector<int> freeAfter;
};

bool isFloatDtype(at::ScalarType t)
{
    return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

std::string describeShape(at::IntArrayRef sizes)
{
    std::ostringstream s;
    s << sizes;
    return s.str();
}

// The plan captured for one shape of inputs. The inputs live outside the graph's memory pool (each
// replay copies the caller's values into them); the outputs live in it and are copied out after each
// replay, because every captured shape of this Graph shares one pool and another shape's replay may
// write where these outputs are.
struct CapturedRun {
    gpu::CudaGraph graph;
    std::vector<at::Tensor> inputs, outputs;
};

// Shapes (and dtypes) of the prepared inputs: what a captured plan is specific to.
using ShapeKey = std::vector<std::int64_t>;
ShapeKey shapeKey(const std::vector<at::Tensor>& inputs)
{
    ShapeKey key;
    for (const at::Tensor& t : inputs) {
        key.push_back(static_cast<std::int64_t>(t.scalar_type()));
        key.push_back(t.dim());
        for (std::int64_t d : t.sizes()) key.push_back(d);
    }
    return key;
}

// Captured plans a Graph keeps at most. PP-OCR's pipeline rounds its shapes to buckets (a few dozen
// over any set of pages); past this many, or once the captures' outputs (which stay allocated: a batch
// of 32 wide rec lines gives ~70 MB of per-step class probabilities) hold this many bytes, new shapes
// run eagerly. Small enough for a desktop card's memory.
constexpr size_t kMaxCapturedShapes = 96;
constexpr std::int64_t kMaxCapturedOutputBytes = std::int64_t{512} << 20;

}  // namespace

struct Graph::Impl {
    std::string sourceName;
    LoadOptions options;
    std::vector<std::string> inputNames, outputNames;
    std::vector<ValueInfo> inputInfo;
    std::vector<int> inputSlots, outputSlots;
    std::vector<std::pair<int, at::Tensor>> constantSlots;
    size_t numSlots = 0;
    std::vector<Step> steps;

    bool profiling = false;
    mutable std::unordered_map<std::string, OpTiming> timings;

    // CUDA graphs (LoadOptions::cudaGraphs); run() is called from one thread at a time.
    mutable std::map<ShapeKey, std::unique_ptr<CapturedRun>> captured;
    mutable std::set<ShapeKey> ranEagerly;
    mutable const gpu::CudaGraph* pool = nullptr;  // the first capture's; every later one shares it
    mutable std::int64_t capturedOutputBytes = 0;
    mutable bool captureFailed = false;

    void build(const ModelDesc& model);
    at::Tensor prepareInput(size_t i, const at::Tensor& t) const;
    void runStep(const Step& step, std::vector<at::Tensor>& values) const;
    // Consumes its inputs: an input converted for the graph is no one else's and may become a kernel's
    // output buffer (StepContext::takeExclusive).
    std::vector<at::Tensor> runPlan(std::vector<at::Tensor> inputs) const;
    // The outputs through a captured plan, or nothing when this run must be eager.
    std::optional<std::vector<at::Tensor>> runCaptured(const std::vector<at::Tensor>& inputs) const;
};

// --- plan building ---

void Graph::Impl::build(const ModelDesc& model)
{
    std::unordered_map<std::string, int> slotOf;
    auto newSlot = [&](const std::string& name) {
        const int id = static_cast<int>(numSlots++);
        slotOf[name] = id;
        return id;
    };
    for (const auto& in : model.inputs) {
        inputNames.push_back(in.name);
        inputInfo.push_back(in);
        inputSlots.push_back(newSlot(in.name));
    }
    // Constants move to the load device; floats take the graph dtype. Integer constants (shapes,
    // axes) stay on the CPU, where shape arithmetic runs without waiting for the device.
    const bool cpuFast = options.device.is_cpu() && options.dtype == at::kFloat && at::hasMKLDNN();
    for (const auto& [name, t] : model.constants) {
        at::Tensor c = isFloatDtype(t.scalar_type()) ? t.to(options.device, options.dtype) : t;
        constantSlots.push_back({newSlot(name), c.contiguous()});
    }
    std::vector<const at::Tensor*> constantBySlot(numSlots, nullptr);
    for (const auto& [slot, t] : constantSlots) constantBySlot[static_cast<size_t>(slot)] = &t;

    for (const auto& node : model.nodes) {
        Step step;
        step.name = node.name;
        step.opType = node.opType;
        for (const auto& in : node.inputs) step.io.inputs.push_back(in.empty() ? -1 : slotOf.at(in));
        for (const auto& out : node.outputs) step.io.outputs.push_back(out.empty() ? -1 : newSlot(out));
        using Routes = LoadOptions::CudaConvRoutes;
        BuildContext ctx{node, model.opset, options.device, options.dtype, cpuFast, options.cudaConvRoutes != Routes::None,
                         options.cudaConvRoutes == Routes::PointwiseAndDepthwise, {}};
        ctx.constantInput = [&](size_t i) -> const at::Tensor* {
            if (i >= step.io.inputs.size() || step.io.inputs[i] < 0) return nullptr;
            const auto slot = static_cast<size_t>(step.io.inputs[i]);
            return slot < constantBySlot.size() ? constantBySlot[slot] : nullptr;
        };
        try {
            step.kernel = findOp(node.opType)->make(ctx);
        } catch (const ModelError&) {
            throw;
        } catch (const c10::Error& e) {
            throw ModelError("node '" + node.name + "' (" + node.opType + "): " + e.what_without_backtrace());
        }
        if (node.opType != "lector.Eltwise") step.postOps = node.postOps;
        steps.push_back(std::move(step));
    }
    for (const auto& out : model.outputs) {
        outputNames.push_back(out.name);
        outputSlots.push_back(slotOf.at(out.name));
    }

    // Liveness: the last step reading each slot releases it; values nobody reads die at birth.
    std::vector<int> lastRead(numSlots, -1);
    for (int s = 0; s < static_cast<int>(steps.size()); ++s)
        for (int in : steps[static_cast<size_t>(s)].io.inputs)
            if (in >= 0) lastRead[static_cast<size_t>(in)] = s;
    std::vector<bool> pinned(numSlots, false);  // graph outputs and constants
    for (int slot : outputSlots) pinned[static_cast<size_t>(slot)] = true;
    for (const auto& [slot, t] : constantSlots) pinned[static_cast<size_t>(slot)] = true;
    std::vector<bool> isInput(numSlots, false);
    for (int slot : inputSlots) isInput[static_cast<size_t>(slot)] = true;
    for (int s = 0; s < static_cast<int>(steps.size()); ++s) {
        Step& step = steps[static_cast<size_t>(s)];
        for (size_t i = 0; i < step.io.inputs.size(); ++i) {
            const int slot = step.io.inputs[i];
            const bool last = slot >= 0 && lastRead[static_cast<size_t>(slot)] == s && !pinned[static_cast<size_t>(slot)];
            const bool repeated = std::count(step.io.inputs.begin(), step.io.inputs.end(), slot) > 1;
            // Graph inputs are the caller's tensors unless we converted them: StepContext's
            // ownership test tells the two apart at run time.
            step.io.lastUse.push_back(last && !repeated ? 1 : 0);
            if (last && std::find(step.freeAfter.begin(), step.freeAfter.end(), slot) == step.freeAfter.end())
                step.freeAfter.push_back(slot);
        }
        for (int slot : step.io.outputs)
            if (slot >= 0 && lastRead[static_cast<size_t>(slot)] < 0 && !pinned[static_cast<size_t>(slot)])
                step.freeAfter.push_back(slot);
    }
}

// --- execution ---

at::Tensor Graph::Impl::prepareInput(size_t i, const at::Tensor& t) const
{
    const ValueInfo& info = inputInfo[i];
    if (!t.defined()) throw std::runtime_error(sourceName + ": input '" + info.name + "' is undefined");
    if (info.hasShape) {
        bool fits = t.dim() == static_cast<int64_t>(info.dims.size());
        for (size_t d = 0; fits && d < info.dims.size(); ++d)
            fits = info.dims[d] < 0 || info.dims[d] == t.size(static_cast<int64_t>(d));
        if (!fits) {
            std::string want = "[";
            for (size_t d = 0; d < info.dims.size(); ++d) {
                if (d) want += ',';
                want += info.dims[d] < 0 ? std::string("?") : std::to_string(info.dims[d]);
            }
            throw std::runtime_error(sourceName + ": input '" + info.name + "' has shape " + describeShape(t.sizes()) +
                                     ", the graph takes " + want + "]");
        }
    }
    if (isFloatDtype(t.scalar_type())) return t.to(options.device, options.dtype);
    return t.to(options.device);
}

void Graph::Impl::runStep(const Step& step, std::vector<at::Tensor>& values) const
{
    StepContext sc(values, step.io);
    step.kernel(sc);
    if (step.postOps.empty() || step.io.outputs.empty() || step.io.outputs[0] < 0) return;
    at::Tensor& out = values[static_cast<size_t>(step.io.outputs[0])];
    // In place only when nothing else sees the output's memory (a kernel may return a view).
    if (out.use_count() == 1 && out.has_storage() && out.storage().use_count() == 1) {
        applyPostOps(out, out, step.postOps);
    } else {
        at::Tensor dst = at::empty_like(out);
        applyPostOps(out, dst, step.postOps);
        out = std::move(dst);
    }
}

std::vector<at::Tensor> Graph::Impl::runPlan(std::vector<at::Tensor> inputs) const
{
    std::vector<at::Tensor> values(numSlots);
    for (const auto& [slot, t] : constantSlots) values[static_cast<size_t>(slot)] = t;
    for (size_t i = 0; i < inputs.size(); ++i) values[static_cast<size_t>(inputSlots[i])] = std::move(inputs[i]);

    for (const Step& step : steps) {
        const auto start = profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        try {
            runStep(step, values);
        } catch (const c10::Error& e) {
            throw std::runtime_error(sourceName + ": node '" + step.name + "' (" + step.opType +
                                     "): " + e.what_without_backtrace());
        } catch (const std::exception& e) {
            throw std::runtime_error(sourceName + ": node '" + step.name + "' (" + step.opType + "): " + e.what());
        }
        for (int slot : step.freeAfter) values[static_cast<size_t>(slot)].reset();
        if (profiling) {
            auto& t = timings[step.opType];
            t.opType = step.opType;
            ++t.calls;
            t.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        }
    }
    std::vector<at::Tensor> outputs;
    for (int slot : outputSlots) outputs.push_back(values[static_cast<size_t>(slot)].contiguous());
    return outputs;
}

std::optional<std::vector<at::Tensor>> Graph::Impl::runCaptured(const std::vector<at::Tensor>& inputs) const
{
    if (!options.cudaGraphs || !options.device.is_cuda() || profiling || captureFailed || !gpu::cudaGraphsAvailable())
        return std::nullopt;
    const ShapeKey key = shapeKey(inputs);
    auto it = captured.find(key);
    if (it == captured.end()) {
        // The first run of a shape is eager: it creates cuDNN's plans and the workspaces a capture
        // must find ready, and a shape seen once (a page's odd size) costs no capture.
        if (ranEagerly.insert(key).second || captured.size() >= kMaxCapturedShapes ||
            capturedOutputBytes >= kMaxCapturedOutputBytes)
            return std::nullopt;
        auto run = std::make_unique<CapturedRun>();
        for (const at::Tensor& t : inputs) run->inputs.push_back(t.clone());
        try {
            run->graph.capture(options.device, [&] { run->outputs = runPlan(run->inputs); }, pool);
        } catch (const std::exception& e) {
            // An operator that needs the host (a value read back mid-plan) cannot be captured: this
            // graph runs eagerly from now on.
            captureFailed = true;
            LECTOR_LOG_WARN(sourceName << ": running without CUDA graphs, the capture failed: " << e.what());
            return std::nullopt;
        }
        if (!pool) pool = &run->graph;
        for (const at::Tensor& t : run->outputs) capturedOutputBytes += static_cast<std::int64_t>(t.nbytes());
        it = captured.emplace(key, std::move(run)).first;
    } else {
        for (size_t i = 0; i < inputs.size(); ++i) it->second->inputs[i].copy_(inputs[i]);
    }
    it->second->graph.replay();
    std::vector<at::Tensor> outputs;
    for (const at::Tensor& t : it->second->outputs) outputs.push_back(t.clone());
    return outputs;
}

std::vector<at::Tensor> Graph::run(const std::vector<at::Tensor>& inputs) const
{
    const Impl& g = *m_impl;
    c10::InferenceMode guard;
    if (inputs.size() != g.inputSlots.size())
        throw std::runtime_error(g.sourceName + ": run() got " + std::to_string(inputs.size()) + " inputs, the graph takes " +
                                 std::to_string(g.inputSlots.size()));
    std::vector<at::Tensor> prepared;
    for (size_t i = 0; i < inputs.size(); ++i) prepared.push_back(g.prepareInput(i, inputs[i]));
    if (auto outputs = g.runCaptured(prepared)) return std::move(*outputs);
    return g.runPlan(std::move(prepared));
}

// --- loading ---

Result<Graph> Graph::fromModel(ModelDesc model, const std::string& sourceName, const LoadOptions& options)
{
    if (!isFloatDtype(options.dtype))
        return makeError("invalid_argument", sourceName + ": the graph dtype must be float32, float16 or bfloat16");
    if (options.device.is_cuda() && !at::hasCUDA())
        return makeError("device_unavailable", sourceName + ": CUDA was asked for, but this build or machine has none");
    auto impl = std::make_unique<Impl>();
    impl->sourceName = sourceName;
    impl->options = options;
    try {
        c10::InferenceMode guard;
        validateModel(model);
        extractConstants(model);
        if (options.optimize) {
            foldConstants(model);
            fuseGraph(model);
        }
        impl->build(model);
    } catch (const ModelError& e) {
        return makeError("bad_model", sourceName + ": " + e.what());
    } catch (const c10::Error& e) {
        return makeError("bad_model", sourceName + ": " + e.what_without_backtrace());
    } catch (const std::exception& e) {
        return makeError("bad_model", sourceName + ": " + e.what());
    }
    return Graph(std::move(impl));
}

Result<Graph> Graph::loadBytes(std::string_view bytes, const std::string& sourceName, const LoadOptions& options)
{
    ModelDesc model;
    try {
        model = parseModel(bytes);
    } catch (const ModelError& e) {
        return makeError("bad_model", sourceName + ": " + e.what());
    } catch (const c10::Error& e) {
        return makeError("bad_model", sourceName + ": " + e.what_without_backtrace());
    }
    return fromModel(std::move(model), sourceName, options);
}

Result<Graph> Graph::load(const std::filesystem::path& path, const LoadOptions& options)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        return makeError("file_not_found", path.string() + ": no such model file");
    std::ifstream file(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (!file.good() && !file.eof()) return makeError("bad_model", path.string() + ": cannot read the file");
    return loadBytes(bytes, path.string(), options);
}

// --- accessors ---

Graph::Graph(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::~Graph() = default;

const std::vector<std::string>& Graph::inputNames() const { return m_impl->inputNames; }
const std::vector<std::string>& Graph::outputNames() const { return m_impl->outputNames; }
const LoadOptions& Graph::options() const { return m_impl->options; }
size_t Graph::numSteps() const { return m_impl->steps.size(); }
size_t Graph::numCapturedShapes() const { return m_impl->captured.size(); }

std::vector<std::string> Graph::stepOpTypes() const
{
    std::vector<std::string> types;
    for (const auto& s : m_impl->steps) types.push_back(s.opType);
    return types;
}

void Graph::setProfiling(bool on)
{
    m_impl->profiling = on;
    m_impl->timings.clear();
}

std::vector<OpTiming> Graph::profile() const
{
    std::vector<OpTiming> out;
    for (const auto& [type, t] : m_impl->timings) out.push_back(t);
    std::sort(out.begin(), out.end(), [](const OpTiming& a, const OpTiming& b) { return a.ms > b.ms; });
    return out;
}

}  // namespace lector::model::onnx
