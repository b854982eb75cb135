// Shared helpers for the elementwise op tests: building single nodes, running them eagerly and through
// the fp64 reference path, random inputs with special values, and tolerant comparison.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "runtime/node_runner.h"
#include "support/error.h"

namespace kiln::testing_elementwise {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A node of `op` with `inputs` inputs (ids 0..n-1; a false in `present` marks an omitted input).
inline Node make_node(OpKind op, size_t inputs, std::map<std::string, Attribute, std::less<>> attrs = {},
                      std::vector<bool> present = {}) {
  Node n;
  n.op = op;
  n.name = std::string(op_name(op)) + "_test";
  for (size_t i = 0; i < inputs; ++i)
    n.inputs.push_back(present.empty() || present[i] ? static_cast<ValueId>(i) : kNoValue);
  n.outputs = {static_cast<ValueId>(inputs)};
  n.attrs = std::move(attrs);
  return n;
}
inline Attribute int_attr(int64_t v) { return Attribute{v}; }
inline Attribute float_attr(double v) { return Attribute{v}; }

// Runs the node eagerly (reference = false) or as the fp64 oracle.
inline Tensor run(const Node& node, const std::vector<const Tensor*>& in, bool reference = false) {
  NodeRunOptions o;
  o.kernel.reference = reference;
  auto outs = run_node(node, in, o);
  return outs.at(0);
}
inline Tensor run(const Node& node, std::initializer_list<const Tensor*> in, bool reference = false) {
  return run(node, std::vector<const Tensor*>(in), reference);
}

// The reference run: float inputs widened to f64 (exactly), kernel.reference = true.
inline Tensor run_reference(const Node& node, const std::vector<const Tensor*>& in) {
  std::vector<Tensor> wide;
  wide.reserve(in.size());
  std::vector<const Tensor*> ptrs;
  for (const Tensor* t : in) {
    if (t && (t->dtype() == DType::f32)) {
      wide.push_back(convert_tensor(*t, DType::f64));
      ptrs.push_back(&wide.back());
    } else {
      ptrs.push_back(t);
    }
  }
  return run(node, ptrs, true);
}

inline Tensor f32(std::vector<int64_t> shape, const std::vector<double>& v) {
  return Tensor::from_vector<double>(DType::f32, std::move(shape), v);
}
inline Tensor f64(std::vector<int64_t> shape, const std::vector<double>& v) {
  return Tensor::from_vector<double>(DType::f64, std::move(shape), v);
}
template <class T = int64_t>
inline Tensor typed(DType t, std::vector<int64_t> shape, const std::vector<T>& v) {
  return Tensor::from_vector<T>(t, std::move(shape), v);
}
inline Tensor boolean(std::vector<int64_t> shape, const std::vector<int>& v) {
  return Tensor::from_vector<int>(DType::boolean, std::move(shape), v);
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.as_double(i);
  return v;
}
inline std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.as_int64(i);
  return v;
}

// Element-exact comparison where NaN equals NaN (and -0 equals +0 unless `signed_zero`).
inline ::testing::AssertionResult same_values(const std::vector<double>& got, const std::vector<double>& want,
                                              bool signed_zero = false) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i];
    if (ok && signed_zero && got[i] == 0) ok = std::signbit(got[i]) == std::signbit(want[i]);
    if (!ok) return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Random values: mostly uniform in [-range, range], with NaN, +-Inf, +-0, tiny and huge values mixed in.
inline std::vector<double> random_values(std::mt19937& rng, int64_t n, double range, bool specials = true) {
  std::uniform_real_distribution<double> uni(-range, range);
  std::uniform_int_distribution<int> pick(0, 99);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    int p = specials ? pick(rng) : 99;
    if (p == 0) x = kNaN;
    else if (p == 1) x = kInf;
    else if (p == 2) x = -kInf;
    else if (p == 3) x = 0.0;
    else if (p == 4) x = -0.0;
    else if (p == 5) x = uni(rng) * 1e-30;
    else if (p == 6) x = uni(rng) * 1e30;
    else if (p == 7) x = std::round(uni(rng));  // integers (Pow, Mod, Floor edge cases)
    else x = uni(rng);
  }
  return v;
}

// f32 result against the f64 reference: the reference rounded to f32 must match within
// atol + rtol * |ref|, NaN must match NaN, and infinities must match exactly.
inline ::testing::AssertionResult close_to_reference(const Tensor& got, const Tensor& ref, double rtol, double atol) {
  if (got.shape() != ref.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape_string() << " != " << ref.shape_string();
  for (int64_t i = 0; i < got.numel(); ++i) {
    double y = got.as_double(i);
    double r = static_cast<float>(ref.as_double(i));
    bool ok;
    if (std::isnan(r)) ok = std::isnan(y);
    else if (std::isinf(r)) ok = y == r;
    else if (std::isinf(y)) ok = std::fabs(r) > 0.999 * std::numeric_limits<float>::max() && std::signbit(y) == std::signbit(r);
    else ok = std::fabs(y - r) <= atol + rtol * std::fabs(r);
    if (!ok)
      return ::testing::AssertionFailure() << "element " << i << ": f32 " << y << " vs reference " << ref.as_double(i);
  }
  return ::testing::AssertionSuccess();
}

// Distance in units in the last place between two finite floats (0 if both NaN or equal).
inline int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<int64_t>::max();
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t{std::numeric_limits<int32_t>::min()} - i : int64_t{i};
  };
  int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

}  // namespace kiln::testing_elementwise
