// Shared helpers for the routing tests: a private kernel cache for this test process, small graphs with
// softmax-family nodes, inputs with special values, sessions in each mode, and an fp64 comparison.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/builder.h"
#include "kiln/options.h"
#include "kiln/session.h"
#include "passes/passes.h"
#include "runtime/node_runner.h"

namespace kiln::routing_test {

namespace fs = std::filesystem;

// One temp folder per test process for the kernel cache, removed when the process ends.
class ProcessCache {
 public:
  static const fs::path& root() {
    static ProcessCache cache;
    return cache.root_;
  }
  ~ProcessCache() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

 private:
  ProcessCache() {
    std::string pattern = (fs::temp_directory_path() / "kiln-routing-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
  }
  fs::path root_;
};

// Options for a test session: the private cache, two compile jobs, and `settings` ("name" -> value).
inline Options options_with(const std::map<std::string, std::string>& settings = {}) {
  Options o;
  o.cache_dir = (ProcessCache::root() / "cache").string();
  o.compile_jobs = 2;
  for (const auto& [k, v] : settings) o.set(k, v);
  return o;
}

inline Graph inferred(GraphBuilder& b) {
  Graph g = b.build();
  infer_shapes(g, Options{});
  return g;
}

// y = Softmax (or LogSoftmax) of x over `axis`.
inline Graph softmax_graph(Shape shape, int axis = -1, bool log = false, DType dtype = DType::f32) {
  GraphBuilder b("softmax");
  ValueId x = b.input("x", dtype, std::move(shape));
  b.output(b.op(log ? OpKind::LogSoftmax : OpKind::Softmax, {x}, {{"axis", axis}}, "sm"), "y");
  return inferred(b);
}

// y = Softmax(x * 0.125): a plain softmax with a pointwise neighbour before it.
inline Graph scaled_softmax_graph(Shape shape) {
  GraphBuilder b("scaled_softmax");
  ValueId x = b.input("x", DType::f32, std::move(shape));
  ValueId s = b.op(OpKind::Mul, {x, b.scalar(DType::f32, 0.125)});
  b.output(b.op(OpKind::Softmax, {s}, {{"axis", -1}}, "sm"), "y");
  return inferred(b);
}

// bert's attention probabilities: Softmax(scores + Where(mask, 0, -inf)) guarded by
// Where(IsNaN(s), 0, s); scores [1, heads, seq, seq], mask [1, 1, seq, seq].
inline Graph masked_softmax_graph(int64_t heads, Dim seq, bool guard = true) {
  GraphBuilder b("attention");
  ValueId scores = b.input("scores", DType::f32, Shape{Dim::fixed(1), Dim::fixed(heads), seq, seq});
  ValueId mask = b.input("mask", DType::boolean, Shape{Dim::fixed(1), Dim::fixed(1), seq, seq});
  ValueId bias = b.op(OpKind::Where, {mask, b.scalar(DType::f32, 0.0), b.scalar(DType::f32, -INFINITY)});
  ValueId s = b.op(OpKind::Softmax, {b.op(OpKind::Add, {scores, bias})}, {{"axis", -1}}, "sm");
  if (guard) s = b.op(OpKind::Where, {b.op(OpKind::IsNaN, {s}), b.scalar(DType::f32, 0.0), s});
  b.output(s, "probs");
  return inferred(b);
}

// Normal(0, 2) values with NaN, +inf and -inf sprinkled in (about one each per `every` elements).
inline Tensor random_with_specials(std::vector<int64_t> shape, uint32_t seed, int every = 0, DType dtype = DType::f32) {
  Tensor t = Tensor::empty(DType::f64, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, 2.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = dist(rng);
    if (every > 0) {
      uint32_t r = rng() % static_cast<uint32_t>(every);
      v = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : v;
    }
    t.data<double>()[i] = v;
  }
  return convert_tensor(t, dtype);
}

// Elements [r * cols, (r + 1) * cols) set to v.
inline void fill_row(Tensor& t, int64_t r, int64_t cols, double v) {
  for (int64_t c = 0; c < cols; ++c) {
    if (t.dtype() == DType::f32) t.data<float>()[r * cols + c] = static_cast<float>(v);
    else t.data<double>()[r * cols + c] = v;
  }
}

// The special rows every wide-enough test input gets: row 0 all -inf, row 1 one NaN, row 2 one +inf,
// row 3 all -inf but one NaN at the end, row 4 -inf except one finite value (a valid masked row).
inline void add_special_rows(Tensor& t, int64_t rows, int64_t cols) {
  auto set = [&](int64_t i, double v) {
    if (t.dtype() == DType::f32) t.data<float>()[i] = static_cast<float>(v);
    else t.data<double>()[i] = v;
  };
  if (rows > 0) fill_row(t, 0, cols, -INFINITY);
  if (rows > 1) set(1 * cols + cols / 2, NAN);
  if (rows > 2) set(2 * cols + cols / 3, INFINITY);
  if (rows > 3) {
    fill_row(t, 3, cols, -INFINITY);
    set(3 * cols + cols - 1, NAN);
  }
  if (rows > 4) {
    fill_row(t, 4, cols, -INFINITY);
    set(4 * cols + cols / 2, 1.5);
  }
}

// got against the f64 oracle: NaN only where NaN, infinities exactly, finite values within
// atol + rtol * |want|. Reports the first mismatch.
inline ::testing::AssertionResult close_to(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape_string() << " vs " << want.shape_string();
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.as_double(i), b = want.as_double(i);
    bool ok = std::isnan(b) ? std::isnan(a) : std::isinf(b) ? a == b : std::fabs(a - b) <= atol + rtol * std::fabs(b);
    if (!ok) return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", want " << b;
  }
  return ::testing::AssertionSuccess();
}

// A compiled session and the fp64 reference session of one graph.
struct SessionPair {
  Session compiled;
  Session reference;
};
inline SessionPair sessions(const Graph& g, const Options& options) {
  return SessionPair{Session::from_graph(g, Mode::compiled, options), Session::from_graph(g, Mode::reference, options)};
}

// Runs both on `inputs` and compares every output.
inline void expect_matches_reference(const SessionPair& s, const std::map<std::string, Tensor>& inputs,
                                     const std::string& what, double rtol = 2e-5, double atol = 2e-6) {
  auto got = s.compiled.run(inputs);
  auto want = s.reference.run(inputs);
  for (const auto& [name, w] : want) EXPECT_TRUE(close_to(got.at(name), w, rtol, atol)) << what << " output " << name;
}

}  // namespace kiln::routing_test
