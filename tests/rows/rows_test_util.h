// Shared helpers for the row-kernel tests: the tests' kernel cache, compiling row kernels, running a
// group's kernel on graph values, the fp64 oracle (each node on the reference path, f64 copies of the
// data) and an element-by-element comparison.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/emit_row.h"
#include "kiln/graph.h"
#include "kiln/builder.h"
#include "kiln/options.h"
#include "passes/passes.h"
#include "runtime/node_runner.h"
#include "schedule/fuse_rows.h"

namespace kiln::rows_test {

namespace fs = std::filesystem;
using codegen::cpu::CompiledKernel;

// The tests' own kernel cache, in the build folder: content-addressed, so a later test process (ctest
// runs each test in its own) loads what an earlier one compiled instead of compiling it again.
class TestCache {
 public:
  Options options() const {
    Options o;
    o.cache_dir = (fs::path(KILN_BINARY).parent_path() / "kernel_cache_rows_test").string();
    o.compile_jobs = 2;
    return o;
  }
};

inline std::vector<CompiledKernel> compile_rows(const std::vector<loops::RowKernel>& kernels, const TestCache& cache,
                                                const codegen::cpu::RowEmitOptions& options = {}) {
  std::vector<codegen::cpu::KernelSource> sources;
  for (const loops::RowKernel& k : kernels) sources.push_back(codegen::cpu::emit_row_cpp(k, options).source);
  return codegen::cpu::compile_kernels(sources, cache.options());
}

inline void call(const CompiledKernel& ck, const std::string& name, const std::vector<const void*>& inputs,
                 void* output, const std::vector<int64_t>& syms) {
  auto* fn = reinterpret_cast<codegen::cpu::RowEntry*>(ck.entry(name));
  fn(inputs.data(), output, syms.data());
}

// Normal(0, 2) values with NaN, +inf and -inf sprinkled in (about one each per `every` elements).
inline Tensor random_with_specials(DType dtype, std::vector<int64_t> shape, uint32_t seed, int every = 0) {
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

// Row r (of `cols` elements) set to `v`.
inline void fill_row(Tensor& t, int64_t r, int64_t cols, double v) {
  for (int64_t c = 0; c < cols; ++c) {
    if (t.dtype() == DType::f32) t.data<float>()[r * cols + c] = static_cast<float>(v);
    else t.data<double>()[r * cols + c] = v;
  }
}

// Every node of g on the fp64 reference path, from `given` (graph inputs; float data widened).
inline std::map<ValueId, Tensor> run_reference(const Graph& g, const std::map<ValueId, Tensor>& given) {
  std::map<ValueId, Tensor> vals;
  auto wide = [](const Tensor& t) { return is_float(t.dtype()) ? convert_tensor(t, DType::f64) : t; };
  for (const auto& [v, t] : given) vals[v] = wide(t);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant) vals[ValueId(v)] = wide(*g.values[v].constant);
  NodeRunOptions o;
  o.kernel.reference = true;
  for (const Node& n : g.nodes) {
    std::vector<const Tensor*> in;
    for (ValueId v : n.inputs) in.push_back(v == kNoValue ? nullptr : &vals.at(v));
    std::vector<Tensor> out = run_node(n, in, o);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue) vals[n.outputs[i]] = out[i];
  }
  return vals;
}

// Runs a group's compiled kernel on graph values (inputs and constants), binding its symbols from
// the input shapes; returns the output.
inline Tensor run_group(const Graph& g, const schedule::RowGroup& group, const CompiledKernel& ck,
                        const std::map<ValueId, Tensor>& given) {
  std::vector<const Tensor*> ins;
  for (ValueId v : group.inputs) ins.push_back(g.value(v).constant ? g.value(v).constant.get() : &given.at(v));
  std::vector<int64_t> syms;
  std::map<std::string, int64_t> by_name;
  std::vector<loops::Expr> names = loops::kernel_symbols(group.kernel);
  for (size_t k = 0; k < group.symbols.size(); ++k) {
    syms.push_back(ins[size_t(group.symbols[k].input)]->dim(group.symbols[k].dim));
    by_name[names[k].name()] = syms.back();
  }
  std::vector<int64_t> dims;
  for (const Dim& d : g.value(group.output).type.shape) dims.push_back(d.is_static() ? d.value : by_name.at(d.symbol));
  Tensor out = Tensor::empty(g.value(group.output).type.dtype, dims);
  std::vector<const void*> ptrs;
  for (const Tensor* t : ins) ptrs.push_back(t->raw());
  call(ck, group.kernel.name, ptrs, out.raw(), syms);
  return out;
}

// got (f32 or f64) against the f64 oracle: NaN only where NaN, infinities exactly, finite values within
// atol + rtol * |want|. Reports the first mismatch.
inline ::testing::AssertionResult close_to(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape_string() << " vs " << want.shape_string();
  int64_t nan_count = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.as_double(i), b = want.as_double(i);
    bool ok = std::isnan(b) ? std::isnan(a) : std::isinf(b) ? a == b : std::fabs(a - b) <= atol + rtol * std::fabs(b);
    nan_count += std::isnan(b);
    if (!ok) return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", want " << b;
  }
  return ::testing::AssertionSuccess() << nan_count << " NaN";
}

}  // namespace kiln::rows_test
