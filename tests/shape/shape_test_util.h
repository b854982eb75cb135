// Helpers for the shape-family tests: building single nodes, running them, reading results.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "ops/registry.h"
#include "runtime/node_runner.h"

namespace kiln::shape_test {

// A node with `num_inputs` inputs (ids 0..n-1) and `num_outputs` outputs.
inline Node make_node(OpKind op, size_t num_inputs, size_t num_outputs = 1) {
  Node n;
  n.op = op;
  n.name = std::string(op_name(op)) + "_test";
  for (size_t i = 0; i < num_inputs; ++i) n.inputs.push_back(static_cast<ValueId>(i));
  for (size_t i = 0; i < num_outputs; ++i) n.outputs.push_back(static_cast<ValueId>(100 + i));
  return n;
}

template <class T>
void set_attr(Node& n, const std::string& name, T value) {
  n.attrs[name] = Attribute{std::move(value)};
}

inline Tensor f32(std::vector<int64_t> shape, const std::vector<double>& v) {
  return Tensor::from_vector(DType::f32, std::move(shape), v);
}
inline Tensor i64(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return Tensor::from_vector(DType::i64, std::move(shape), v);
}
inline Tensor i64v(const std::vector<int64_t>& v) { return i64({static_cast<int64_t>(v.size())}, v); }
// 0, 1, 2, ... of the given shape and dtype.
inline Tensor iota(DType dtype, std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(dtype, shape);
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from_vector(dtype, std::move(shape), v);
}

inline std::vector<Tensor> run(const Node& n, const std::vector<const Tensor*>& in, bool reference = false) {
  NodeRunOptions o;
  o.kernel.reference = reference;
  return run_node(n, in, o);
}
inline Tensor run1(const Node& n, const std::vector<const Tensor*>& in) { return run(n, in).at(0); }

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_double(i));
  return v;
}
inline std::vector<int64_t> ints(const Tensor& t) { return t.to_int64_vector(); }

// Bitwise equality of two tensors (dtype, shape and bytes).
inline ::testing::AssertionResult same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) return ::testing::AssertionFailure() << "dtype differs";
  if (a.shape() != b.shape()) return ::testing::AssertionFailure() << a.shape_string() << " vs " << b.shape_string();
  if (a.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) != 0) {
    size_t es = dtype_size(a.dtype());
    for (int64_t i = 0; i < a.numel(); ++i)
      if (std::memcmp(static_cast<const char*>(a.raw()) + i * es, static_cast<const char*>(b.raw()) + i * es, es))
        return ::testing::AssertionFailure() << "element " << i << " differs: " << a.as_double(i) << " vs "
                                             << b.as_double(i);
  }
  return ::testing::AssertionSuccess();
}

// Runs shape inference of `n` on the given input types (nullopt: omitted input) and known values.
inline std::vector<TensorType> infer(const Node& n, const std::vector<std::optional<TensorType>>& types,
                                     const std::vector<const Tensor*>& vals = {}) {
  std::vector<const TensorType*> ptrs;
  for (const auto& t : types) ptrs.push_back(t ? &*t : nullptr);
  std::vector<const Tensor*> v = vals;
  v.resize(types.size(), nullptr);
  int fresh = 0;
  InferContext ctx(n, ptrs, v, &fresh, 16);
  const OpDef* def = op_registry().find(n.op);
  if (!def) throw std::runtime_error("op not registered");
  return def->infer(ctx);
}
inline TensorType type_of(const Tensor& t) { return TensorType{t.dtype(), shape_of(t.shape())}; }

inline Dim S(const char* name) { return Dim::sym(name); }
inline Dim F(int64_t v) { return Dim::fixed(v); }

// Random f32 values with some NaN, +-Inf and negative zeros mixed in.
inline Tensor random_f32(std::vector<int64_t> shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::f32, std::move(shape));
  std::uniform_real_distribution<float> u(-10.f, 10.f);
  std::uniform_int_distribution<int> pick(0, 31);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    int k = pick(rng);
    p[i] = k == 0 ? NAN : k == 1 ? INFINITY : k == 2 ? -INFINITY : k == 3 ? -0.0f : u(rng);
  }
  return t;
}

}  // namespace kiln::shape_test
