// Load-time validation, constant folding and fusion (see optimize.h for the central idea).
#include "core/model/onnx/optimize.h"

#include <cmath>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/model/onnx/ops.h"

namespace lector::model::onnx {

namespace {

bool isDefaultDomain(const std::string& domain)
{
    return domain.empty() || domain == "ai.onnx";
}

// Who produces and who reads each value. Rebuilt after every round of rewrites; nodes killed during
// a round have an empty opType and are skipped.
struct GraphIndex {
    std::unordered_map<std::string, int> producer;
    std::unordered_map<std::string, std::vector<std::pair<int, int>>> uses;  // (node, input slot)
    std::unordered_set<std::string> graphOutputs;

    explicit GraphIndex(const ModelDesc& model)
    {
        for (int n = 0; n < static_cast<int>(model.nodes.size()); ++n) {
            const Node& node = model.nodes[static_cast<size_t>(n)];
            if (node.opType.empty()) continue;
            for (const auto& out : node.outputs) producer[out] = n;
            for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i)
                if (!node.inputs[static_cast<size_t>(i)].empty()) uses[node.inputs[static_cast<size_t>(i)]].push_back({n, i});
        }
        for (const auto& out : model.outputs) graphOutputs.insert(out.name);
    }

    size_t numUses(const std::string& value) const
    {
        auto it = uses.find(value);
        return it == uses.end() ? 0 : it->second.size();
    }

    // The only reader of `value`, or -1 (several readers, none, or a graph output).
    int singleUser(const std::string& value) const
    {
        if (graphOutputs.count(value)) return -1;
        auto it = uses.find(value);
        if (it == uses.end() || it->second.size() != 1) return -1;
        return it->second.front().first;
    }

    int producerOf(const std::string& value) const
    {
        auto it = producer.find(value);
        return it == producer.end() ? -1 : it->second;
    }
};

class Rewriter {
public:
    explicit Rewriter(ModelDesc& model) : m_model(model), m_index(model) {}

    ModelDesc& model() { return m_model; }
    const GraphIndex& index() const { return m_index; }
    Node& node(int n) { return m_model.nodes[static_cast<size_t>(n)]; }
    bool alive(int n) const { return n >= 0 && !m_model.nodes[static_cast<size_t>(n)].opType.empty() && !m_touched.count(n); }
    void kill(int n) { m_model.nodes[static_cast<size_t>(n)].opType.clear(); }
    void touch(int n) { m_touched.insert(n); }

    const at::Tensor* constant(const std::string& name) const
    {
        auto it = m_model.constants.find(name);
        return it == m_model.constants.end() ? nullptr : &it->second;
    }
    // The value of a one-element floating-point constant.
    std::optional<float> scalar(const std::string& name) const
    {
        const at::Tensor* c = constant(name);
        if (!c || c->numel() != 1 || !at::isFloatingType(c->scalar_type())) return std::nullopt;
        return c->to(at::kFloat).item<float>();
    }
    bool isScalar(const std::string& name, float value, float tol = 0.0f) const
    {
        auto s = scalar(name);
        return s && std::fabs(*s - value) <= tol;
    }
    std::string addConstant(const std::string& hint, at::Tensor t)
    {
        std::string name;
        do {
            name = hint + "/lector_" + std::to_string(m_counter++);
        } while (m_model.constants.count(name));
        m_model.constants[name] = std::move(t);
        return name;
    }

private:
    ModelDesc& m_model;
    GraphIndex m_index;
    std::set<int> m_touched;
    int m_counter = 0;
};

// Runs `pass` over the graph until it changes nothing; each round works on a fresh index.
template <class Pass>
void repeatPass(ModelDesc& model, Pass pass)
{
    for (int round = 0; round < 64; ++round) {
        Rewriter rw(model);
        bool changed = false;
        for (int n = 0; n < static_cast<int>(model.nodes.size()); ++n)
            if (rw.alive(n) && pass(rw, n)) changed = true;
        std::erase_if(model.nodes, [](const Node& node) { return node.opType.empty(); });
        if (!changed) return;
    }
}

// --- Conv / ConvTranspose folding ---

// A constant that broadcasts over a convolution output [N, C, spatial...] with one value per channel
// (or one value in all): its per-channel vector [C] in float32, else undefined.
at::Tensor perChannel(const at::Tensor& c, int64_t channels, int64_t outRank)
{
    if (!at::isFloatingType(c.scalar_type()) || c.dim() > outRank) return {};
    if (c.numel() == 1) return c.to(at::kFloat).reshape({1}).expand({channels}).contiguous();
    // Left-pad to the output rank: only the channel axis (1) may be != 1.
    const int64_t pad = outRank - c.dim();
    for (int64_t d = 0; d < c.dim(); ++d) {
        const int64_t axis = d + pad;
        if (c.size(d) != 1 && !(axis == 1 && c.size(d) == channels)) return {};
    }
    return c.to(at::kFloat).reshape({-1}).contiguous();
}

struct ConvWeights {
    at::Tensor weight;  // float32 copy
    at::Tensor bias;    // [Cout] float32
    int64_t channels = 0;
    bool transposed = false;
    int64_t groups = 1;

    // w * scale per output channel
    void scale(const at::Tensor& s)
    {
        if (!transposed) {
            std::vector<int64_t> shape(static_cast<size_t>(weight.dim()), 1);
            shape[0] = channels;
            weight = weight * s.view(shape);
        } else {  // [Cin, Cout/groups, k...]: output channel g*(Cout/groups)+j
            auto sizes = weight.sizes().vec();
            std::vector<int64_t> grouped{groups, sizes[0] / groups, sizes[1]};
            grouped.insert(grouped.end(), sizes.begin() + 2, sizes.end());
            std::vector<int64_t> sShape{groups, 1, sizes[1]};
            sShape.resize(grouped.size(), 1);
            weight = (weight.reshape(grouped) * s.view(sShape)).reshape(sizes);
        }
        bias = bias * s;
    }
};

std::optional<ConvWeights> convWeights(const Rewriter& rw, const Node& conv)
{
    const bool transposed = conv.opType == "ConvTranspose";
    if (conv.opType != "Conv" && !transposed) return std::nullopt;
    if (!conv.postOps.empty() || conv.inputs.size() < 2) return std::nullopt;
    const at::Tensor* w = rw.constant(conv.inputs[1]);
    if (!w || w->dim() < 3 || w->scalar_type() != at::kFloat) return std::nullopt;
    ConvWeights cw;
    cw.transposed = transposed;
    cw.groups = conv.attrInt("group", 1);
    if (cw.groups < 1 || (transposed && w->size(0) % cw.groups)) return std::nullopt;
    cw.channels = transposed ? w->size(1) * cw.groups : w->size(0);
    cw.weight = w->clone();
    if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
        const at::Tensor* b = rw.constant(conv.inputs[2]);
        if (!b || b->numel() != cw.channels) return std::nullopt;
        cw.bias = b->to(at::kFloat).reshape({-1}).clone();
    } else {
        cw.bias = at::zeros({cw.channels}, at::kFloat);
    }
    return cw;
}

// Folds the reader of a conv output into the conv's weights when it is BatchNormalization or a
// per-channel Add/Sub/Mul/Div by a constant. Returns true when it folded.
bool foldIntoConv(Rewriter& rw, int n, ConvWeights& cw)
{
    Node& conv = rw.node(n);
    const int u = rw.index().singleUser(conv.outputs[0]);
    if (!rw.alive(u)) return false;
    Node& user = rw.node(u);
    const int64_t rank = cw.weight.dim();
    if (user.opType == "BatchNormalization") {
        if (user.outputs.size() != 1 || user.inputs[0] != conv.outputs[0]) return false;
        const at::Tensor *scale = rw.constant(user.inputs[1]), *shift = rw.constant(user.inputs[2]),
                         *mean = rw.constant(user.inputs[3]), *var = rw.constant(user.inputs[4]);
        if (!scale || !shift || !mean || !var || scale->numel() != cw.channels) return false;
        const double eps = user.attrFloat("epsilon", 1e-5f);
        auto s = (scale->to(at::kDouble) / (var->to(at::kDouble) + eps).sqrt()).reshape({-1});
        auto newBias = ((cw.bias.to(at::kDouble) - mean->to(at::kDouble).reshape({-1})) * s +
                        shift->to(at::kDouble).reshape({-1}));
        cw.scale(s.to(at::kFloat));
        cw.bias = newBias.to(at::kFloat);
    } else if (user.opType == "Add" || user.opType == "Sub" || user.opType == "Mul" || user.opType == "Div") {
        const bool convFirst = user.inputs[0] == conv.outputs[0];
        if (!convFirst && user.inputs[1] != conv.outputs[0]) return false;
        if (!convFirst && (user.opType == "Sub" || user.opType == "Div")) return false;
        const at::Tensor* c = rw.constant(user.inputs[convFirst ? 1 : 0]);
        if (!c) return false;
        at::Tensor v = perChannel(*c, cw.channels, rank);
        if (!v.defined()) return false;
        if (user.opType == "Add") cw.bias = cw.bias + v;
        else if (user.opType == "Sub") cw.bias = cw.bias - v;
        else if (user.opType == "Mul") cw.scale(v);
        else cw.scale(v.reciprocal());
    } else {
        return false;
    }
    conv.outputs[0] = user.outputs[0];
    rw.kill(u);
    rw.touch(u);
    return true;
}

bool passFoldConv(Rewriter& rw, int n)
{
    auto cw = convWeights(rw, rw.node(n));
    if (!cw) return false;
    bool folded = false;
    while (foldIntoConv(rw, n, *cw)) folded = true;
    if (!folded) return false;
    Node& conv = rw.node(n);
    conv.inputs.resize(3);
    conv.inputs[1] = rw.addConstant(conv.name + "/weight", cw->weight.contiguous());
    conv.inputs[2] = rw.addConstant(conv.name + "/bias", cw->bias.contiguous());
    rw.touch(n);
    return true;
}

// --- multi-node activation patterns ---

bool clipIs(const Rewriter& rw, const Node& clip, int64_t opset, float lo, float hi)
{
    if (clip.opType != "Clip") return false;
    if (opset < 11) return clip.attrFloat("min", -INFINITY) == lo && clip.attrFloat("max", INFINITY) == hi;
    return clip.inputs.size() == 3 && rw.isScalar(clip.inputs[1], lo) && rw.isScalar(clip.inputs[2], hi);
}

Node eltwiseNode(const std::string& name, const std::string& input, const std::string& output, std::vector<PostOp> ops)
{
    Node e;
    e.name = name;
    e.opType = "lector.Eltwise";
    e.inputs = {input};
    e.outputs = {output};
    e.postOps = std::move(ops);
    return e;
}

// x * clip(x + 3, 0, 6) / 6  ->  HardSwish(x)
bool passHardSwish(Rewriter& rw, int n)
{
    Node& add = rw.node(n);
    if (add.opType != "Add") return false;
    const int xSide = rw.isScalar(add.inputs[1], 3.0f) ? 0 : rw.isScalar(add.inputs[0], 3.0f) ? 1 : -1;
    if (xSide < 0) return false;
    const std::string x = add.inputs[static_cast<size_t>(xSide)];
    const int c = rw.index().singleUser(add.outputs[0]);
    if (!rw.alive(c) || !clipIs(rw, rw.node(c), rw.model().opset, 0.0f, 6.0f)) return false;
    const int m = rw.index().singleUser(rw.node(c).outputs[0]);
    if (!rw.alive(m) || rw.node(m).opType != "Mul") return false;
    const auto& mIn = rw.node(m).inputs;
    const std::string& clipOut = rw.node(c).outputs[0];
    if (!((mIn[0] == x && mIn[1] == clipOut) || (mIn[1] == x && mIn[0] == clipOut))) return false;
    const int d = rw.index().singleUser(rw.node(m).outputs[0]);
    if (!rw.alive(d)) return false;
    const Node& div = rw.node(d);
    const bool divides = div.opType == "Div" && div.inputs[0] == rw.node(m).outputs[0] && rw.isScalar(div.inputs[1], 6.0f);
    const bool multiplies = div.opType == "Mul" && (rw.isScalar(div.inputs[1], 1.0f / 6.0f, 1e-6f) ||
                                                    rw.isScalar(div.inputs[0], 1.0f / 6.0f, 1e-6f));
    if (!divides && !multiplies) return false;
    add = eltwiseNode(add.name, x, div.outputs[0], {PostOp{PostOpKind::HardSwish}});
    for (int k : {c, m, d}) {
        rw.kill(k);
        rw.touch(k);
    }
    rw.touch(n);
    return true;
}

// x * sigmoid(x), also with the exporter's Mul(x, 1.0) in front of the sigmoid  ->  SiLU(x)
bool passSilu(Rewriter& rw, int n)
{
    Node& sig = rw.node(n);
    if (sig.opType != "Sigmoid") return false;
    std::string x = sig.inputs[0];
    const int pre = rw.index().producerOf(x);
    int killPre = -1;
    if (rw.alive(pre) && rw.node(pre).opType == "Mul" && rw.index().singleUser(x) == n) {
        const Node& mul = rw.node(pre);
        if (rw.isScalar(mul.inputs[1], 1.0f)) {
            x = mul.inputs[0];
            killPre = pre;
        } else if (rw.isScalar(mul.inputs[0], 1.0f)) {
            x = mul.inputs[1];
            killPre = pre;
        }
    }
    const int m = rw.index().singleUser(sig.outputs[0]);
    if (!rw.alive(m) || rw.node(m).opType != "Mul") return false;
    const auto& mIn = rw.node(m).inputs;
    if (!((mIn[0] == x && mIn[1] == sig.outputs[0]) || (mIn[1] == x && mIn[0] == sig.outputs[0]))) return false;
    sig = eltwiseNode(sig.name, x, rw.node(m).outputs[0], {PostOp{PostOpKind::Silu}});
    rw.kill(m);
    rw.touch(m);
    if (killPre >= 0) {
        rw.kill(killPre);
        rw.touch(killPre);
    }
    rw.touch(n);
    return true;
}

bool reducesLastAxis(const Node& node)
{
    return node.opType == "ReduceMean" && node.inputs.size() == 1 && node.attrInts("axes") == std::vector<int64_t>{-1} &&
           node.attrInt("keepdims", 1) == 1;
}

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta over the last axis -> LayerNorm
bool passLayerNorm(Rewriter& rw, int n)
{
    const GraphIndex& ix = rw.index();
    Node& mean = rw.node(n);
    if (!reducesLastAxis(mean)) return false;
    const std::string x = mean.inputs[0];
    auto next = [&](int from) { return ix.singleUser(rw.node(from).outputs[0]); };
    const int sub = next(n);
    if (!rw.alive(sub) || rw.node(sub).opType != "Sub" || rw.node(sub).inputs != std::vector<std::string>{x, mean.outputs[0]})
        return false;
    const std::string centred = rw.node(sub).outputs[0];
    if (ix.numUses(centred) != 2 || ix.graphOutputs.count(centred)) return false;
    int pow = -1, div = -1;
    for (const auto& [user, slot] : ix.uses.at(centred)) {
        if (rw.node(user).opType == "Pow" && slot == 0) pow = user;
        if (rw.node(user).opType == "Div" && slot == 0) div = user;
    }
    if (!rw.alive(pow) || !rw.alive(div) || !rw.isScalar(rw.node(pow).inputs[1], 2.0f)) return false;
    const int var = next(pow);
    if (!rw.alive(var) || !reducesLastAxis(rw.node(var))) return false;
    const int addEps = next(var);
    if (!rw.alive(addEps) || rw.node(addEps).opType != "Add" || rw.node(addEps).inputs[0] != rw.node(var).outputs[0])
        return false;
    const auto eps = rw.scalar(rw.node(addEps).inputs[1]);
    const int sqrt = next(addEps);
    if (!eps || !rw.alive(sqrt) || rw.node(sqrt).opType != "Sqrt" || next(sqrt) != div ||
        rw.node(div).inputs[1] != rw.node(sqrt).outputs[0])
        return false;
    const int mul = next(div);
    if (!rw.alive(mul) || rw.node(mul).opType != "Mul" || rw.node(mul).inputs[0] != rw.node(div).outputs[0]) return false;
    const int add = next(mul);
    if (!rw.alive(add) || rw.node(add).opType != "Add" || rw.node(add).inputs[0] != rw.node(mul).outputs[0]) return false;
    const at::Tensor *gamma = rw.constant(rw.node(mul).inputs[1]), *beta = rw.constant(rw.node(add).inputs[1]);
    if (!gamma || !beta || gamma->dim() != 1 || beta->dim() != 1 || gamma->numel() != beta->numel() ||
        !at::isFloatingType(gamma->scalar_type()))
        return false;
    Node ln;
    ln.name = mean.name;
    ln.opType = "lector.LayerNorm";
    ln.inputs = {x, rw.node(mul).inputs[1], rw.node(add).inputs[1]};
    ln.outputs = {rw.node(add).outputs[0]};
    Attribute epsAttr;
    epsAttr.name = "epsilon";
    epsAttr.type = AttrType::Float;
    epsAttr.f = *eps;
    ln.attributes.push_back(epsAttr);
    mean = std::move(ln);
    for (int k : {sub, pow, var, addEps, sqrt, div, mul, add}) {
        rw.kill(k);
        rw.touch(k);
    }
    rw.touch(n);
    return true;
}

// MatMul(x, W const [K, N]) (+ Add(b const [N])) -> lector.Linear(x, W^T, b)
bool passLinear(Rewriter& rw, int n)
{
    Node& mm = rw.node(n);
    if (mm.opType != "MatMul") return false;
    const at::Tensor* w = rw.constant(mm.inputs[1]);
    if (!w || w->dim() != 2 || !at::isFloatingType(w->scalar_type()) || rw.constant(mm.inputs[0])) return false;
    std::vector<std::string> inputs{mm.inputs[0], rw.addConstant(mm.name + "/weight_t", w->t().contiguous())};
    std::string output = mm.outputs[0];
    const int a = rw.index().singleUser(output);
    if (rw.alive(a) && rw.node(a).opType == "Add") {
        const Node& add = rw.node(a);
        const size_t other = add.inputs[0] == output ? 1 : 0;
        const at::Tensor* b = rw.constant(add.inputs[other]);
        if (b && b->dim() == 1 && b->numel() == w->size(1) && at::isFloatingType(b->scalar_type())) {
            inputs.push_back(add.inputs[other]);
            output = add.outputs[0];
            rw.kill(a);
            rw.touch(a);
        }
    }
    mm.opType = "lector.Linear";
    mm.inputs = std::move(inputs);
    mm.outputs = {output};
    rw.touch(n);
    return true;
}

// x + x * s  ->  x * (s + 1): the squeeze-and-excitation residual of the det neck. One pass over x
// instead of two, and s (per channel, [N, C, 1, 1]) is tiny.
bool passScaleResidual(Rewriter& rw, int n)
{
    Node& mul = rw.node(n);
    if (mul.opType != "Mul" || mul.inputs[0] == mul.inputs[1]) return false;
    const int a = rw.index().singleUser(mul.outputs[0]);
    if (!rw.alive(a) || rw.node(a).opType != "Add") return false;
    Node& add = rw.node(a);
    const size_t mSlot = add.inputs[0] == mul.outputs[0] ? 0 : 1;
    const std::string& x = add.inputs[1 - mSlot];
    if (x != mul.inputs[0] && x != mul.inputs[1]) return false;
    const std::string s = x == mul.inputs[0] ? mul.inputs[1] : mul.inputs[0];
    if (rw.constant(s) || rw.constant(x)) return false;
    const std::string y = add.outputs[0], scale = mul.outputs[0] + "/plus_one";
    // Mul's slot computes s + 1; Add's slot (after it) computes x * (s + 1).
    mul = eltwiseNode(mul.name, s, scale, {PostOp{PostOpKind::Affine, 1.0f, 1.0f}});
    Node product;
    product.name = add.name;
    product.opType = "Mul";
    product.inputs = {x, scale};
    product.outputs = {y};
    add = std::move(product);
    rw.touch(n);
    rw.touch(a);
    return true;
}

// --- single-node elementwise ops -> lector.Eltwise, then into their producer ---

// A lower bound of each value's rank, from the declared graph inputs forward. A scalar constant of
// shape [1] may become a post-op only where its input is known to have rank >= 1: otherwise the
// broadcast could change the output's shape.
std::unordered_map<std::string, int64_t> minRanks(const ModelDesc& model)
{
    std::unordered_map<std::string, int64_t> rank;
    for (const auto& in : model.inputs) rank[in.name] = in.hasShape ? static_cast<int64_t>(in.dims.size()) : 0;
    for (const auto& [name, t] : model.constants) rank[name] = t.dim();
    auto of = [&](const std::string& v) {
        auto it = rank.find(v);
        return it == rank.end() ? int64_t{0} : it->second;
    };
    static const std::set<std::string> kSameAsInput{"Relu", "Sigmoid", "HardSigmoid", "Clip", "Sqrt", "Cast",
                                                    "Softmax", "BatchNormalization", "GlobalAveragePool",
                                                    "AveragePool", "MaxPool", "Resize", "Concat", "Identity",
                                                    "lector.Eltwise", "lector.LayerNorm", "lector.Linear"};
    static const std::set<std::string> kBroadcast{"Add", "Sub", "Mul", "Div", "Pow", "MatMul"};
    for (const auto& node : model.nodes) {
        if (node.opType.empty() || node.outputs.empty()) continue;
        int64_t r = 0;
        if (node.opType == "Conv" || node.opType == "ConvTranspose") {
            const auto it = model.constants.find(node.inputs[1]);
            r = it != model.constants.end() ? it->second.dim() : of(node.inputs[0]);
        } else if (kSameAsInput.count(node.opType)) {
            r = of(node.inputs[0]);
        } else if (kBroadcast.count(node.opType)) {
            r = std::max(of(node.inputs[0]), of(node.inputs[1]));
        }
        rank[node.outputs[0]] = r;
    }
    return rank;
}

std::optional<PostOp> asPostOp(const Rewriter& rw, const Node& node, int64_t opset, std::string& x,
                               const std::unordered_map<std::string, int64_t>& ranks)
{
    const std::string& t = node.opType;
    if (t == "Relu" || t == "Sigmoid" || t == "HardSigmoid") {
        x = node.inputs[0];
        if (t == "Relu") return PostOp{PostOpKind::Relu};
        if (t == "Sigmoid") return PostOp{PostOpKind::Sigmoid};
        return PostOp{PostOpKind::HardSigmoid, node.attrFloat("alpha", 0.2f), node.attrFloat("beta", 0.5f)};
    }
    if (t == "Clip") {
        x = node.inputs[0];
        if (opset < 11) return PostOp{PostOpKind::Clip, node.attrFloat("min", -INFINITY), node.attrFloat("max", INFINITY)};
        float lo = -INFINITY, hi = INFINITY;
        for (size_t i = 1; i < node.inputs.size(); ++i) {
            if (node.inputs[i].empty()) continue;
            auto v = rw.scalar(node.inputs[i]);
            if (!v) return std::nullopt;
            (i == 1 ? lo : hi) = *v;
        }
        return PostOp{PostOpKind::Clip, lo, hi};
    }
    if (t != "Add" && t != "Sub" && t != "Mul" && t != "Div") return std::nullopt;
    // The constant must not raise the other operand's rank by broadcasting.
    auto scalarOf = [&](size_t i) -> std::optional<float> {
        const at::Tensor* c = rw.constant(node.inputs[i]);
        if (!c) return std::nullopt;
        auto r = ranks.find(node.inputs[1 - i]);
        if (c->dim() > (r == ranks.end() ? 0 : r->second)) return std::nullopt;
        return rw.scalar(node.inputs[i]);
    };
    const bool commutative = t == "Add" || t == "Mul";
    std::optional<float> c = scalarOf(1);
    x = node.inputs[0];
    if (!c && commutative) {
        c = scalarOf(0);
        x = node.inputs[1];
    }
    if (!c || rw.constant(x)) return std::nullopt;
    if (t == "Add") return PostOp{PostOpKind::Affine, 1.0f, *c};
    if (t == "Sub") return PostOp{PostOpKind::Affine, 1.0f, -*c};
    if (t == "Mul") return PostOp{PostOpKind::Affine, *c, 0.0f};
    if (*c == 0.0f) return std::nullopt;
    return PostOp{PostOpKind::Affine, 1.0f / *c, 0.0f};
}

bool passToEltwise(Rewriter& rw, int n, const std::unordered_map<std::string, int64_t>& ranks)
{
    Node& node = rw.node(n);
    std::string x;
    auto op = asPostOp(rw, node, rw.model().opset, x, ranks);
    if (!op) return false;
    node = eltwiseNode(node.name, x, node.outputs[0], {*op});
    rw.touch(n);
    return true;
}

// Operators whose first output is a fresh float tensor that post-ops may overwrite (the executor
// still copies when the output shares storage with anything).
bool takesPostOps(const std::string& t)
{
    static const std::set<std::string> kOps{"Conv", "ConvTranspose", "BatchNormalization", "GlobalAveragePool",
                                            "AveragePool", "MaxPool", "Resize", "Add", "Sub", "Mul", "Div",
                                            "MatMul", "Concat", "Softmax", "lector.Linear", "lector.LayerNorm",
                                            "lector.Eltwise"};
    return kOps.count(t) > 0;
}

bool passMergeEltwise(Rewriter& rw, int n)
{
    Node& e = rw.node(n);
    if (e.opType != "lector.Eltwise") return false;
    const int p = rw.index().producerOf(e.inputs[0]);
    if (!rw.alive(p) || !takesPostOps(rw.node(p).opType) || rw.index().singleUser(e.inputs[0]) != n) return false;
    Node& prod = rw.node(p);
    if (prod.outputs.empty() || prod.outputs[0] != e.inputs[0]) return false;
    prod.postOps.insert(prod.postOps.end(), e.postOps.begin(), e.postOps.end());
    prod.outputs[0] = e.outputs[0];
    rw.kill(n);
    rw.touch(n);
    rw.touch(p);
    return true;
}

// Consecutive Affine post-ops merge; leading ones of a Conv go into its weights.
void simplifyPostOps(ModelDesc& model)
{
    Rewriter rw(model);
    for (int n = 0; n < static_cast<int>(model.nodes.size()); ++n) {
        Node& node = rw.node(n);
        auto& ops = node.postOps;
        for (size_t i = 1; i < ops.size();) {
            if (ops[i - 1].kind == PostOpKind::Affine && ops[i].kind == PostOpKind::Affine) {
                ops[i - 1].b = ops[i - 1].b * ops[i].a + ops[i].b;
                ops[i - 1].a *= ops[i].a;
                ops.erase(ops.begin() + static_cast<long>(i));
            } else {
                ++i;
            }
        }
        if (ops.empty() || ops.front().kind != PostOpKind::Affine) continue;
        const std::vector<PostOp> saved = ops;
        ops.clear();  // convWeights() wants a conv without post-ops
        auto cw = convWeights(rw, node);
        if (!cw) {
            ops = saved;
            continue;
        }
        cw->scale(at::full({cw->channels}, saved.front().a, at::kFloat));
        cw->bias = cw->bias + saved.front().b;
        node.inputs.resize(3);
        node.inputs[1] = rw.addConstant(node.name + "/weight", cw->weight.contiguous());
        node.inputs[2] = rw.addConstant(node.name + "/bias", cw->bias.contiguous());
        ops.assign(saved.begin() + 1, saved.end());
    }
}

void removeDeadNodes(ModelDesc& model)
{
    std::unordered_set<std::string> needed;
    for (const auto& out : model.outputs) needed.insert(out.name);
    std::vector<bool> keep(model.nodes.size(), false);
    for (size_t k = model.nodes.size(); k-- > 0;) {
        const Node& node = model.nodes[k];
        for (const auto& out : node.outputs)
            if (needed.count(out)) keep[k] = true;
        if (keep[k])
            for (const auto& in : node.inputs) needed.insert(in);
    }
    size_t k = 0;
    std::erase_if(model.nodes, [&](const Node&) { return !keep[k++]; });
    std::erase_if(model.constants, [&](const auto& kv) { return !needed.count(kv.first); });
}

}  // namespace

void validateModel(const ModelDesc& model)
{
    std::unordered_set<std::string> defined;
    for (const auto& in : model.inputs) defined.insert(in.name);
    for (const auto& [name, t] : model.constants) defined.insert(name);
    for (const auto& node : model.nodes) {
        const std::string label = "node '" + node.name + "'";
        const OpSpec* spec = node.opType.rfind("lector.", 0) == 0 ? nullptr : findOp(node.opType);
        if (node.opType == "Constant") spec = nullptr;
        if (node.opType != "Constant" && (!spec || !isDefaultDomain(node.domain)))
            throw ModelError("unsupported operator " + (node.domain.empty() ? "" : node.domain + ".") + node.opType +
                             " in " + label);
        if (spec) {
            const auto numIn = static_cast<int>(node.inputs.size()), numOut = static_cast<int>(node.outputs.size());
            if (numIn < spec->minInputs || numIn > spec->maxInputs || numOut < spec->minOutputs || numOut > spec->maxOutputs)
                throw ModelError(label + " (" + node.opType + ") has " + std::to_string(numIn) + " inputs and " +
                                 std::to_string(numOut) + " outputs, which " + node.opType + " does not take");
        }
        for (const auto& in : node.inputs)
            if (!in.empty() && !defined.count(in))
                throw ModelError(label + " (" + node.opType + ") reads '" + in + "', which nothing defines before it");
        for (const auto& out : node.outputs) {
            if (out.empty()) continue;
            if (!defined.insert(out).second)
                throw ModelError(label + " (" + node.opType + ") redefines value '" + out + "'");
        }
    }
    for (const auto& out : model.outputs)
        if (!defined.count(out.name)) throw ModelError("graph output '" + out.name + "' is never computed");
}

void extractConstants(ModelDesc& model)
{
    std::erase_if(model.nodes, [&](const Node& node) {
        if (node.opType != "Constant" || !isDefaultDomain(node.domain)) return false;
        if (node.outputs.size() != 1 || node.attributes.size() != 1)
            throw ModelError("Constant node '" + node.name + "' must have one output and one attribute");
        const Attribute& a = node.attributes.front();
        at::Tensor value;
        if (a.name == "value" && a.type == AttrType::Tensor) value = a.t;
        else if (a.name == "value_float" && a.type == AttrType::Float) value = at::scalar_tensor(a.f, at::kFloat);
        else if (a.name == "value_int" && a.type == AttrType::Int) value = at::scalar_tensor(a.i, at::kLong);
        else if (a.name == "value_floats" && a.type == AttrType::Floats) value = at::tensor(a.floats, at::kFloat);
        else if (a.name == "value_ints" && a.type == AttrType::Ints) value = at::tensor(a.ints, at::kLong);
        else throw ModelError("Constant node '" + node.name + "': attribute '" + a.name + "' is not supported");
        model.constants[node.outputs[0]] = value;
        return true;
    });
}

void foldConstants(ModelDesc& model)
{
    std::erase_if(model.nodes, [&](const Node& node) {
        const OpSpec* spec = findOp(node.opType);
        if (!spec || !spec->foldable) return false;
        std::vector<at::Tensor> values;
        StepIO io;
        for (const auto& in : node.inputs) {
            if (in.empty()) {
                io.inputs.push_back(-1);
            } else {
                auto it = model.constants.find(in);
                if (it == model.constants.end()) return false;
                io.inputs.push_back(static_cast<int>(values.size()));
                values.push_back(it->second);
            }
            io.lastUse.push_back(0);  // never overwrite a constant
        }
        for (size_t i = 0; i < node.outputs.size(); ++i) {
            io.outputs.push_back(static_cast<int>(values.size()));
            values.emplace_back();
        }
        BuildContext ctx{node, model.opset, at::kCPU, at::kFloat, false, false, false, {}};
        ctx.constantInput = [&](size_t i) -> const at::Tensor* {
            return i < io.inputs.size() && io.inputs[i] >= 0 ? &values[static_cast<size_t>(io.inputs[i])] : nullptr;
        };
        Kernel kernel = spec->make(ctx);
        StepContext sc(values, io);
        c10::InferenceMode guard;
        kernel(sc);
        for (size_t i = 0; i < node.outputs.size(); ++i) {
            at::Tensor out = values[static_cast<size_t>(io.outputs[i])];
            if (!node.postOps.empty() && i == 0) {
                at::Tensor dst = at::empty_like(out);
                applyPostOps(out, dst, node.postOps);
                out = dst;
            }
            // Own the memory: a folded view must not pin (or alias) another constant.
            if (!node.outputs[i].empty()) model.constants[node.outputs[i]] = out.contiguous().clone();
        }
        return true;
    });
}

void fuseGraph(ModelDesc& model)
{
    repeatPass(model, passFoldConv);
    repeatPass(model, passHardSwish);
    repeatPass(model, passSilu);
    repeatPass(model, passLayerNorm);
    repeatPass(model, passLinear);
    repeatPass(model, passScaleResidual);
    {
        const auto ranks = minRanks(model);  // node renames below keep each value's rank
        repeatPass(model, [&](Rewriter& rw, int n) { return passToEltwise(rw, n, ranks); });
    }
    repeatPass(model, passMergeEltwise);
    simplifyPostOps(model);
    removeDeadNodes(model);
}

}  // namespace lector::model::onnx
