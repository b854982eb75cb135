// GEMM templates in compiled sessions: MatMul / Gemm groups (batched products of two computed
// operands too) go to the autotuner, which picks between oneDNN and kiln's template (with the group's
// epilogue in the store hook); results match the fp64 reference (NaN and infinities included), a second
// compile benchmarks nothing, and the settings decide who may compete.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "codegen/cpu/toolchain.h"
#include "kernels/onednn/fused.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "ops/node_runner.h"
#include "runtime/compare.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// y = Relu(Gelu(A x B + bias) + R): the whole chain is one library group.
Graph matmul_chain(int64_t m, int64_t k, int64_t n) {
  GraphBuilder b("chain");
  ValueId a = b.input("a", DType::f32, {m, k});
  ValueId r = b.input("r", DType::f32, {m, n});
  ValueId w = b.constant("w", random_uniform(DType::f32, {k, n}, -0.5, 0.5, 3));
  ValueId bias = b.constant("bias", random_uniform(DType::f32, {n}, -0.5, 0.5, 4));
  ValueId h = b.op(OpKind::Add, {b.op(OpKind::MatMul, {a, w}), bias});
  // GELU as exporters write it: x * 0.5 * (1 + erf(x / sqrt(2))).
  ValueId erf = b.op(OpKind::Erf, {b.op(OpKind::Div, {h, b.scalar(DType::f32, std::sqrt(2.0))})});
  ValueId gelu = b.op(OpKind::Mul, {b.op(OpKind::Mul, {h, b.op(OpKind::Add, {erf, b.scalar(DType::f32, 1.0)})}),
                                    b.scalar(DType::f32, 0.5)});
  b.output(b.op(OpKind::Relu, {b.op(OpKind::Add, {gelu, r})}), "y");
  return b.build();
}

// Gemm(A, B^T) * alpha + beta * C.
Graph gemm_trans_b(int64_t m, int64_t k, int64_t n) {
  GraphBuilder b("gemm");
  ValueId a = b.input("a", DType::f32, {m, k});
  ValueId w = b.constant("w", random_uniform(DType::f32, {n, k}, -0.5, 0.5, 5));
  ValueId c = b.constant("c", random_uniform(DType::f32, {n}, -0.5, 0.5, 6));
  b.output(b.op(OpKind::Gemm, {a, w, c}, {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}}), "y");
  return b.build();
}

// Relu(A x W + bias) with A [batch, seq, 160]: symbolic rows.
Graph symbolic_linear(uint32_t seed) {
  GraphBuilder b("symbolic");
  ValueId a = b.input("a", DType::f32, Shape{Dim::sym("batch"), Dim::sym("seq"), Dim::fixed(160)});
  ValueId w = b.constant("w", random_uniform(DType::f32, {160, 144}, -0.5, 0.5, seed));
  ValueId bias = b.constant("bias", random_uniform(DType::f32, {144}, -0.5, 0.5, seed + 1));
  b.output(b.op(OpKind::Relu, {b.op(OpKind::Add, {b.op(OpKind::MatMul, {a, w}), bias})}), "y");
  return b.build();
}

Tensor with_specials(Tensor t) {
  float* p = t.data<float>();
  p[3] = std::numeric_limits<float>::quiet_NaN();
  p[t.numel() / 2] = std::numeric_limits<float>::infinity();
  p[t.numel() - 5] = -std::numeric_limits<float>::infinity();
  return t;
}

class GemmSchedule : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_gemm_schedule_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Options options(const std::string& backends = "template,onednn") const {
    Options o;
    o.cache_dir = (dir_ / "cache").string();
    o.compile_jobs = 2;
    o.set("autotune", "fast");
    o.set("gemm_backends", backends);
    return o;
  }
  // Compiled against the fp64 reference on the same inputs.
  void expect_matches_reference(const Session& compiled, const Graph& g, const std::map<std::string, Tensor>& in) {
    Session reference = Session::from_graph(g, Mode::reference, options());
    Tensor got = compiled.run(in).at("y");
    Tensor want = reference.run(in).at("y");
    CloseResult r = all_close(convert_tensor(got, DType::f64), want, 1e-4, 1e-4);
    EXPECT_TRUE(r.ok) << r.reason;
  }
  fs::path dir_;
};

TEST_F(GemmSchedule, TemplateWithItsEpilogueIsTunedOnceAndMatchesTheReference) {
  const int64_t m = 67, k = 200, n = 190;  // no tile divides them; 2.5M multiply-adds: worth tuning
  Graph g = matmul_chain(m, k, n);
  std::map<std::string, Tensor> in = {{"a", with_specials(random_uniform(DType::f32, {m, k}, -1, 1, 1))},
                                      {"r", with_specials(random_uniform(DType::f32, {m, n}, -1, 1, 2))}};
  // Only the template competes: it must run, one library step with the whole chain.
  Session only_template = Session::from_graph(g, Mode::compiled, options("template"));
  RunStats s = only_template.stats();
  EXPECT_EQ(s.library_kernels, 1);
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.autotuned_ops, 1);
  EXPECT_EQ(s.autotune_benchmarks, 1);
  EXPECT_EQ(s.template_kernels, 1);
  expect_matches_reference(only_template, g, in);

  // Both compete in a fresh cache; whichever wins matches too. A second compile reads the database.
  fs::remove_all(dir_ / "cache");
  Session first = Session::from_graph(g, Mode::compiled, options());
  EXPECT_EQ(first.stats().autotune_benchmarks, 1);
  expect_matches_reference(first, g, in);
  Session second = Session::from_graph(g, Mode::compiled, options());
  EXPECT_EQ(second.stats().autotuned_ops, 1);
  EXPECT_EQ(second.stats().autotune_benchmarks, 0);
  EXPECT_EQ(second.stats().template_kernels, first.stats().template_kernels);

  // oneDNN alone: nothing to tune. autotune=off: the default (oneDNN), no benchmark.
  Session library = Session::from_graph(g, Mode::compiled, options("onednn"));
  EXPECT_EQ(library.stats().autotuned_ops, 0);
  expect_matches_reference(library, g, in);
  Options off = options();
  off.set("autotune", "off");
  fs::remove_all(dir_ / "cache");
  Session untuned = Session::from_graph(g, Mode::compiled, off);
  EXPECT_EQ(untuned.stats().autotune_benchmarks, 0);
  EXPECT_EQ(untuned.stats().template_kernels, 0);
}

// oneDNN is only a candidate: its primitive and its copy of the weights are made when it is prepared,
// so a template winner (offered alone, or stored) leaves the weights in the graph's layout.
TEST_F(GemmSchedule, OneDnnIsBuiltOnlyWhenItIsPrepared) {
  const int64_t m = 67, k = 200, n = 190;
  Graph g = matmul_chain(m, k, n);
  uint64_t before = onednn::prepared_weight_layouts();
  Session only_template = Session::from_graph(g, Mode::compiled, options("template"));
  EXPECT_EQ(only_template.stats().template_kernels, 1);
  EXPECT_EQ(onednn::prepared_weight_layouts(), before);

  // autotune=off takes the default, oneDNN: built once, for that one weight.
  Options off = options();
  off.set("autotune", "off");
  before = onednn::prepared_weight_layouts();
  Session library = Session::from_graph(g, Mode::compiled, off);
  EXPECT_EQ(library.stats().template_kernels, 0);
  EXPECT_EQ(onednn::prepared_weight_layouts(), before + 1);

  // A stored winner is the only candidate prepared: no weight layout unless oneDNN won.
  Session tuned = Session::from_graph(g, Mode::compiled, options());
  before = onednn::prepared_weight_layouts();
  Session stored = Session::from_graph(g, Mode::compiled, options());
  EXPECT_EQ(stored.stats().autotune_benchmarks, 0);
  EXPECT_EQ(stored.stats().template_kernels, tuned.stats().template_kernels);
  EXPECT_EQ(onednn::prepared_weight_layouts(), before + (stored.stats().template_kernels == 1 ? 0 : 1));
  std::map<std::string, Tensor> in = {{"a", with_specials(random_uniform(DType::f32, {m, k}, -1, 1, 1))},
                                      {"r", with_specials(random_uniform(DType::f32, {m, n}, -1, 1, 2))}};
  expect_matches_reference(stored, g, in);
}

TEST_F(GemmSchedule, GemmWithTransposedWeightsAlphaBetaAndSmallProducts) {
  Graph g = gemm_trans_b(130, 96, 200);
  Session s = Session::from_graph(g, Mode::compiled, options("template"));
  EXPECT_EQ(s.stats().template_kernels, 1);
  expect_matches_reference(s, g, {{"a", with_specials(random_uniform(DType::f32, {130, 96}, -1, 1, 9))}});
  // Below kTuneMinMacs the library keeps it, whatever the settings.
  Graph tiny = gemm_trans_b(3, 16, 8);
  Session t = Session::from_graph(tiny, Mode::compiled, options("template"));
  EXPECT_EQ(t.stats().autotuned_ops, 0);
  expect_matches_reference(t, tiny, {{"a", random_uniform(DType::f32, {3, 16}, -1, 1, 10)}});
}

TEST_F(GemmSchedule, SymbolicBatchAndSequenceRunAtTwoSizesOnOnePersistentKernel) {
  Graph g = symbolic_linear(11);
  Session s = Session::from_graph(g, Mode::compiled, options("template"));
  EXPECT_EQ(s.stats().autotuned_ops, 1);
  EXPECT_EQ(s.stats().template_kernels, 1);
  const uint64_t compiles = codegen::cpu::compiler_run_count();
  expect_matches_reference(s, g, {{"a", with_specials(random_uniform(DType::f32, {2, 37, 160}, -1, 1, 13))}});
  expect_matches_reference(s, g, {{"a", random_uniform(DType::f32, {1, 5, 160}, -1, 1, 14)}});
  expect_matches_reference(s, g, {{"a", random_uniform(DType::f32, {3, 0, 160}, -1, 1, 15)}});
  EXPECT_EQ(codegen::cpu::compiler_run_count(), compiles) << "a size change recompiled a kernel";
}

TEST_F(GemmSchedule, OpenBlasWithTheEpilogueAsASeparatePass) {
  // Only OpenBLAS competes: its sgemm, then bias, GELU, residual and Relu in a generated pass.
  const int64_t m = 67, k = 200, n = 190;
  Graph chain = matmul_chain(m, k, n);
  Session s = Session::from_graph(chain, Mode::compiled, options("blas"));
  EXPECT_EQ(s.stats().autotuned_ops, 1);
  EXPECT_EQ(s.stats().blas_kernels, 1);
  EXPECT_EQ(s.stats().template_kernels, 0);
  expect_matches_reference(s, chain, {{"a", with_specials(random_uniform(DType::f32, {m, k}, -1, 1, 31))},
                                      {"r", with_specials(random_uniform(DType::f32, {m, n}, -1, 1, 32))}});
  // Gemm: transposed weights, alpha in the product, beta * C in the pass.
  Graph gemm = gemm_trans_b(130, 96, 200);
  Session t = Session::from_graph(gemm, Mode::compiled, options("blas"));
  EXPECT_EQ(t.stats().blas_kernels, 1);
  expect_matches_reference(t, gemm, {{"a", with_specials(random_uniform(DType::f32, {130, 96}, -1, 1, 33))}});
  // Symbolic rows: one pass serves every M.
  Graph sym = symbolic_linear(34);
  Session u = Session::from_graph(sym, Mode::compiled, options("blas"));
  EXPECT_EQ(u.stats().blas_kernels, 1);
  expect_matches_reference(u, sym, {{"a", with_specials(random_uniform(DType::f32, {2, 37, 160}, -1, 1, 36))}});
  expect_matches_reference(u, sym, {{"a", random_uniform(DType::f32, {1, 1, 160}, -1, 1, 37)}});
  expect_matches_reference(u, sym, {{"a", random_uniform(DType::f32, {3, 0, 160}, -1, 1, 38)}});
}

TEST_F(GemmSchedule, ScalarFactorAfterTheProductFoldsIntoAlpha) {
  // (A x W) * 0.37 + bias -> Relu, and attention's bmm / 3 (not a power of two: x / c as x * (1 / c)).
  GraphBuilder b("scaled");
  ValueId a = b.input("a", DType::f32, {67, 200});
  ValueId w = b.constant("w", random_uniform(DType::f32, {200, 190}, -0.5, 0.5, 41));
  ValueId bias = b.constant("bias", random_uniform(DType::f32, {190}, -0.5, 0.5, 42));
  ValueId h = b.op(OpKind::Mul, {b.scalar(DType::f32, 0.37), b.op(OpKind::MatMul, {a, w})});
  b.output(b.op(OpKind::Relu, {b.op(OpKind::Add, {h, bias})}), "y");
  Graph linear = b.build();
  GraphBuilder q("attention");
  ValueId x = q.input("x", DType::f32, {2, 3, 67, 96});
  ValueId kt = q.input("kt", DType::f32, {2, 3, 96, 131});
  q.output(q.op(OpKind::Div, {q.op(OpKind::MatMul, {x, kt}), q.scalar(DType::f32, 3.0)}), "y");
  Graph scores = q.build();
  const std::map<std::string, Tensor> linear_in = {{"a", with_specials(random_uniform(DType::f32, {67, 200}, -1, 1, 43))}};
  const std::map<std::string, Tensor> scores_in = {
      {"x", with_specials(random_uniform(DType::f32, {2, 3, 67, 96}, -1, 1, 44))},
      {"kt", random_uniform(DType::f32, {2, 3, 96, 131}, -1, 1, 45)}};
  for (const char* backends : {"template", "onednn", "blas"}) {
    SCOPED_TRACE(backends);
    Session s = Session::from_graph(linear, Mode::compiled, options(backends));
    EXPECT_EQ(s.stats().kernels, 1);  // product, factor, bias and Relu: one call
    expect_matches_reference(s, linear, linear_in);
    Session t = Session::from_graph(scores, Mode::compiled, options(backends));
    EXPECT_EQ(t.stats().kernels, 1);
    EXPECT_EQ(t.stats().library_kernels, 1);
    expect_matches_reference(t, scores, scores_in);
  }
  // Division by zero is not folded into alpha: the Div itself joins as the group's tail (x / 0 stays
  // +-Inf or NaN exactly).
  GraphBuilder z("zero");
  ValueId za = z.input("x", DType::f32, {2, 3, 67, 96});
  ValueId zb = z.input("kt", DType::f32, {2, 3, 96, 131});
  z.output(z.op(OpKind::Div, {z.op(OpKind::MatMul, {za, zb}), z.scalar(DType::f32, 0.0)}), "y");
  Graph by_zero = z.build();
  Session u = Session::from_graph(by_zero, Mode::compiled, options("template"));
  EXPECT_EQ(u.stats().kernels, 1);
  expect_matches_reference(u, by_zero, scores_in);
}

TEST_F(GemmSchedule, PointwiseTailPastThePostOpsRunsAsGeneratedEpilogue) {
  // Past bias, GELU and residual (oneDNN's post-ops): * 0.5, - a constant per column, Min with a
  // computed tensor, Tanh, Pow by a scalar. oneDNN runs the tail as a pass; templates in their hook.
  const int64_t m = 67, k = 200, n = 190;
  GraphBuilder b("tail");
  ValueId a = b.input("a", DType::f32, {m, k});
  ValueId r = b.input("r", DType::f32, {m, n});
  ValueId r2 = b.input("r2", DType::f32, {m, n});
  ValueId w = b.constant("w", random_uniform(DType::f32, {k, n}, -0.5, 0.5, 51));
  ValueId bias = b.constant("bias", random_uniform(DType::f32, {n}, -0.5, 0.5, 52));
  ValueId column = b.constant("column", random_uniform(DType::f32, {1, n}, -0.5, 0.5, 53));
  ValueId h = b.op(OpKind::Add, {b.op(OpKind::MatMul, {a, w}), bias});
  ValueId erf = b.op(OpKind::Erf, {b.op(OpKind::Div, {h, b.scalar(DType::f32, std::sqrt(2.0))})});
  ValueId gelu = b.op(OpKind::Mul, {b.op(OpKind::Mul, {h, b.op(OpKind::Add, {erf, b.scalar(DType::f32, 1.0)})}),
                                    b.scalar(DType::f32, 0.5)});
  ValueId t = b.op(OpKind::Add, {gelu, r});
  t = b.op(OpKind::Mul, {t, b.scalar(DType::f32, 0.5)});
  t = b.op(OpKind::Sub, {t, column});
  t = b.op(OpKind::Min, {r2, t});
  t = b.op(OpKind::Tanh, {t});
  b.output(b.op(OpKind::Pow, {t, b.scalar(DType::f32, 2.0)}), "y");
  Graph g = b.build();
  const std::map<std::string, Tensor> in = {{"a", with_specials(random_uniform(DType::f32, {m, k}, -1, 1, 54))},
                                            {"r", with_specials(random_uniform(DType::f32, {m, n}, -1, 1, 55))},
                                            {"r2", random_uniform(DType::f32, {m, n}, -1, 1, 56)}};
  // Batched: (x @ kt) / 3 + r, Sigmoid, * a constant per column of shape [1, 1, 1, N].
  GraphBuilder q("bmm_tail");
  ValueId x = q.input("x", DType::f32, {2, 3, 67, 96});
  ValueId kt = q.input("kt", DType::f32, {2, 3, 96, 131});
  ValueId qr = q.input("r", DType::f32, {2, 3, 67, 131});
  ValueId s = q.op(OpKind::Div, {q.op(OpKind::MatMul, {x, kt}), q.scalar(DType::f32, 3.0)});
  s = q.op(OpKind::Sigmoid, {q.op(OpKind::Add, {s, qr})});
  q.output(q.op(OpKind::Mul, {s, q.constant("col", random_uniform(DType::f32, {1, 1, 1, 131}, -2, 2, 57))}), "y");
  Graph batched = q.build();
  const std::map<std::string, Tensor> batched_in = {
      {"x", with_specials(random_uniform(DType::f32, {2, 3, 67, 96}, -1, 1, 58))},
      {"kt", random_uniform(DType::f32, {2, 3, 96, 131}, -1, 1, 59)},
      {"r", with_specials(random_uniform(DType::f32, {2, 3, 67, 131}, -1, 1, 60))}};
  for (const char* backends : {"template", "onednn,template", "blas", "template,onednn,blas"}) {
    SCOPED_TRACE(backends);
    fs::remove_all(dir_ / "cache");  // a fresh tuning database: each setting measures its own candidates
    Session one = Session::from_graph(g, Mode::compiled, options(backends));
    EXPECT_EQ(one.stats().kernels, 1);
    EXPECT_EQ(one.stats().library_kernels, 1);
    expect_matches_reference(one, g, in);
    Session two = Session::from_graph(batched, Mode::compiled, options(backends));
    EXPECT_EQ(two.stats().kernels, 1);
    expect_matches_reference(two, batched, batched_in);
  }
  // oneDNN as the only candidate (nothing to tune): no tail, the pointwise nodes stay outside.
  Session library = Session::from_graph(g, Mode::compiled, options("onednn"));
  EXPECT_EQ(library.stats().kernels, 2);
  expect_matches_reference(library, g, in);
  // autotune=off picks oneDNN, with the tail as its pass.
  Options off = options();
  off.set("autotune", "off");
  Session untuned = Session::from_graph(g, Mode::compiled, off);
  EXPECT_EQ(untuned.stats().kernels, 1);
  EXPECT_EQ(untuned.stats().template_kernels, 0);
  expect_matches_reference(untuned, g, in);
}

TEST_F(GemmSchedule, TailStopsAtSharedValuesAndOtherBroadcasts) {
  GraphBuilder b("stops");
  ValueId a = b.input("a", DType::f32, {67, 200});
  ValueId rows = b.input("rows", DType::f32, {67, 1});  // one value per row: not a tail operand
  ValueId w = b.constant("w", random_uniform(DType::f32, {200, 190}, -0.5, 0.5, 61));
  ValueId h = b.op(OpKind::Exp, {b.op(OpKind::Mul, {b.op(OpKind::MatMul, {a, w}), b.scalar(DType::f32, 0.1)})});
  ValueId shared = b.op(OpKind::Neg, {h});  // read twice below: ends the tail
  b.output(b.op(OpKind::Add, {b.op(OpKind::Mul, {shared, rows}), shared}), "y");
  Graph g = b.build();
  Session s = Session::from_graph(g, Mode::compiled, options("template"));
  EXPECT_EQ(s.stats().library_kernels, 1);
  EXPECT_EQ(s.stats().kernels, 2);  // matmul+scale+exp+neg, then a pointwise kernel
  expect_matches_reference(s, g, {{"a", with_specials(random_uniform(DType::f32, {67, 200}, -1, 1, 62))},
                                  {"rows", random_uniform(DType::f32, {67, 1}, -1, 1, 63)}});
}

// A [batch.., m, k] x B [batch.., k, n], both computed; with `epilogue`, + bias [n] + residual R.
Graph batched_product(const std::vector<int64_t>& batch, int64_t m, int64_t k, int64_t n, bool epilogue) {
  GraphBuilder b("bmm");
  auto dims = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> d = batch;
    d.push_back(rows);
    d.push_back(cols);
    return d;
  };
  ValueId a = b.input("a", DType::f32, dims(m, k));
  ValueId bt = b.input("b", DType::f32, dims(k, n));
  ValueId y = b.op(OpKind::MatMul, {a, bt});
  if (epilogue) {
    ValueId bias = b.constant("bias", random_uniform(DType::f32, {n}, -0.5, 0.5, 21));
    y = b.op(OpKind::Add, {b.op(OpKind::Add, {y, bias}), b.input("r", DType::f32, dims(m, n))});
  }
  b.output(y, "y");
  return b.build();
}

TEST_F(GemmSchedule, BatchedProductsOfComputedOperandsRunOnTheTemplate) {
  struct Case {
    std::vector<int64_t> batch;
    int64_t m, k, n;
    bool epilogue;
  };
  // No tile divides these; size-1 batch dims, M = 1 and N = 1; each at least kTuneMinMacs.
  const Case cases[] = {{{2, 3}, 67, 96, 131, false},  {{3}, 45, 130, 121, true},   {{1, 5}, 1, 2100, 203, true},
                        {{4, 1}, 1500, 400, 1, false},   {{2, 2}, 128, 64, 128, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "batch " << c.batch.size() << " m " << c.m << " k " << c.k << " n " << c.n);
    Graph g = batched_product(c.batch, c.m, c.k, c.n, c.epilogue);
    auto dims = [&](int64_t rows, int64_t cols) {
      std::vector<int64_t> d = c.batch;
      d.push_back(rows);
      d.push_back(cols);
      return d;
    };
    std::map<std::string, Tensor> in = {{"a", with_specials(random_uniform(DType::f32, dims(c.m, c.k), -1, 1, 22))},
                                        {"b", random_uniform(DType::f32, dims(c.k, c.n), -1, 1, 23)}};
    if (c.epilogue) in["r"] = with_specials(random_uniform(DType::f32, dims(c.m, c.n), -1, 1, 24));
    Session s = Session::from_graph(g, Mode::compiled, options("template"));
    EXPECT_EQ(s.stats().library_kernels, 1);
    EXPECT_EQ(s.stats().kernels, 1);
    EXPECT_EQ(s.stats().template_kernels, 1);
    expect_matches_reference(s, g, in);
    Session blas = Session::from_graph(g, Mode::compiled, options("blas"));
    EXPECT_EQ(blas.stats().blas_kernels, 1);
    expect_matches_reference(blas, g, in);
    // With every family competing, whichever wins matches.
    Session all = Session::from_graph(g, Mode::compiled, options("template,onednn,blas"));
    EXPECT_EQ(all.stats().autotuned_ops, 1);
    expect_matches_reference(all, g, in);
  }
  // A bare product below kTuneMinMacs stays an eager node; oneDNN alone never groups a bare one.
  Graph small = batched_product({2}, 8, 16, 8, false);
  Session s = Session::from_graph(small, Mode::compiled, options("template"));
  EXPECT_EQ(s.stats().library_kernels, 0);
  Graph bare = batched_product({2, 3}, 67, 96, 131, false);
  EXPECT_EQ(Session::from_graph(bare, Mode::compiled, options("onednn")).stats().library_kernels, 0);
}

}  // namespace
}  // namespace kiln
