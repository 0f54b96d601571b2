// onnx::Graph operator semantics on tiny in-memory graphs, against hand-computed values. Every case
// runs twice: with the load-time optimizer (fused kernels, post-ops) and without (plain kernels).
#include "tests/support/lector_test.h"

#include <cmath>
#include <limits>

#include "tests/model/tst_onnx_util.h"

using lector::model::onnx::Graph;
using lector::model::onnx::LoadOptions;
using namespace lector::test::onnx;

namespace {

at::Tensor floats(std::vector<float> v, std::vector<int64_t> shape)
{
    return at::tensor(v, at::kFloat).view(shape);
}
at::Tensor longs(std::vector<int64_t> v)
{
    return at::tensor(v, at::kLong);
}

std::vector<at::Tensor> runGraph(const ModelDesc& m, const std::vector<at::Tensor>& inputs, bool optimize)
{
    LoadOptions options;
    options.optimize = optimize;
    auto g = Graph::fromModel(m, "test.onnx", options);
    LECTOR_CHECK_MSG(g.ok(), g.error().message);
    return g->run(inputs);
}

void checkClose(const at::Tensor& got, const at::Tensor& want, double tol, const std::string& what)
{
    LECTOR_CHECK_MSG(got.sizes().equals(want.sizes()), what << ": shape " << got.sizes() << " != " << want.sizes());
    const double diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
    LECTOR_CHECK_MSG(diff <= tol, what << ": max diff " << diff << "\n got  " << got << "\n want " << want);
}

// Runs with and without the optimizer; output 0 must match `want` both times.
void expectOutput(const ModelDesc& m, const std::vector<at::Tensor>& inputs, const at::Tensor& want, double tol = 1e-6)
{
    for (bool optimize : {false, true})
        checkClose(runGraph(m, inputs, optimize).at(0), want, tol, optimize ? "optimized" : "plain");
}

ModelDesc resizeGraph(const std::string& mode, const std::string& coord, const std::string& nearest,
                      std::vector<float> scales, std::vector<int64_t> sizes = {})
{
    GraphBuilder b(11);
    b.input("x").constant("roi", at::empty({0}, at::kFloat));
    b.constant("scales", scales.empty() ? at::empty({0}, at::kFloat) : at::tensor(scales, at::kFloat));
    std::vector<std::string> ins{"x", "roi", "scales"};
    if (!sizes.empty()) {
        b.constant("sizes", longs(sizes));
        ins.push_back("sizes");
    }
    b.node("Resize", ins, {"y"},
           {attrString("mode", mode), attrString("coordinate_transformation_mode", coord), attrString("nearest_mode", nearest)});
    return b.output("y").model();
}

}  // namespace

// --- Resize ---

LECTOR_TEST(resizeNearestAsymmetricFloorDoublesLikeTheDetNeck)
{
    auto m = resizeGraph("nearest", "asymmetric", "floor", {1, 1, 2, 2});
    auto want = floats({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 1, 4, 4});
    expectOutput(m, {floats({1, 2, 3, 4}, {1, 1, 2, 2})}, want);
}

LECTOR_TEST(resizeNearestHalfPixelRoundsTiesPerNearestMode)
{
    // out = 3 for in = 2, scale 1.5: source x = (i + 0.5) / 1.5 - 0.5 = -0.17, 0.5, 1.17
    auto x = floats({10, 20}, {1, 1, 1, 2});
    expectOutput(resizeGraph("nearest", "half_pixel", "round_prefer_floor", {1, 1, 1, 1.5f}), {x},
                 floats({10, 10, 20}, {1, 1, 1, 3}));
    expectOutput(resizeGraph("nearest", "half_pixel", "round_prefer_ceil", {1, 1, 1, 1.5f}), {x},
                 floats({10, 20, 20}, {1, 1, 1, 3}));
    // ceil of -0.17 is 0, of 1.17 is 2 -> clamped to 1
    expectOutput(resizeGraph("nearest", "half_pixel", "ceil", {1, 1, 1, 1.5f}), {x}, floats({10, 20, 20}, {1, 1, 1, 3}));
}

LECTOR_TEST(resizeLinearHalfPixelClampsAtTheEdges)
{
    // source x = -0.25, 0.25, 0.75, 1.25 -> clamped 0, 0.25, 0.75, 1
    expectOutput(resizeGraph("linear", "half_pixel", "round_prefer_floor", {1, 1, 1, 2}), {floats({0, 10}, {1, 1, 1, 2})},
                 floats({0, 2.5f, 7.5f, 10}, {1, 1, 1, 4}));
    // the same on a rank-3 input takes the general (per-axis) path
    expectOutput(resizeGraph("linear", "half_pixel", "round_prefer_floor", {1, 1, 2}), {floats({0, 10}, {1, 1, 2})},
                 floats({0, 2.5f, 7.5f, 10}, {1, 1, 4}));
}

LECTOR_TEST(resizeLinearAlignCornersAndAsymmetricIn2d)
{
    expectOutput(resizeGraph("linear", "align_corners", "round_prefer_floor", {}, {1, 1, 1, 3}),
                 {floats({0, 10}, {1, 1, 1, 2})}, floats({0, 5, 10}, {1, 1, 1, 3}));
    // asymmetric: source = i / 2 = 0, 0.5, 1, 1.5 (clamped to 1) on both axes
    auto want = floats({0, 5, 10, 10, 10, 15, 20, 20, 20, 25, 30, 30, 20, 25, 30, 30}, {1, 1, 4, 4});
    expectOutput(resizeGraph("linear", "asymmetric", "round_prefer_floor", {1, 1, 2, 2}),
                 {floats({0, 10, 20, 30}, {1, 1, 2, 2})}, want);
}

LECTOR_TEST(resizeToOnePixelDiffersBetweenHalfPixelModes)
{
    auto x = floats({0, 10}, {1, 1, 1, 2});
    // half_pixel: (0 + 0.5) / 0.5 - 0.5 = 0.5 -> 5; pytorch_half_pixel: 0 for a length-1 output
    expectOutput(resizeGraph("linear", "half_pixel", "floor", {}, {1, 1, 1, 1}), {x}, floats({5}, {1, 1, 1, 1}));
    expectOutput(resizeGraph("linear", "pytorch_half_pixel", "floor", {}, {1, 1, 1, 1}), {x}, floats({0}, {1, 1, 1, 1}));
}

// --- Slice / Reshape ---

LECTOR_TEST(sliceAttributeFormClampsAndTakesNegativeIndices)
{
    GraphBuilder b(9);
    b.input("x").node("Slice", {"x"}, {"y"},
                      {attrInts("starts", {1, -3}), attrInts("ends", {std::numeric_limits<int64_t>::max(), -1}),
                       attrInts("axes", {2, 1})});
    b.output("y");
    // x[b, r, c] = 12 b + 4 r + c; y = x[:, 0:2, 1:4]
    auto want = floats({1, 2, 3, 5, 6, 7, 13, 14, 15, 17, 18, 19}, {2, 2, 3});
    expectOutput(b.model(), {at::arange(24, at::kFloat).view({2, 3, 4})}, want);
}

LECTOR_TEST(sliceInputFormWithStepsAndWithoutAxes)
{
    GraphBuilder b(11);
    b.input("x").constant("s", longs({-1})).constant("e", longs({-6})).constant("a", longs({0})).constant("st", longs({-1}));
    b.constant("s2", longs({0})).constant("e2", longs({5})).constant("st2", longs({2}));
    b.node("Slice", {"x", "s", "e", "a", "st"}, {"rev"});
    b.node("Slice", {"x", "s2", "e2", "", "st2"}, {"even"});
    b.output("rev").output("even");
    for (bool optimize : {false, true}) {
        auto out = runGraph(b.model(), {at::arange(5, at::kFloat)}, optimize);
        checkClose(out[0], floats({4, 3, 2, 1, 0}, {5}), 0, "reversed");
        checkClose(out[1], floats({0, 2, 4}, {3}), 0, "every other");
    }
}

LECTOR_TEST(reshapeCopiesZeroDimsAndInfersMinusOne)
{
    GraphBuilder b(11);
    b.input("x").constant("s1", longs({0, -1})).constant("s2", longs({0, 0, 2, -1})).constant("m1", longs({-1}));
    b.node("Reshape", {"x", "s1"}, {"a"}).node("Reshape", {"x", "s2"}, {"b"});
    // the rec graph's form: Shape -> Slice[0:2] -> Concat(-1) -> Reshape
    b.node("Shape", {"x"}, {"shape"}).node("Slice", {"shape"}, {"head"},
                                           {attrInts("starts", {0}), attrInts("ends", {2}), attrInts("axes", {0})});
    b.node("Concat", {"head", "m1"}, {"target"}, {attrInt("axis", 0)}).node("Reshape", {"x", "target"}, {"c"});
    b.output("a").output("b").output("c");
    auto m = b.model();
    m.opset = 9;  // Slice with attributes
    auto x = at::arange(24, at::kFloat).view({2, 3, 4});
    for (bool optimize : {false, true}) {
        auto out = runGraph(m, {x}, optimize);
        LECTOR_CHECK_EQ(out[0].sizes().vec(), (std::vector<int64_t>{2, 12}));
        LECTOR_CHECK_EQ(out[1].sizes().vec(), (std::vector<int64_t>{2, 3, 2, 2}));
        LECTOR_CHECK_EQ(out[2].sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
        LECTOR_CHECK_EQ(out[1][1][2][1][0].item<float>(), 22.0f);  // 12 + 4*2 + 2*1 + 0
        LECTOR_CHECK_EQ(out[0][1][11].item<float>(), 23.0f);
    }
}

// --- Clip ---

LECTOR_TEST(clipAttributeFormBeforeOpset11)
{
    GraphBuilder b(9);
    b.input("x").node("Clip", {"x"}, {"y"}, {attrFloat("min", 0.0f), attrFloat("max", 6.0f)}).output("y");
    expectOutput(b.model(), {floats({-1, 3, 7}, {3})}, floats({0, 3, 6}, {3}));
}

LECTOR_TEST(clipInputFormWithOmittedBounds)
{
    GraphBuilder b(11);
    b.input("x").constant("lo", at::scalar_tensor(0.0f)).constant("hi", at::scalar_tensor(6.0f));
    b.node("Clip", {"x", "lo", "hi"}, {"both"}).node("Clip", {"x", "", "hi"}, {"maxOnly"}).node("Clip", {"x"}, {"none"});
    b.output("both").output("maxOnly").output("none");
    for (bool optimize : {false, true}) {
        auto out = runGraph(b.model(), {floats({-1, 3, 7}, {3})}, optimize);
        checkClose(out[0], floats({0, 3, 6}, {3}), 0, "both");
        checkClose(out[1], floats({-1, 3, 6}, {3}), 0, "max only");
        checkClose(out[2], floats({-1, 3, 7}, {3}), 0, "none");
    }
}

// --- pooling ---

LECTOR_TEST(averagePoolExcludesPaddingWhenAsked)
{
    auto x = at::arange(1, 10, at::kFloat).view({1, 1, 3, 3});  // 1..9
    // asymmetric pads (top/left 1), 2x2 windows, stride 1
    for (int include : {0, 1}) {
        GraphBuilder b(11);
        b.input("x").node("AveragePool", {"x"}, {"y"},
                          {attrInts("kernel_shape", {2, 2}), attrInts("pads", {1, 1, 0, 0}), attrInt("count_include_pad", include)});
        b.output("y");
        auto want = include ? floats({0.25f, 0.75f, 1.25f, 1.25f, 3, 4, 2.75f, 6, 7}, {1, 1, 3, 3})
                            : floats({1, 1.5f, 2.5f, 2.5f, 3, 4, 5.5f, 6, 7}, {1, 1, 3, 3});
        expectOutput(b.model(), {x}, want);
    }
    // symmetric pads 1, 3x3 windows: corners average 4 values, the centre 9
    GraphBuilder s(11);
    s.input("x").node("AveragePool", {"x"}, {"y"},
                      {attrInts("kernel_shape", {3, 3}), attrInts("pads", {1, 1, 1, 1}), attrInt("count_include_pad", 0)});
    s.output("y");
    auto y = runGraph(s.model(), {x}, true)[0];
    LECTOR_CHECK_NEAR(y[0][0][0][0].item<float>(), 3.0, 1e-6);
    LECTOR_CHECK_NEAR(y[0][0][1][1].item<float>(), 5.0, 1e-6);
    LECTOR_CHECK_NEAR(y[0][0][2][2].item<float>(), 7.0, 1e-6);
    // the rec graph's 3x2 / stride 3x2 pooling
    GraphBuilder r(9);
    r.input("x").node("AveragePool", {"x"}, {"y"},
                      {attrInts("kernel_shape", {3, 2}), attrInts("strides", {3, 2}), attrInts("pads", {0, 0, 0, 0}),
                       attrInt("count_include_pad", 0)});
    r.output("y");
    expectOutput(r.model(), {at::arange(12, at::kFloat).view({1, 1, 3, 4})}, floats({4.5f, 6.5f}, {1, 1, 1, 2}));
}

LECTOR_TEST(maxPoolAndGlobalAveragePool)
{
    GraphBuilder b(9);
    b.input("x").node("MaxPool", {"x"}, {"m"}, {attrInts("kernel_shape", {2, 2}), attrInts("strides", {2, 2})});
    b.node("GlobalAveragePool", {"x"}, {"g"}).output("m").output("g");
    auto x = at::arange(16, at::kFloat).view({1, 1, 4, 4});
    for (bool optimize : {false, true}) {
        auto out = runGraph(b.model(), {x}, optimize);
        checkClose(out[0], floats({5, 7, 13, 15}, {1, 1, 2, 2}), 0, "max");
        checkClose(out[1], floats({7.5f}, {1, 1, 1, 1}), 1e-6, "gap");
    }
}

// --- Softmax ---

LECTOR_TEST(softmaxOpset9CoercesTo2dAtAxis)
{
    const float l2 = std::log(2.0f), l3 = std::log(3.0f), l4 = std::log(4.0f);
    auto x = floats({0, l2, l3, l4}, {1, 2, 2});
    GraphBuilder b(9);
    b.input("x").node("Softmax", {"x"}, {"y"}, {attrInt("axis", 1)}).output("y");
    // opset 9: one softmax over the 4 values after axis 1: exp = 1, 2, 3, 4 over 10
    expectOutput(b.model(), {x}, floats({0.1f, 0.2f, 0.3f, 0.4f}, {1, 2, 2}), 1e-6);
    auto m13 = b.model();
    m13.opset = 13;  // opset 13: along axis 1 only: (1, 3) and (2, 4)
    expectOutput(m13, {x}, floats({0.25f, 1.0f / 3, 0.75f, 2.0f / 3}, {1, 2, 2}), 1e-6);
}

// --- fusions: the optimizer must keep the arithmetic ---

LECTOR_TEST(convBatchNormFoldsIntoOneStep)
{
    GraphBuilder b(11);
    b.input("x").constant("w", floats({2}, {1, 1, 1, 1})).constant("b", floats({1}, {1}));
    b.constant("scale", floats({3}, {1})).constant("shift", floats({0.5f}, {1}));
    b.constant("mean", floats({1}, {1})).constant("var", floats({4}, {1}));
    b.node("Conv", {"x", "w", "b"}, {"c"}, {attrInts("kernel_shape", {1, 1})});
    b.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, {attrFloat("epsilon", 0.0f)});
    b.output("y");
    // x = 1: conv 2*1+1 = 3; BN (3-1)/2*3+0.5 = 3.5. x = -1: conv -1; BN (-2)/2*3+0.5 = -2.5
    expectOutput(b.model(), {floats({1, -1}, {1, 1, 1, 2})}, floats({3.5f, -2.5f}, {1, 1, 1, 2}), 1e-6);
    auto g = Graph::fromModel(b.model(), "t.onnx");
    LECTOR_CHECK(g.ok());
    LECTOR_CHECK_EQ(g->numSteps(), size_t{1});
}

LECTOR_TEST(exportedHardSwishBecomesOnePostOp)
{
    GraphBuilder b(11);
    b.input("x").constant("three", at::scalar_tensor(3.0f)).constant("zero", at::scalar_tensor(0.0f));
    b.constant("six", at::scalar_tensor(6.0f)).constant("six2", at::scalar_tensor(6.0f));
    b.node("Add", {"x", "three"}, {"a"}).node("Clip", {"a", "zero", "six"}, {"c"});
    b.node("Mul", {"x", "c"}, {"m"}).node("Div", {"m", "six2"}, {"y"}).output("y");
    auto want = floats({0, -1.0f / 3, 0, 4.0f / 6, 4}, {5});
    expectOutput(b.model(), {floats({-4, -1, 0, 1, 4}, {5})}, want, 1e-6);
    auto g = Graph::fromModel(b.model(), "t.onnx");
    LECTOR_CHECK(g.ok());
    LECTOR_CHECK_EQ(g->stepOpTypes(), (std::vector<std::string>{"lector.Eltwise"}));
}

LECTOR_TEST(squeezeExcitationResidualKeepsItsValues)
{
    GraphBuilder b(11);
    b.input("x").input("s").node("Mul", {"x", "s"}, {"m"}).node("Add", {"x", "m"}, {"y"}).output("y");
    // y = x + x * s per channel: s = 0.5 for channel 0, 2 for channel 1
    expectOutput(b.model(), {floats({1, 2, 3, 4}, {1, 2, 1, 2}), floats({0.5f, 2}, {1, 2, 1, 1})},
                 floats({1.5f, 3, 9, 12}, {1, 2, 1, 2}));
    auto g = Graph::fromModel(b.model(), "t.onnx");
    LECTOR_CHECK(g.ok());
    LECTOR_CHECK_EQ(g->stepOpTypes(), (std::vector<std::string>{"lector.Eltwise", "Mul"}));
}

LECTOR_TEST(layerNormAndLinearPatternsKeepTheirValues)
{
    GraphBuilder b(9);
    b.input("x").constant("two", at::scalar_tensor(2.0f)).constant("eps", at::scalar_tensor(1e-5f));
    b.constant("gamma", floats({1, 2, 1, 2}, {4})).constant("beta", floats({0, 0, 1, 1}, {4}));
    b.constant("w", floats({1, 0, 0, 1, 1, 1, 0, 0}, {4, 2})).constant("bias", floats({10, 20}, {2}));
    b.node("ReduceMean", {"x"}, {"mean"}, {attrInts("axes", {-1})}).node("Sub", {"x", "mean"}, {"d"});
    b.node("Pow", {"d", "two"}, {"sq"}).node("ReduceMean", {"sq"}, {"var"}, {attrInts("axes", {-1})});
    b.node("Add", {"var", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"sd"}).node("Div", {"d", "sd"}, {"n"});
    b.node("Mul", {"n", "gamma"}, {"g"}).node("Add", {"g", "beta"}, {"ln"});
    b.node("MatMul", {"ln", "w"}, {"mm"}).node("Add", {"mm", "bias"}, {"y"}).output("y");
    // x = 1 2 3 4: mean 2.5, variance 1.25, n = (-1.5, -0.5, 0.5, 1.5) / sqrt(1.25 + 1e-5)
    const float sd = std::sqrt(1.25f + 1e-5f);
    const float n0 = -1.5f / sd, n1 = -0.5f / sd, n2 = 0.5f / sd, n3 = 1.5f / sd;
    const float l0 = n0, l1 = 2 * n1, l2 = n2 + 1, l3 = 2 * n3 + 1;
    // y = ln @ w + bias, w rows (1 0) (0 1) (1 1) (0 0)
    auto want = floats({l0 + l2 + 0 * l3 + 10, l1 + l2 + 0 * l3 + 20}, {1, 2});
    expectOutput(b.model(), {floats({1, 2, 3, 4}, {1, 4})}, want, 1e-5);
    auto g = Graph::fromModel(b.model(), "t.onnx");
    LECTOR_CHECK(g.ok());
    LECTOR_CHECK_EQ(g->stepOpTypes(), (std::vector<std::string>{"lector.LayerNorm", "lector.Linear"}));
}

LECTOR_TEST(convTransposeKernelEqualsStrideAndGeneralCase)
{
    // 1 -> 1 channel, kernel 2 = stride 2: each input pixel stamps w * x + bias
    GraphBuilder b(11);
    b.input("x").constant("w", floats({1, 2, 3, 4}, {1, 1, 2, 2})).constant("b", floats({10}, {1}));
    b.node("ConvTranspose", {"x", "w", "b"}, {"y"}, {attrInts("strides", {2, 2}), attrInts("kernel_shape", {2, 2})});
    b.output("y");
    expectOutput(b.model(), {floats({1, 2}, {1, 1, 1, 2})}, floats({11, 12, 12, 14, 13, 14, 16, 18}, {1, 1, 2, 4}));
    // 8 -> 3 channels, channels-last path, against ATen's transposed convolution
    at::manual_seed(1);
    auto w = at::randn({8, 3, 2, 2}), bias = at::randn({3}), x = at::randn({2, 8, 5, 7});
    GraphBuilder c(11);
    c.input("x").constant("w", w).constant("b", bias);
    c.node("ConvTranspose", {"x", "w", "b"}, {"y"}, {attrInts("strides", {2, 2})}).output("y");
    expectOutput(c.model(), {x}, at::conv_transpose2d(x, w, bias, 2), 1e-4);
    // kernel 3, stride 2, asymmetric pads: the cropped general path
    auto w3 = at::randn({8, 3, 3, 3});
    GraphBuilder d(11);
    d.input("x").constant("w", w3);
    d.node("ConvTranspose", {"x", "w"}, {"y"}, {attrInts("strides", {2, 2}), attrInts("pads", {1, 0, 0, 1})}).output("y");
    auto full = at::conv_transpose2d(x, w3, at::Tensor(), 2);
    expectOutput(d.model(), {x}, full.narrow(2, 1, full.size(2) - 1).narrow(3, 0, full.size(3) - 1), 1e-4);
}

LECTOR_TEST(convWithGroupsStridesAndAsymmetricPads)
{
    at::manual_seed(2);
    auto x = at::randn({2, 8, 9, 11});
    auto dw = at::randn({8, 1, 3, 3}), db = at::randn({8});
    GraphBuilder b(11);
    b.input("x").constant("w", dw).constant("b", db);
    b.node("Conv", {"x", "w", "b"}, {"y"}, {attrInt("group", 8), attrInts("strides", {2, 1}), attrInts("pads", {1, 1, 1, 1})});
    b.output("y");
    const std::vector<int64_t> stride{2, 1}, pad{1, 1}, unit{1, 1};
    expectOutput(b.model(), {x}, at::conv2d(x, dw, db, stride, pad, unit, 8), 1e-4);
    auto w = at::randn({6, 8, 1, 3});
    GraphBuilder a(11);
    a.input("x").constant("w", w);
    a.node("Conv", {"x", "w"}, {"y"}, {attrInts("pads", {0, 2, 0, 0}), attrInts("dilations", {1, 2})}).output("y");
    auto padded = at::constant_pad_nd(x, {2, 0, 0, 0});
    const std::vector<int64_t> one{1, 1}, zero{0, 0}, dil{1, 2};
    expectOutput(a.model(), {x}, at::conv2d(padded, w, at::Tensor(), one, zero, dil), 1e-4);
}

LECTOR_TEST(matMulBatchedLikeTheRecAttentionAndBroadcast)
{
    // [2, 1, 2, 3] x [2, 1, 3, 2] by hand
    auto a = floats({1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}, {2, 1, 2, 3});
    auto b = floats({1, 0, 0, 1, 1, 1, 7, 8, 9, 10, 11, 12}, {2, 1, 3, 2});
    GraphBuilder g(9);
    g.input("a").input("b").node("MatMul", {"a", "b"}, {"y"}).output("y");
    // batch 0: (1 2 3)(4 5 6) x (1 0)(0 1)(1 1) = (4 5)(10 11); batch 1: rows of b picked: (7 8)(9 10)
    expectOutput(g.model(), {a, b}, floats({4, 5, 10, 11, 7, 8, 9, 10}, {2, 1, 2, 2}));
    // the rec attention's sizes and a transposed (non-contiguous) right side, against ATen
    at::manual_seed(3);
    auto q = at::randn({8, 8, 80, 15}), k = at::randn({8, 8, 80, 15});
    expectOutput(g.model(), {q, k.transpose(-1, -2)}, at::matmul(q, k.transpose(-1, -2)), 1e-4);
    // a 2-D right side broadcasts over the batch
    auto x = at::randn({2, 3, 4}), w = at::randn({4, 5});
    expectOutput(g.model(), {x, w}, at::matmul(x, w), 1e-5);
}

LECTOR_TEST(unknownOperatorIsABadModel)
{
    GraphBuilder b(11);
    b.input("x").node("Frobnicate", {"x"}, {"y"}).output("y");
    auto g = Graph::fromModel(b.model(), "tiny.onnx");
    LECTOR_CHECK(!g.ok());
    LECTOR_CHECK_EQ(g.error().code, std::string("bad_model"));
    LECTOR_CHECK_MSG(g.error().message.find("tiny.onnx") != std::string::npos, g.error().message);
    LECTOR_CHECK_MSG(g.error().message.find("unsupported operator Frobnicate in node 'Frobnicate_0'") != std::string::npos,
                     g.error().message);
}

LECTOR_TEST(runRejectsInputsThatDoNotFitWithTheNodeName)
{
    GraphBuilder b(11);
    b.input("x", {-1, 2, -1, -1}).constant("w", at::ones({1, 2, 1, 1}));
    b.node("Conv", {"x", "w"}, {"y"}).output("y");
    auto g = Graph::fromModel(b.model(), "t.onnx");
    LECTOR_CHECK(g.ok());
    bool threw = false;
    try {
        g->run({at::ones({1, 3, 4, 4})});
    } catch (const std::runtime_error& e) {
        threw = std::string(e.what()).find("input 'x'") != std::string::npos;
    }
    LECTOR_CHECK(threw);
    // a rank the declared shape does not fix reaches the kernel, which names the node
    GraphBuilder u(11);
    u.input("x").constant("w", at::ones({1, 2, 1, 1}));
    u.node("Conv", {"x", "w"}, {"y"}).output("y");
    auto g2 = Graph::fromModel(u.model(), "t.onnx");
    threw = false;
    try {
        g2->run({at::ones({1, 3, 4, 4})});
    } catch (const std::runtime_error& e) {
        threw = std::string(e.what()).find("node 'Conv_0' (Conv)") != std::string::npos;
    }
    LECTOR_CHECK(threw);
}

LECTOR_TEST(sharedInputsAreNeverOverwrittenInPlace)
{
    // x feeds two branches; the Relu chain must not modify x for the Sub that reads it after.
    GraphBuilder b(11);
    b.input("x").constant("two", at::scalar_tensor(2.0f));
    b.node("Mul", {"x", "two"}, {"m"}).node("Relu", {"m"}, {"r"}).node("Sub", {"r", "x"}, {"y"}).output("y").output("m");
    auto x = floats({-1, 2}, {2});
    for (bool optimize : {false, true}) {
        auto out = runGraph(b.model(), {x}, optimize);
        checkClose(out[0], floats({1, 2}, {2}), 0, "y");
        checkClose(out[1], floats({-2, 4}, {2}), 0, "m");  // a graph output read again later
        checkClose(x, floats({-1, 2}, {2}), 0, "caller's input");
    }
    // The last reader of a graph input still must not write into the caller's tensor.
    GraphBuilder r(11);
    r.input("x").node("Relu", {"x"}, {"y"}).output("y");
    for (bool optimize : {false, true}) {
        auto out = runGraph(r.model(), {x}, optimize);
        checkClose(out[0], floats({0, 2}, {2}), 0, "relu");
        checkClose(x, floats({-1, 2}, {2}), 0, "caller's input after relu");
    }
}
