#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "linalg_test_util.h"
#include "ops/registry.h"

namespace kiln::linalg_test {
namespace {

Node matmul() { return make_node(OpKind::MatMul, 2); }

TEST(MatMul, TwoByTwoHandChecked) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  for (bool ref : {false, true}) {
    Tensor a_in = ref ? convert_tensor(a, DType::f64) : a, b_in = ref ? convert_tensor(b, DType::f64) : b;
    Tensor c = run(matmul(), {&a_in, &b_in}, ref).at(0);
    EXPECT_EQ(c.shape(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(values(c), (std::vector<double>{58, 64, 139, 154}));
  }
}

TEST(MatMul, OneDimensionalOperands) {
  Tensor v = f32({3}, {1, 2, 3});
  Tensor m = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor mt = f32({2, 3}, {1, 3, 5, 2, 4, 6});
  Tensor dot = run(matmul(), {&v, &v}).at(0);  // [3] x [3] -> []
  EXPECT_EQ(dot.rank(), 0);
  EXPECT_EQ(values(dot), (std::vector<double>{14}));
  Tensor vm = run(matmul(), {&v, &m}).at(0);  // [3] x [3,2] -> [2]
  EXPECT_EQ(vm.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values(vm), (std::vector<double>{22, 28}));
  Tensor mv = run(matmul(), {&mt, &v}).at(0);  // [2,3] x [3] -> [2]
  EXPECT_EQ(mv.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values(mv), (std::vector<double>{22, 28}));
  Tensor b3 = f32({2, 3, 2}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  Tensor vb = run(matmul(), {&v, &b3}).at(0);  // [3] x [2,3,2] -> [2,2]
  EXPECT_EQ(vb.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(vb), (std::vector<double>{22, 28, -22, -28}));
  Tensor a3 = f32({2, 2, 3}, {1, 3, 5, 2, 4, 6, 0, 0, 1, 1, 0, 0});
  Tensor bv = run(matmul(), {&a3, &v}).at(0);  // [2,2,3] x [3] -> [2,2]
  EXPECT_EQ(bv.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(bv), (std::vector<double>{22, 28, 3, 1}));
}

TEST(MatMul, BatchBroadcastHandChecked) {
  // A [2,1,1,2] against B [3,2,1]: C [2,3,1,1], C[i,j] = A[i] . B[j].
  Tensor a = f32({2, 1, 1, 2}, {1, 2, 10, 20});
  Tensor b = f32({3, 2, 1}, {1, 0, 0, 1, 1, 1});
  for (bool ref : {false, true}) {
    Tensor ai = ref ? convert_tensor(a, DType::f64) : a, bi = ref ? convert_tensor(b, DType::f64) : b;
    Tensor c = run(matmul(), {&ai, &bi}, ref).at(0);
    EXPECT_EQ(c.shape(), (std::vector<int64_t>{2, 3, 1, 1}));
    EXPECT_EQ(values(c), (std::vector<double>{1, 2, 3, 10, 20, 30}));
  }
}

TEST(MatMul, IntegerDtypes) {
  Tensor a = Tensor::from_vector<int64_t>(DType::i64, {2, 2}, {1, -2, 3, 4});
  Tensor b = Tensor::from_vector<int64_t>(DType::i64, {2, 1}, {5, 6});
  Tensor c = run(matmul(), {&a, &b}).at(0);
  EXPECT_EQ(c.dtype(), DType::i64);
  EXPECT_EQ(values(c), (std::vector<double>{-7, 39}));
  Tensor a32 = Tensor::from_vector<int32_t>(DType::i32, {1, 3}, {100000, 100000, 1});
  Tensor b32 = Tensor::from_vector<int32_t>(DType::i32, {3, 1}, {100000, -100000, 7});
  Tensor c32 = run(matmul(), {&a32, &b32}).at(0);
  EXPECT_EQ(c32.dtype(), DType::i32);
  EXPECT_EQ(values(c32), (std::vector<double>{7}));  // the intermediate products overflow i32
}

TEST(MatMul, ZeroSizes) {
  Tensor a = Tensor::empty(DType::f32, {3, 0});
  Tensor b = Tensor::empty(DType::f32, {0, 4});
  Tensor c = run(matmul(), {&a, &b}).at(0);  // K == 0: zeros
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{3, 4}));
  for (double v : values(c)) EXPECT_EQ(v, 0.0);
  Tensor a2 = Tensor::empty(DType::f32, {0, 5});
  Tensor b2 = Tensor::empty(DType::f32, {5, 4});
  EXPECT_EQ(run(matmul(), {&a2, &b2}).at(0).shape(), (std::vector<int64_t>{0, 4}));
  Tensor a3 = Tensor::empty(DType::f32, {2, 0, 3, 5});
  Tensor b3 = Tensor::empty(DType::f32, {1, 5, 2});
  EXPECT_EQ(run(matmul(), {&a3, &b3}).at(0).shape(), (std::vector<int64_t>{2, 0, 3, 2}));
}

TEST(MatMul, ShapeErrors) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_THROW(run(matmul(), {&a, &b}), UserError);
  Tensor x = f32({2, 2, 2}, std::vector<double>(8, 1)), y = f32({3, 2, 2}, std::vector<double>(12, 1));
  EXPECT_THROW(run(matmul(), {&x, &y}), UserError);  // batch 2 vs 3
  Tensor s = Tensor::scalar(DType::f32, 1.0f);
  EXPECT_THROW(run(matmul(), {&s, &a}), UserError);
  Tensor i = Tensor::from_vector<int64_t>(DType::i64, {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run(matmul(), {&a, &i}), UserError);  // dtypes differ
}

TEST(MatMul, SymbolicInference) {
  Node n = matmul();
  TensorType a{DType::f32, {Dim::sym("batch"), Dim::fixed(1), Dim::sym("seq"), Dim::fixed(64)}};
  TensorType b{DType::f32, {Dim::fixed(12), Dim::fixed(64), Dim::sym("seq")}};
  int fresh = 0;
  InferContext ctx(n, {&a, &b}, {nullptr, nullptr}, &fresh, 16);
  std::vector<TensorType> out = op_registry().find(OpKind::MatMul)->infer(ctx);
  EXPECT_EQ(shape_string(out.at(0).shape), "[batch,12,seq,seq]");
  TensorType v{DType::f32, {Dim::sym("k")}};
  InferContext ctx2(n, {&a, &v}, {nullptr, nullptr}, &fresh, 16);
  EXPECT_EQ(shape_string(op_registry().find(OpKind::MatMul)->infer(ctx2).at(0).shape), "[batch,1,seq]");
  TensorType bad{DType::f32, {Dim::fixed(63), Dim::sym("n")}};
  InferContext ctx3(n, {&a, &bad}, {nullptr, nullptr}, &fresh, 16);
  EXPECT_THROW(op_registry().find(OpKind::MatMul)->infer(ctx3), UserError);
}

TEST(MatMul, DifferentialAgainstReference) {
  std::mt19937 rng(7);
  struct Case {
    std::vector<int64_t> a, b;
  };
  std::vector<Case> cases = {
      {{1, 1}, {1, 1}},           {{1, 7}, {7, 1}},          {{5, 1}, {1, 3}},
      {{1, 13}, {13, 17}},        {{17, 13}, {13, 1}},       {{33, 65}, {65, 31}},
      {{3, 0}, {0, 4}},           {{13}, {13, 5}},           {{6, 13}, {13}},
      {{2, 3, 5, 7}, {7, 4}},     {{7}, {2, 3, 7, 5}},       {{2, 1, 5, 7}, {3, 7, 4}},
      {{1, 12, 9, 8}, {1, 12, 8, 9}}, {{4, 1, 3, 1, 2, 5}, {1, 2, 1, 3, 5, 3}}, {{1, 1, 1, 1}, {1, 1, 1, 1}},
      {{3, 1, 129, 67}, {67, 33}},
  };
  for (bool specials : {false, true})
    for (const Case& c : cases) {
      Tensor a = random_f32(c.a, rng, specials), b = random_f32(c.b, rng, specials);
      differential(matmul(), {&a, &b}, 1e-6, 1e-5,
                   "matmul " + shape_str(c.a) + "x" + shape_str(c.b) + (specials ? " specials" : ""), true);
    }
}

TEST(MatMul, NaNAndInfPropagation) {
  // Row 0 of A holds NaN: the whole output row is NaN. Inf times a positive gives Inf, Inf times 0
  // gives NaN, Inf + -Inf gives NaN.
  Tensor a = f32({4, 2}, {NAN, 1, INFINITY, 0, 1, 1, INFINITY, 1});
  Tensor b = f32({2, 3}, {1, 0, -1, 2, 3, 4});
  Tensor b2 = f32({2, 3}, {1, 1, 1, -INFINITY, 0, 1});
  for (bool ref : {false, true}) {
    Tensor ai = ref ? convert_tensor(a, DType::f64) : a, bi = ref ? convert_tensor(b, DType::f64) : b;
    Tensor c = run(matmul(), {&ai, &bi}, ref).at(0);
    std::vector<double> v = values(c);
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(v[j])) << j;
    EXPECT_EQ(v[3], INFINITY);
    EXPECT_TRUE(std::isnan(v[4]));  // Inf * 0
    EXPECT_EQ(v[5], -INFINITY);
    EXPECT_EQ(v[6], 3.0);
    Tensor b2i = ref ? convert_tensor(b2, DType::f64) : b2;
    std::vector<double> w = values(run(matmul(), {&ai, &b2i}, ref).at(0));
    EXPECT_TRUE(std::isnan(w[9]));  // Inf*1 + 1*-Inf
    EXPECT_EQ(w[10], INFINITY);
    EXPECT_EQ(w[6], -INFINITY);
  }
}

// The same rules on sizes large enough for the oneDNN path (the small case above runs the plain loop).
TEST(MatMul, NaNAndInfPropagationThroughLibrary) {
  std::mt19937 rng(43);
  Tensor a = random_f32({64, 96}, rng), b = random_f32({96, 80}, rng);
  float* ad = a.data<float>();
  float* bd = b.data<float>();
  ad[3 * 96 + 5] = NAN;  // row 3 of C: NaN
  for (int i = 0; i < 64; ++i) ad[i * 96 + 7] = std::fabs(ad[i * 96 + 7]) + 0.5f;
  ad[10 * 96 + 7] = 0.0f;      // C[10][9] = 0 * Inf = NaN
  bd[7 * 80 + 9] = INFINITY;   // column 9 of C: +Inf elsewhere
  Tensor c = run(matmul(), {&a, &b}).at(0);
  const float* cd = c.data<float>();
  for (int j = 0; j < 80; ++j) EXPECT_TRUE(std::isnan(cd[3 * 80 + j])) << j;
  EXPECT_TRUE(std::isnan(cd[10 * 80 + 9]));
  for (int i = 0; i < 64; ++i)
    if (i != 3 && i != 10) {
      EXPECT_EQ(cd[i * 80 + 9], INFINITY) << i;
    }
  EXPECT_TRUE(std::isfinite(cd[11 * 80 + 8]));
}

// The transformer hot path, [1,128,768] x [768,768]: checks the result and that eager f32 (oneDNN)
// is much faster than the plain fp64 reference loop. Best-of-N timings, so a loaded machine does
// not make the comparison flaky; the absolute rate is printed for information.
TEST(MatMul, TransformerProjectionIsFast) {
  std::mt19937 rng(3);
  Tensor a = random_f32({1, 128, 768}, rng), b = random_f32({768, 768}, rng);
  Tensor a64 = convert_tensor(a, DType::f64), b64 = convert_tensor(b, DType::f64);
  auto best_of = [](int reps, auto&& f) {
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      f();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  Tensor c = run(matmul(), {&a, &b}).at(0);  // warm-up builds the primitive
  double eager = best_of(15, [&] { c = run(matmul(), {&a, &b}).at(0); });
  Tensor c64;
  double reference = best_of(2, [&] { c64 = run(matmul(), {&a64, &b64}, true).at(0); });
  double gflops = 2.0 * 128 * 768 * 768 / eager / 1e9;
  std::printf("MatMul [1,128,768]x[768,768]: eager %.3f ms (%.1f GFLOP/s), reference %.3f ms\n", eager * 1e3, gflops,
              reference * 1e3);
  EXPECT_LT(eager, reference);
  Tensor abs_a = abs_f64(a), abs_b = abs_f64(b);
  Tensor mag = run(matmul(), {&abs_a, &abs_b}, true).at(0);
  expect_match(c, c64, 1e-6, 1e-5, &mag, "projection");
}

// ---------------------------------------------------------------- Gemm

Node gemm(bool with_c, int64_t ta = 0, int64_t tb = 0, double alpha = 1.0, double beta = 1.0) {
  Node n = make_node(OpKind::Gemm, with_c ? 3 : 2);
  set_attr<int64_t>(n, "transA", ta);
  set_attr<int64_t>(n, "transB", tb);
  set_attr<double>(n, "alpha", alpha);
  set_attr<double>(n, "beta", beta);
  return n;
}

TEST(Gemm, TransposesAlphaBetaHandChecked) {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});        // transA -> [3,2]
  Tensor b = f32({2, 2}, {1, 2, 3, 4});              // transB -> [[1,3],[2,4]]
  Tensor c = f32({2}, {100, 200});                   // broadcast over rows
  // A^T = [[1,4],[2,5],[3,6]], B^T = [[1,3],[2,4]] -> A^T B^T = [[9,19],[12,26],[15,33]]
  for (bool ref : {false, true}) {
    auto cv = [&](const Tensor& t) { return ref ? convert_tensor(t, DType::f64) : t; };
    Tensor ai = cv(a), bi = cv(b), ci = cv(c);
    Tensor y = run(gemm(true, 1, 1, 2.0, 0.5), {&ai, &bi, &ci}, ref).at(0);
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(values(y), (std::vector<double>{68, 138, 74, 152, 80, 166}));
    Tensor y2 = run(gemm(false, 1, 1), {&ai, &bi}, ref).at(0);
    EXPECT_EQ(values(y2), (std::vector<double>{9, 19, 12, 26, 15, 33}));
  }
}

TEST(Gemm, CBroadcastShapes) {
  std::mt19937 rng(11);
  Tensor a = random_f32({5, 7}, rng), b = random_f32({7, 3}, rng);
  for (std::vector<int64_t> cs : std::vector<std::vector<int64_t>>{{}, {1}, {3}, {1, 3}, {5, 1}, {5, 3}, {1, 1}}) {
    Tensor c = random_f32(cs, rng);
    Tensor y = differential(gemm(true, 0, 0, 0.75, -1.5), {&a, &b, &c}, 1e-6, 1e-5, "gemm C " + shape_str(cs), true);
    // Check one element by hand: y[4][2] = 0.75 * sum + -1.5 * C[broadcast]
    double sum = 0;
    for (int k = 0; k < 7; ++k) sum += double(a.data<float>()[4 * 7 + k]) * double(b.data<float>()[k * 3 + 2]);
    int64_t ci = cs.empty() ? 0 : (cs.size() == 1 ? (cs[0] == 1 ? 0 : 2) : (cs[0] == 1 ? 0 : 4) * cs[1] + (cs[1] == 1 ? 0 : 2));
    EXPECT_NEAR(y.data<float>()[4 * 3 + 2], 0.75 * sum - 1.5 * c.data<float>()[ci], 1e-5);
  }
  Tensor bad = random_f32({2, 3}, rng);
  EXPECT_THROW(run(gemm(true), {&a, &b, &bad}), UserError);
}

TEST(Gemm, DifferentialAgainstReference) {
  std::mt19937 rng(5);
  for (bool specials : {false, true})
    for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 1, 1}, {1, 9, 1}, {7, 1, 5}, {1, 31, 33}, {33, 31, 1}, {65, 47, 63}, {4, 0, 3}})
      for (int64_t ta : {0, 1})
        for (int64_t tb : {0, 1}) {
          Tensor a = random_f32(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, rng, specials);
          Tensor b = random_f32(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, rng, specials);
          Tensor c = random_f32({n}, rng, specials);
          std::string what = "gemm m=" + std::to_string(m) + " k=" + std::to_string(k) + " n=" + std::to_string(n) +
                             " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb);
          differential(gemm(true, ta, tb, 1.25, 0.5), {&a, &b, &c}, 1e-6, 1e-5, what, true);
          differential(gemm(false, ta, tb), {&a, &b}, 1e-6, 1e-5, what + " no C", true);
        }
}

TEST(Gemm, EmptyInnerDimGivesBetaC) {
  Tensor a = Tensor::empty(DType::f32, {2, 0}), b = Tensor::empty(DType::f32, {0, 3});
  Tensor c = f32({1, 3}, {1, 2, 3});
  Tensor y = run(gemm(true, 0, 0, 5.0, 2.0), {&a, &b, &c}).at(0);
  EXPECT_EQ(values(y), (std::vector<double>{2, 4, 6, 2, 4, 6}));
  Node omitted = make_node(OpKind::Gemm, 3, 1, {true, true, false});
  Tensor y2 = run(omitted, {&a, &b, nullptr}).at(0);
  EXPECT_EQ(values(y2), std::vector<double>(6, 0.0));
}

}  // namespace
}  // namespace kiln::linalg_test

namespace kiln::linalg_test {
namespace {

// Two threads run the same cached primitives (and build new ones) at once: results must stay exact
// (per-thread streams and scratchpads).
TEST(MatMul, ConcurrentCallsShareThePrimitiveCache) {
  std::mt19937 rng(41);
  Tensor a = random_f32({2, 37, 53}, rng), b = random_f32({53, 29}, rng);
  Tensor a2 = random_f32({3, 1, 17, 19}, rng), b2 = random_f32({4, 19, 23}, rng);
  Node n = make_node(OpKind::MatMul, 2);
  Tensor want = run(n, {&a, &b}).at(0), want2 = run(n, {&a2, &b2}).at(0);
  std::atomic<int> mismatches{0};
  auto worker = [&](int id) {
    for (int i = 0; i < 30; ++i) {
      bool first = (i + id) % 2 == 0;
      Tensor got = first ? run(n, {&a, &b}).at(0) : run(n, {&a2, &b2}).at(0);
      const Tensor& w = first ? want : want2;
      if (std::memcmp(got.raw(), w.raw(), w.nbytes()) != 0) ++mismatches;
    }
  };
  std::thread t1(worker, 0), t2(worker, 1);
  t1.join();
  t2.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace kiln::linalg_test
