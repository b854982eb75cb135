// Helpers for the linalg op tests: building single nodes, running them eagerly (f32) and on the fp64
// reference path, random inputs with special values, and tolerance-aware comparison.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "runtime/node_runner.h"

namespace kiln::linalg_test {

// A node with `inputs` inputs (a false entry in `present` marks an omitted optional input).
inline Node make_node(OpKind op, size_t inputs, size_t outputs = 1, std::vector<bool> present = {}) {
  Node n;
  n.op = op;
  n.name = "n";
  for (size_t i = 0; i < inputs; ++i)
    n.inputs.push_back(i < present.size() && !present[i] ? kNoValue : static_cast<ValueId>(i));
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back(static_cast<ValueId>(100 + i));
  return n;
}

template <class V>
void set_attr(Node& n, const std::string& name, V value) {
  n.attrs[name] = Attribute{std::move(value)};
}
inline void set_ints(Node& n, const std::string& name, std::vector<int64_t> v) { set_attr(n, name, std::move(v)); }

inline std::vector<Tensor> run(const Node& n, const std::vector<const Tensor*>& inputs, bool reference = false) {
  NodeRunOptions o;
  o.kernel.reference = reference;
  return run_node(n, inputs, o);
}

inline Tensor f32(std::vector<int64_t> shape, const std::vector<double>& v) {
  return Tensor::from_vector<double>(DType::f32, std::move(shape), v);
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_double(i));
  return v;
}

// Uniform values in [-1, 1]; with `specials`, about 2% become NaN, +Inf or -Inf.
inline Tensor random_f32(std::vector<int64_t> shape, std::mt19937& rng, bool specials = false) {
  Tensor t = Tensor::empty(DType::f32, std::move(shape));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_int_distribution<int> pick(0, 149);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = u(rng);
    if (specials) {
      int p = pick(rng);
      if (p == 0) v = NAN;
      else if (p == 1) v = INFINITY;
      else if (p == 2) v = -INFINITY;
    }
    t.data<float>()[i] = v;
  }
  return t;
}

inline Tensor abs_f64(const Tensor& t) {
  Tensor r = convert_tensor(t, DType::f64);
  for (int64_t i = 0; i < r.numel(); ++i) r.data<double>()[i] = std::fabs(r.data<double>()[i]);
  return r;
}

// Expects `got` to match `want` elementwise: NaN where want is NaN, equal infinities, and otherwise
// |got - want| <= atol + rtol * scale, where scale is |want| or the matching element of `magnitude`
// (e.g. the product of absolute values, the right scale when terms cancel).
inline void expect_match(const Tensor& got, const Tensor& want, double atol, double rtol,
                         const Tensor* magnitude = nullptr, const std::string& what = "") {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int bad = 0;
  for (int64_t i = 0; i < want.numel() && bad < 5; ++i) {
    double g = got.as_double(i), w = want.as_double(i);
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else {
      double scale = std::fabs(magnitude ? magnitude->as_double(i) : w);
      ok = std::fabs(g - w) <= atol + rtol * (std::isfinite(scale) ? scale : 0.0);
    }
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
    }
  }
}

// Runs `n` eagerly on f32 `inputs` and on the fp64 reference with the same values; compares.
// Returns the eager result. `abs_inputs` selects which inputs feed the magnitude run (a reference run
// on absolute values, the error scale of sums of products); empty means compare against |want|.
inline Tensor differential(const Node& n, const std::vector<const Tensor*>& inputs, double atol, double rtol,
                           const std::string& what = "", bool magnitude_run = false) {
  std::vector<Tensor> f64(inputs.size()), mags(inputs.size());
  std::vector<const Tensor*> in64(inputs.size(), nullptr), inmag(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    bool floaty = inputs[i]->dtype() == DType::f32;
    f64[i] = floaty ? convert_tensor(*inputs[i], DType::f64) : *inputs[i];
    mags[i] = floaty ? abs_f64(*inputs[i]) : *inputs[i];
    in64[i] = &f64[i];
    inmag[i] = &mags[i];
  }
  Tensor got = run(n, inputs, false).at(0);
  Tensor want = run(n, in64, true).at(0);
  EXPECT_EQ(got.dtype(), DType::f32) << what;
  EXPECT_EQ(want.dtype(), DType::f64) << what;
  if (magnitude_run) {
    Tensor mag = run(n, inmag, true).at(0);
    expect_match(got, want, atol, rtol, &mag, what);
  } else {
    expect_match(got, want, atol, rtol, nullptr, what);
  }
  return got;
}

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace kiln::linalg_test
