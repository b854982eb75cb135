// Shared helpers for the pointwise tests: a private kernel cache per test, compiling and calling.
#pragma once
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "codegen/cpu/compile_kernels.h"
#include "common/temp_dir.h"
#include "codegen/cpu/emit_pointwise.h"
#include "kiln/options.h"
#include "loops/pointwise.h"

namespace kiln::loops::testing {

namespace fs = std::filesystem;
using codegen::cpu::CompiledKernel;
using codegen::cpu::PointwiseEntry;

// A fresh folder under the system temp dir, removed at the end of the test; the cache goes inside.
class TempCache : public ::kiln::test_common::TempDir {
 public:
  TempCache() : ::kiln::test_common::TempDir("kiln-pointwise-test") {}
  Options options() const {
    Options o;
    o.cache_dir = (root() / "cache").string();
    o.compile_jobs = 2;
    return o;
  }
};

// Emits and compiles the kernels (one compiler run each, in parallel).
inline std::vector<CompiledKernel> compile_pointwise(const std::vector<PointwiseKernel>& kernels,
                                                     const TempCache& cache) {
  std::vector<codegen::cpu::KernelSource> sources;
  for (const PointwiseKernel& k : kernels) sources.push_back(codegen::cpu::emit_pointwise_cpp(k).source);
  return codegen::cpu::compile_kernels(sources, cache.options());
}

inline void call(const CompiledKernel& ck, const std::string& name, const std::vector<const void*>& inputs,
                 void* output, const std::vector<int64_t>& syms) {
  auto* fn = reinterpret_cast<PointwiseEntry*>(ck.entry(name));
  fn(inputs.data(), output, syms.data());
}

inline ScalarExpr f32(double v) { return constant(v, DType::f32); }

// Equal as floats, NaN matching NaN (and only NaN), infinities exactly.
inline bool same_float(double got, double want, double rel_tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= rel_tol * std::max(1.0, std::fabs(want));
}

}  // namespace kiln::loops::testing
