// MatMul / Gemm library calls against the fp64 reference and the eager nodes: activations, residual,
// NaN and Inf (including relu, which oneDNN alone would turn into 0), odd and unit sizes, batch dims,
// zero-size operands, and concurrent runs.
#include <thread>

#include "graphs.h"
#include "library_test_util.h"

namespace kiln::library_test {
namespace {

// Random inputs for every non-constant graph input (x, r, ...), with `specials` NaN/Inf entries.
std::map<ValueId, Tensor> random_inputs(const Graph& g, std::mt19937& rng, double specials) {
  std::map<ValueId, Tensor> r;
  for (ValueId v : g.inputs) r[v] = random_f32(static_dims(g.value(v).type.shape), rng, specials);
  return r;
}

void check_linear(const LinearSpec& s, double specials, const std::string& what) {
  Graph g = linear_graph(s);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 1u) << what;
  ASSERT_EQ(groups[0].nodes.size(), g.nodes.size()) << what << ": " << groups[0].label;
  std::mt19937 rng(static_cast<unsigned>(s.seed));
  for (int rep = 0; rep < 2; ++rep)  // the second run reuses the cached primitive and packed weights
    check_group(g, groups[0], random_inputs(g, rng, specials), 2e-5, 2e-5, what);
}

TEST(LibraryMatmul, LinearWithEachActivationMatchesReference) {
  for (Act act : {Act::none, Act::relu, Act::tanh, Act::sigmoid, Act::gelu0, Act::gelu1, Act::gelu2, Act::gelu_tanh})
    for (bool relu_after : {false, true}) {
      LinearSpec s{.a_dims = {2, 5, 33}, .N = 7, .act = act, .relu_after = relu_after, .seed = 3};
      check_linear(s, 0.0, "act " + std::to_string(int(act)) + (relu_after ? " +relu" : ""));
      check_linear(s, 0.01, "act " + std::to_string(int(act)) + (relu_after ? " +relu" : "") + " with NaN/Inf");
    }
}

TEST(LibraryMatmul, OddAndUnitSizes) {
  for (std::vector<int64_t> a : {std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 33}, std::vector<int64_t>{7, 1},
                                 std::vector<int64_t>{3, 1, 7}, std::vector<int64_t>{2, 3, 4, 33}})
    for (int64_t n : {1, 7, 33}) {
      LinearSpec s{.a_dims = a, .N = n, .act = Act::gelu0, .seed = 5};
      check_linear(s, 0.02, "a " + std::to_string(a.size()) + "-D K " + std::to_string(a.back()) + " N " +
                                std::to_string(n));
    }
}

TEST(LibraryMatmul, ReluKeepsNaNLikeOnnx) {
  // oneDNN's relu post-op maps NaN to 0; the call must still give NaN where the nodes do.
  LinearSpec s{.a_dims = {16, 9}, .N = 5, .bias = true, .act = Act::relu, .residual = true, .relu_after = true};
  Graph g = linear_graph(s);
  auto grp = groups_of(g).at(0);
  std::mt19937 rng(7);
  std::map<ValueId, Tensor> in = random_inputs(g, rng, 0.0);
  ValueId x = g.inputs[0], r = g.inputs[1];
  in[x].data<float>()[3 * 9 + 2] = NAN;  // row 3 of the product is NaN
  in[r].data<float>()[7 * 5 + 1] = NAN;  // one element of the residual
  in[r].data<float>()[9 * 5 + 4] = -INFINITY;
  Tensor got = run_fused(g, grp, in);
  EXPECT_EQ(count_nan(got), 5 + 1);
  check_group(g, grp, in, 2e-5, 2e-5, "relu with NaN");
  // Only the residual non-finite.
  in = random_inputs(g, rng, 0.0);
  in[r].data<float>()[2] = NAN;
  EXPECT_EQ(count_nan(run_fused(g, grp, in)), 1);
}

TEST(LibraryMatmul, NonFiniteWeightsTakeThePlainRelu) {
  GraphBuilder b("nan_weights");
  ValueId x = b.input("x", DType::f32, {3, 4});
  Tensor w = random_uniform(DType::f32, {4, 2}, -1, 1, 1);
  w.data<float>()[1] = NAN;  // column 1 is NaN for every row
  b.output(b.op(OpKind::Relu, {b.op(OpKind::MatMul, {x, b.constant("w", w)})}), "y");
  Graph g = inferred(b);
  auto grp = groups_of(g).at(0);
  std::mt19937 rng(1);
  std::map<ValueId, Tensor> in{{x, random_f32({3, 4}, rng)}};
  EXPECT_EQ(count_nan(run_fused(g, grp, in)), 3);
  check_group(g, grp, in, 1e-5, 1e-5, "NaN weights");
}

TEST(LibraryMatmul, GemmAttributesAndBiasShapes) {
  std::mt19937 rng(11);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (std::vector<int64_t> cshape : {std::vector<int64_t>{7}, std::vector<int64_t>{1, 7}, std::vector<int64_t>{}})
        for (double alpha : {1.0, 0.5}) {
          GraphBuilder b("gemm");
          int64_t M = 5, K = 33, N = 7;
          ValueId x = b.input("x", DType::f32, ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
          ValueId w = b.constant("w", random_uniform(DType::f32, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N},
                                                     -1, 1, 2));
          ValueId c = b.constant("c", random_uniform(DType::f32, cshape, -1, 1, 3));
          ValueId y = b.op(OpKind::Gemm, {x, w, c}, {{"transA", ta}, {"transB", tb}, {"alpha", alpha}, {"beta", 2.0}});
          b.output(b.op(OpKind::Relu, {y}), "y");
          Graph g = inferred(b);
          auto groups = groups_of(g);
          ASSERT_EQ(groups.size(), 1u);
          ASSERT_EQ(groups[0].label, "gemm+relu");
          std::string what = "gemm ta " + std::to_string(ta) + " tb " + std::to_string(tb) + " alpha " +
                             std::to_string(alpha) + " C rank " + std::to_string(cshape.size());
          std::map<ValueId, Tensor> in{{x, random_f32(static_dims(g.value(x).type.shape), rng, 0.01)}};
          check_group(g, groups[0], in, 2e-5, 2e-5, what);
        }
}

TEST(LibraryMatmul, BatchedWithResidualAndRelu) {
  for (bool specials : {false, true}) {
    GraphBuilder b("bmm");
    ValueId q = b.input("q", DType::f32, {2, 3, 5, 33});
    ValueId k = b.input("k", DType::f32, {2, 3, 33, 7});
    ValueId r = b.input("r", DType::f32, {2, 3, 5, 7});
    b.output(b.op(OpKind::Relu, {b.op(OpKind::Add, {r, b.op(OpKind::MatMul, {q, k})})}), "y");
    Graph g = inferred(b);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].label, "bmm+add+relu");
    std::mt19937 rng(13);
    std::map<ValueId, Tensor> in{{q, random_f32({2, 3, 5, 33}, rng, specials ? 0.01 : 0)},
                                 {k, random_f32({2, 3, 33, 7}, rng, specials ? 0.01 : 0)},
                                 {r, random_f32({2, 3, 5, 7}, rng, specials ? 0.01 : 0)}};
    check_group(g, groups[0], in, 2e-5, 2e-5, specials ? "bmm with NaN/Inf" : "bmm");
  }
}

TEST(LibraryMatmul, SymbolicRowsAndZeroSize) {
  GraphBuilder b("sym");
  ValueId x = b.input("x", DType::f32, Shape{Dim::sym("batch"), Dim::sym("seq"), Dim::fixed(9)});
  ValueId y = b.op(OpKind::MatMul, {x, b.constant("w", random_uniform(DType::f32, {9, 4}, -1, 1, 1))});
  y = b.op(OpKind::Add, {y, b.constant("bias", random_uniform(DType::f32, {4}, -1, 1, 2))});
  b.output(b.op(OpKind::Relu, {y}), "y");
  Graph g = inferred(b);
  auto grp = groups_of(g).at(0);
  auto kernel = backend::cpu::build_library_kernel(g, grp, Options{});
  std::mt19937 rng(3);
  for (std::vector<int64_t> dims : {std::vector<int64_t>{1, 1, 9}, std::vector<int64_t>{2, 17, 9},
                                    std::vector<int64_t>{3, 1, 9}, std::vector<int64_t>{0, 5, 9},
                                    std::vector<int64_t>{2, 0, 9}}) {
    std::map<ValueId, Tensor> in{{x, random_f32(dims, rng, 0.02)}};
    Tensor got = kernel->run(kernel_inputs(g, grp, in), int64_t{1} << 30);
    Tensor want = run_nodes(g, grp, in, true);
    expect_close(got, want, 1e-5, 1e-5, "rows " + std::to_string(dims[0] * dims[1]));
  }
  // A wrong K is the user's error, not a crash.
  std::map<ValueId, Tensor> bad{{x, random_f32({2, 3, 8}, rng)}};
  EXPECT_THROW(kernel->run(kernel_inputs(g, grp, bad), int64_t{1} << 30), UserError);
  // So is an output beyond max_tensor_bytes.
  std::map<ValueId, Tensor> big{{x, random_f32({4, 4, 9}, rng)}};
  EXPECT_THROW(kernel->run(kernel_inputs(g, grp, big), 32), UserError);
}

TEST(LibraryMatmul, BatchedWithEmptyInnerDimGivesTheEpilogueOfZeros) {
  GraphBuilder b("bmm_k0");
  ValueId q = b.input("q", DType::f32, Shape{Dim::fixed(2), Dim::fixed(3), Dim::sym("k")});
  ValueId k = b.input("k", DType::f32, Shape{Dim::fixed(2), Dim::sym("k"), Dim::fixed(4)});
  ValueId r = b.input("r", DType::f32, {2, 3, 4});
  b.output(b.op(OpKind::Sigmoid, {b.op(OpKind::Add, {b.op(OpKind::MatMul, {q, k}), r})}), "y");
  Graph g = inferred(b);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 1u);
  std::mt19937 rng(5);
  std::map<ValueId, Tensor> in{{q, random_f32({2, 3, 0}, rng)}, {k, random_f32({2, 0, 4}, rng)}, {r, random_f32({2, 3, 4}, rng)}};
  Tensor got = run_fused(g, groups[0], in);
  expect_close(got, run_nodes(g, groups[0], in, true), 1e-6, 1e-6, "K = 0");
}

TEST(LibraryMatmul, FourThreadsAtOnceGiveTheSingleThreadResults) {
  LinearSpec s{.a_dims = {37, 64}, .N = 48, .act = Act::relu, .residual = true, .relu_after = true, .seed = 9};
  Graph g = linear_graph(s);
  auto grp = groups_of(g).at(0);
  auto kernel = backend::cpu::build_library_kernel(g, grp, Options{});
  std::mt19937 rng(21);
  std::vector<std::map<ValueId, Tensor>> inputs;
  std::vector<Tensor> expected;
  for (int t = 0; t < 4; ++t) {
    // Different row counts (new primitives made concurrently) and NaN in one (the plain relu path).
    std::map<ValueId, Tensor> in{{g.inputs[0], random_f32({37 + t, 64}, rng, t == 2 ? 0.01 : 0.0)},
                                 {g.inputs[1], random_f32({37 + t, 48}, rng)}};
    expected.push_back(run_nodes(g, grp, in, false));
    inputs.push_back(std::move(in));
  }
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int it = 0; it < 20; ++it) {
        Tensor got = kernel->run(kernel_inputs(g, grp, inputs[size_t(t)]), int64_t{1} << 30);
        const Tensor& want = expected[size_t(t)];
        for (int64_t i = 0; i < want.numel(); ++i) {
          float a = got.data<float>()[i], w = want.data<float>()[i];
          if (std::isnan(w) ? !std::isnan(a) : std::fabs(a - w) > 1e-4f * (1.f + std::fabs(w))) {
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
