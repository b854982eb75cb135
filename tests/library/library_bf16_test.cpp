// bf16 products (precision bf16 on the CPU): oneDNN's bf16 matmul and convolution read their operands
// rounded to bf16 and sum in f32. Each library call is checked against the fp64 reference of the same
// nodes with the product's operands rounded to bf16 first (as tight as an f32 call against its own), and
// against the fp64 reference of the f32 operands within bf16's rounding; NaN and +-Inf (relu's guard),
// unit and odd sizes, transposed and batched operands, convolutions with a residual.
#include "graphs.h"
#include "kernels/onednn/fused.h"
#include "library_test_util.h"

namespace kiln::library_test {
namespace {

Tensor rounded_to_bf16(const Tensor& t) {
  Tensor r = Tensor::empty(DType::f32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = bf16_to_float(float_to_bf16(t.data<float>()[i]));
  return r;
}

Options bf16_options() {
  Options o;
  o.precision = "bf16";
  return o;
}

// The group's kernel under precision bf16 on `given`, against both fp64 references.
void check_bf16(const Graph& g, const LibraryGroup& grp, const std::map<ValueId, Tensor>& given, double atol,
                const std::string& what) {
  Tensor got = backend::cpu::build_library_kernel(g, grp, bf16_options())->run(kernel_inputs(g, grp, given), int64_t{1} << 32);
  Graph rounded = g;
  std::map<ValueId, Tensor> rounded_given = given;
  const Node& core = g.nodes[size_t(grp.core_node)];
  for (size_t i : {size_t{0}, size_t{1}}) {  // the product's operands: A and the weights (or B)
    const ValueId v = core.inputs[i];
    if (g.value(v).constant)
      rounded.value(v).constant = std::make_shared<const Tensor>(rounded_to_bf16(*g.value(v).constant));
    else
      rounded_given.at(v) = rounded_to_bf16(given.at(v));
  }
  expect_close(got, run_nodes(rounded, grp, rounded_given, /*reference=*/true), atol, atol,
               what + " vs fp64 of bf16 operands");
  // bf16 keeps 8 bits: each operand within 2^-9 of its f32 value.
  expect_close(got, run_nodes(g, grp, given, /*reference=*/true), 0.05, 0.02, what + " vs fp64 of f32 operands");
}

class LibraryBf16 : public testing::Test {
 protected:
  void SetUp() override {
    if (!onednn::has_native_bf16_matmul())
      GTEST_SKIP() << "SKIPPED: this CPU has no AVX512_BF16 or AMX, so precision bf16 is refused here";
  }
};

std::map<ValueId, Tensor> random_graph_inputs(const Graph& g, std::mt19937& rng, double specials) {
  std::map<ValueId, Tensor> r;
  for (ValueId v : g.inputs) r[v] = random_f32(static_dims(g.value(v).type.shape), rng, specials);
  return r;
}

TEST_F(LibraryBf16, LinearWithEachActivationNaNAndInf) {
  for (Act act : {Act::none, Act::relu, Act::gelu0, Act::gelu_tanh, Act::sigmoid})
    for (double specials : {0.0, 0.01}) {
      const LinearSpec s{.a_dims = {2, 5, 33}, .N = 7, .act = act, .relu_after = act == Act::relu, .seed = 3};
      Graph g = linear_graph(s);
      auto groups = groups_of(g);
      ASSERT_EQ(groups.size(), 1u);
      std::mt19937 rng(11);
      for (int rep = 0; rep < 2; ++rep)  // the second run reuses the primitive and the bf16 weights
        check_bf16(g, groups[0], random_graph_inputs(g, rng, specials), 2e-5,
                   "act " + std::to_string(int(act)) + (specials > 0 ? " with NaN/Inf" : ""));
    }
}

TEST_F(LibraryBf16, UnitOddAndTileSizes) {
  for (std::vector<int64_t> a : {std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 33}, std::vector<int64_t>{7, 1},
                                 std::vector<int64_t>{3, 1, 7}, std::vector<int64_t>{67, 129}})
    for (int64_t n : {1, 7, 65}) {
      Graph g = linear_graph({.a_dims = a, .N = n, .act = Act::gelu0, .seed = 5});
      std::mt19937 rng(5);
      check_bf16(g, groups_of(g).at(0), random_graph_inputs(g, rng, 0.02), 2e-5,
                 "a " + std::to_string(a.size()) + "-D K " + std::to_string(a.back()) + " N " + std::to_string(n));
    }
}

TEST_F(LibraryBf16, GemmWithTransposedOperands) {
  for (int64_t trans_a : {0, 1})
    for (int64_t trans_b : {0, 1}) {
      GraphBuilder b("gemm");
      const int64_t M = 5, K = 19, N = 9;
      ValueId x = b.input("x", DType::f32, trans_a ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
      ValueId w = b.constant("w", random_uniform(DType::f32, trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N},
                                                 -1, 1, 2));
      ValueId c = b.constant("c", random_uniform(DType::f32, {N}, -1, 1, 3));
      b.output(b.op(OpKind::Gemm, {x, w, c}, {{"transA", trans_a}, {"transB", trans_b}, {"alpha", 0.5}, {"beta", 2.0}}), "y");
      Graph g = inferred(b);
      std::mt19937 rng(7);
      check_bf16(g, groups_of(g).at(0), random_graph_inputs(g, rng, 0.01), 2e-5,
                 "transA " + std::to_string(trans_a) + " transB " + std::to_string(trans_b));
    }
}

TEST_F(LibraryBf16, BatchedProductOfTwoActivations) {
  GraphBuilder b("bmm");
  ValueId q = b.input("q", DType::f32, {2, 3, 17, 16});
  ValueId k = b.input("k", DType::f32, {2, 3, 16, 21});
  b.output(b.op(OpKind::Mul, {b.op(OpKind::MatMul, {q, k}), b.constant("s", Tensor::scalar<float>(DType::f32, 0.25f))}), "y");
  Graph g = inferred(b);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 1u);
  std::mt19937 rng(9);
  for (double specials : {0.0, 0.01}) check_bf16(g, groups[0], random_graph_inputs(g, rng, specials), 2e-5, "bmm");
}

TEST_F(LibraryBf16, ConvolutionsWithBiasReluAndResidual) {
  for (int64_t group : {1, 2}) {
    GraphBuilder b("conv");
    ValueId x = b.input("x", DType::f32, {2, 4, 9, 7});
    ValueId r = b.input("r", DType::f32, {2, 6, 9, 7});
    ValueId w = b.constant("w", random_uniform(DType::f32, {6, 4 / group, 3, 3}, -0.5, 0.5, 1));
    ValueId bias = b.constant("b", random_uniform(DType::f32, {6}, -0.5, 0.5, 2));
    ValueId y = b.op(OpKind::Conv, {x, w, bias}, {{"pads", {1, 1, 1, 1}}, {"group", group}});
    b.output(b.op(OpKind::Relu, {b.op(OpKind::Add, {y, r})}), "y");
    Graph g = inferred(b);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u);
    ASSERT_EQ(groups[0].nodes.size(), g.nodes.size());
    std::mt19937 rng(13);
    for (double specials : {0.0, 0.005})
      check_bf16(g, groups[0], random_graph_inputs(g, rng, specials), 1e-4,
                 "conv groups " + std::to_string(group) + (specials > 0 ? " with NaN/Inf" : ""));
  }
}

TEST_F(LibraryBf16, WeightsArePackedOnceAsBf16) {
  Graph g = linear_graph({.a_dims = {4, 64}, .N = 32, .seed = 8});
  const LibraryGroup grp = groups_of(g).at(0);
  const uint64_t before = onednn::prepared_weight_layouts();
  auto kernel = backend::cpu::build_library_kernel(g, grp, bf16_options());
  EXPECT_EQ(onednn::prepared_weight_layouts(), before + 1);  // a static row count packs at build
  std::mt19937 rng(2);
  for (int rep = 0; rep < 3; ++rep) kernel->run(kernel_inputs(g, grp, random_graph_inputs(g, rng, 0.0)), int64_t{1} << 32);
  EXPECT_EQ(onednn::prepared_weight_layouts(), before + 1);
}

}  // namespace
}  // namespace kiln::library_test
