// Conv library calls against the fp64 reference and the eager nodes: BatchNormalization folding,
// relu and residual (ResNet's basic block), window attributes, 1-D to 3-D, NaN/Inf, zero-size
// batch, concurrent runs.
#include <thread>

#include "graphs.h"
#include "library_test_util.h"

namespace kiln::library_test {
namespace {

// Random tensors for the group's non-constant inputs, at `dims` for the first one (else its type).
std::map<ValueId, Tensor> group_inputs(const Graph& g, const LibraryGroup& grp, std::mt19937& rng, double specials,
                                       std::vector<int64_t> first_dims = {}) {
  std::map<ValueId, Tensor> r;
  for (size_t i = 0; i < grp.inputs.size(); ++i) {
    ValueId v = grp.inputs[i];
    if (g.value(v).constant) continue;
    std::vector<int64_t> dims = i == 0 && !first_dims.empty() ? first_dims : static_dims(g.value(v).type.shape);
    r[v] = random_f32(dims, rng, specials);
  }
  return r;
}

TEST(LibraryConv, BasicBlockGroupsMatchReference) {
  for (double specials : {0.0, 0.003}) {
    Graph g = basic_block(2, 8, 7, 3);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 2u);
    std::mt19937 rng(17);
    for (const auto& grp : groups)
      for (int rep = 0; rep < 2; ++rep)
        check_group(g, grp, group_inputs(g, grp, rng, specials), 1e-4, 1e-4,
                    grp.label + (specials > 0 ? " with NaN/Inf" : ""));
  }
}

TEST(LibraryConv, ReluKeepsNaN) {
  Graph g = basic_block(1, 4, 5, 5);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 2u);
  std::mt19937 rng(3);
  auto in = group_inputs(g, groups[1], rng, 0.0);
  ValueId residual = groups[1].inputs[size_t(groups[1].residual)];
  in[residual].data<float>()[4] = NAN;  // one NaN in the residual: one NaN out (oneDNN's relu would give 0)
  EXPECT_EQ(count_nan(run_fused(g, groups[1], in)), 1);
  check_group(g, groups[1], in, 1e-4, 1e-4, "residual NaN");
}

struct ConvSpec {
  std::vector<int64_t> x;  // [N, C, spatial..]
  int64_t oc = 6;
  std::vector<int64_t> kernel{3, 3};
  Attrs attrs{};
  bool bias = true;
  bool bias_add = false;  // a separate Add of a [1, OC, 1..] constant instead of the conv's bias
  Act act = Act::relu;
  std::string what;
};

void check_conv(const ConvSpec& s, double specials) {
  GraphBuilder b("conv");
  ValueId x = b.input("x", DType::f32, s.x);
  int64_t group = 1;
  for (const auto& a : s.attrs)
    if (a.name == "group") group = std::get<int64_t>(a.value.value);
  std::vector<int64_t> wdims{s.oc, s.x[1] / group};
  wdims.insert(wdims.end(), s.kernel.begin(), s.kernel.end());
  std::vector<ValueId> ins{x, b.constant("w", random_uniform(DType::f32, wdims, -0.5, 0.5, 1))};
  if (s.bias) ins.push_back(b.constant("b", random_uniform(DType::f32, {s.oc}, -0.5, 0.5, 2)));
  ValueId y = b.op(OpKind::Conv, ins, s.attrs);
  if (s.bias_add) {
    std::vector<int64_t> bdims(s.x.size() - 1, 1);
    bdims[0] = s.oc;
    y = b.op(OpKind::Add, {y, b.constant("c", random_uniform(DType::f32, bdims, -0.5, 0.5, 3))});
  }
  b.output(activation(b, y, s.act), "y");
  Graph g = inferred(b);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 1u) << s.what;
  ASSERT_EQ(groups[0].nodes.size(), g.nodes.size()) << s.what << ": " << groups[0].label;
  std::mt19937 rng(23);
  check_group(g, groups[0], group_inputs(g, groups[0], rng, specials), 1e-4, 1e-4, s.what);
}

TEST(LibraryConv, WindowAttributesAndRanks) {
  std::vector<ConvSpec> specs = {
      {.x = {2, 4, 9, 8}, .attrs = {{"strides", {2, 1}}, {"pads", {1, 0, 2, 1}}}, .what = "stride, asymmetric pads"},
      {.x = {1, 4, 9, 9}, .attrs = {{"dilations", {2, 2}}, {"pads", {2, 2, 2, 2}}}, .what = "dilation"},
      {.x = {1, 4, 7, 7}, .attrs = {{"group", 2}}, .act = Act::tanh, .what = "groups"},
      {.x = {1, 4, 7, 7}, .oc = 4, .attrs = {{"group", 4}}, .act = Act::sigmoid, .what = "depthwise"},
      {.x = {1, 3, 8, 7}, .attrs = {{"auto_pad", "SAME_UPPER"}, {"strides", {2, 2}}}, .what = "SAME_UPPER"},
      {.x = {1, 3, 8, 7}, .kernel = {2, 2}, .attrs = {{"auto_pad", "SAME_LOWER"}}, .what = "SAME_LOWER"},
      {.x = {1, 3, 6, 6}, .attrs = {{"auto_pad", "VALID"}}, .bias = false, .what = "VALID, no bias"},
      {.x = {2, 3, 6, 6}, .bias = false, .bias_add = true, .act = Act::gelu0, .what = "bias Add, GELU"},
      {.x = {2, 5, 11}, .kernel = {3}, .attrs = {{"pads", {1, 1}}}, .what = "1-D"},
      {.x = {1, 2, 4, 5, 6}, .kernel = {2, 3, 2}, .attrs = {{"pads", {1, 0, 1, 0, 1, 1}}}, .what = "3-D"},
      {.x = {1, 1, 1, 1}, .oc = 1, .kernel = {1, 1}, .what = "1x1 of one element"},
      {.x = {1, 3, 5, 5}, .oc = 7, .kernel = {5, 5}, .act = Act::none, .what = "kernel covers input"},
      {.x = {2, 5, 8, 8}, .oc = 16, .act = Act::silu, .what = "SiLU"},
      {.x = {1, 4, 9, 9}, .oc = 8, .attrs = {{"strides", {2, 2}}}, .act = Act::hard_swish, .what = "HardSwish"},
  };
  for (const ConvSpec& s : specs) {
    check_conv(s, 0.0);
    ConvSpec nan = s;
    nan.what += " with NaN/Inf";
    check_conv(nan, 0.01);
  }
}

TEST(LibraryConv, SymbolicBatchIncludingZero) {
  GraphBuilder b("sym");
  ValueId x = b.input("x", DType::f32, Shape{Dim::sym("batch"), Dim::fixed(3), Dim::fixed(6), Dim::fixed(6)});
  ValueId w = b.constant("w", random_uniform(DType::f32, {5, 3, 3, 3}, -0.5, 0.5, 1));
  ValueId bias = b.constant("b", random_uniform(DType::f32, {5}, -0.5, 0.5, 2));
  b.output(b.op(OpKind::Relu, {b.op(OpKind::Conv, {x, w, bias}, {{"pads", {1, 1, 1, 1}}})}), "y");
  Graph g = inferred(b);
  auto grp = groups_of(g).at(0);
  auto kernel = backend::cpu::build_library_kernel(g, grp, Options{});
  std::mt19937 rng(4);
  for (int64_t n : {1, 3, 0, 2}) {
    std::map<ValueId, Tensor> in{{x, random_f32({n, 3, 6, 6}, rng, 0.01)}};
    Tensor got = kernel->run(kernel_inputs(g, grp, in), int64_t{1} << 30);
    EXPECT_EQ(got.shape(), (std::vector<int64_t>{n, 5, 6, 6}));
    expect_close(got, run_nodes(g, grp, in, true), 1e-4, 1e-4, "batch " + std::to_string(n));
  }
  std::map<ValueId, Tensor> bad{{x, random_f32({1, 4, 6, 6}, rng)}};  // wrong channel count
  EXPECT_THROW(kernel->run(kernel_inputs(g, grp, bad), int64_t{1} << 30), UserError);
}

TEST(LibraryConv, FourThreadsAtOnce) {
  Graph g = basic_block(1, 16, 10, 7);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 2u);
  const LibraryGroup& grp = groups[1];
  auto kernel = backend::cpu::build_library_kernel(g, grp, Options{});
  std::mt19937 rng(29);
  std::vector<std::map<ValueId, Tensor>> inputs;
  std::vector<Tensor> expected;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(group_inputs(g, grp, rng, t == 1 ? 0.002 : 0.0));
    expected.push_back(run_nodes(g, grp, inputs.back(), false));
  }
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int it = 0; it < 10; ++it) {
        Tensor got = kernel->run(kernel_inputs(g, grp, inputs[size_t(t)]), int64_t{1} << 30);
        const Tensor& want = expected[size_t(t)];
        for (int64_t i = 0; i < want.numel(); ++i) {
          float a = got.data<float>()[i], w = want.data<float>()[i];
          bool ok = std::isnan(w) ? std::isnan(a) : std::isinf(w) ? a == w : std::fabs(a - w) <= 1e-4f * (1.f + std::fabs(w));
          if (!ok) {
            ++failures[size_t(t)];
            break;
          }
        }
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[size_t(t)], 0) << "thread " << t;
}

}  // namespace
}  // namespace kiln::library_test
