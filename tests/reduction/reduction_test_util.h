// Helpers for the reduction-family tests: building single nodes, running them eagerly and on the fp64
// reference path, random inputs with special values, and an element-by-element comparison.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "ops/registry.h"
#include "runtime/node_runner.h"

namespace kiln::test {

inline Node make_node(OpKind op, size_t inputs, size_t outputs = 1) {
  Node n;
  n.op = op;
  n.name = "n0";
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back(static_cast<ValueId>(i));
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back(static_cast<ValueId>(100 + i));
  return n;
}
inline void set_int(Node& n, const std::string& k, int64_t v) { n.attrs[k] = Attribute{v}; }
inline void set_float(Node& n, const std::string& k, double v) { n.attrs[k] = Attribute{v}; }

inline Tensor f32(std::vector<int64_t> shape, const std::vector<double>& v) {
  return Tensor::from_vector<double>(DType::f32, std::move(shape), v);
}
inline Tensor i64(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(DType::i64, std::move(shape), v);
}
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.as_double(i);
  return v;
}

inline std::vector<Tensor> run_eager(const Node& n, const std::vector<const Tensor*>& in) {
  NodeRunOptions o;
  return run_node(n, in, o);
}
// The oracle: float inputs converted to f64, kernel.reference = true.
inline std::vector<Tensor> run_reference(const Node& n, const std::vector<const Tensor*>& in) {
  std::vector<Tensor> wide;
  wide.reserve(in.size());
  std::vector<const Tensor*> ptrs;
  for (const Tensor* t : in) {
    if (t && is_float(t->dtype())) {
      wide.push_back(convert_tensor(*t, DType::f64));
      ptrs.push_back(&wide.back());
    } else {
      ptrs.push_back(t);
    }
  }
  NodeRunOptions o;
  o.kernel.reference = true;
  return run_node(n, ptrs, o);
}

// Uniform values in [lo, hi); a fraction `special` of them replaced by NaN, +inf or -inf.
inline Tensor random_f32(std::vector<int64_t> shape, std::mt19937& rng, double lo = -4, double hi = 4,
                         double special = 0) {
  Tensor t = Tensor::empty(DType::f32, std::move(shape));
  std::uniform_real_distribution<float> u(static_cast<float>(lo), static_cast<float>(hi));
  std::uniform_real_distribution<double> p(0, 1);
  const float specials[] = {NAN, INFINITY, -INFINITY};
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = u(rng);
    if (special > 0 && p(rng) < special) v = specials[rng() % 3];
    t.data<float>()[i] = v;
  }
  return t;
}

// Largest errors seen by compare(); the tests print them so the report can state them.
struct ErrorStats {
  double max_abs = 0, max_rel = 0;
  int64_t checked = 0;
};

// got (f32 or any) against the reference (f64): NaN where the reference has NaN, the same infinity,
// else |got - ref| <= atol + rtol * |ref|.
inline void compare(const Tensor& got, const Tensor& ref, double rtol, double atol, ErrorStats* stats = nullptr,
                    const std::string& what = "") {
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.as_double(i), r = ref.as_double(i);
    if (std::isnan(r) || std::isinf(r)) {
      bool ok = std::isnan(r) ? std::isnan(g) : g == r;
      if (!ok && failures++ < 5) ADD_FAILURE() << what << " element " << i << ": got " << g << ", reference " << r;
      continue;
    }
    double err = std::fabs(g - r);
    bool ok = err <= atol + rtol * std::fabs(r);  // false for a NaN g
    if (!ok && failures++ < 5) ADD_FAILURE() << what << " element " << i << ": got " << g << ", reference " << r;
    if (stats) {
      stats->max_abs = std::max(stats->max_abs, err);
      if (std::fabs(r) > 1e-30) stats->max_rel = std::max(stats->max_rel, err / std::fabs(r));
      ++stats->checked;
    }
  }
}

inline void print_stats(const std::string& what, const ErrorStats& s) {
  std::printf("[ measured ] %s: max abs err %.3g, max rel err %.3g over %lld values\n", what.c_str(), s.max_abs,
              s.max_rel, static_cast<long long>(s.checked));
}

// Shape inference alone, with symbolic shapes and optionally unknown input values.
inline std::vector<TensorType> infer(const Node& n, const std::vector<const TensorType*>& types,
                                     const std::vector<const Tensor*>& values = {}) {
  int fresh = 0;
  std::vector<const Tensor*> v = values;
  v.resize(types.size(), nullptr);
  InferContext ctx(n, types, v, &fresh, 16);
  return op_registry().find(n.op)->infer(ctx);
}

}  // namespace kiln::test
