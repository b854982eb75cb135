#include "templates/gemm/cpu/gemm_kernel.h"

#include <new>
#include <optional>
#include <string>

#include "support/error.h"
#include "support/packed_weights.h"
#include "support/page_out.h"

namespace kiln::templates::gemm {

using codegen::cpu::CompiledKernel;
using codegen::cpu::CpuFeatures;

std::vector<GemmKernel> GemmKernel::compile(const std::vector<GemmSpec>& specs, const Options& options) {
  return compile(specs, options, codegen::cpu::detect_cpu_features());
}

std::vector<GemmKernel> GemmKernel::compile(const std::vector<GemmSpec>& specs, const Options& options,
                                            const CpuFeatures& features) {
  std::vector<codegen::cpu::KernelSource> sources;
  sources.reserve(specs.size());
  for (const GemmSpec& s : specs) sources.push_back(emit_gemm(s.problem, s.config, s.epilogue, features));
  std::vector<CompiledKernel> compiled = codegen::cpu::compile_kernels(sources, options, features);
  std::vector<GemmKernel> out;
  out.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) out.push_back(wrap(specs[i], std::move(compiled[i])));
  return out;
}

GemmKernel GemmKernel::wrap(const GemmSpec& spec, CompiledKernel compiled) {
  GemmKernel k;
  k.spec_ = spec;
  auto kernel = std::make_shared<CompiledKernel>(std::move(compiled));
  k.entry_ = reinterpret_cast<Entry*>(kernel->entry("kiln_gemm"));
  k.kernel_ = std::move(kernel);
  return k;
}

void GemmKernel::set_constant_b(const float* B) {
  KILN_INTERNAL_CHECK(kernel_ && spec_.problem.b_constant, "GemmKernel::set_constant_b: not a constant-weights kernel");
  auto floats = reinterpret_cast<int64_t (*)()>(kernel_->entry("kiln_gemm_packed_b_floats"))();
  auto pack = reinterpret_cast<void (*)(const float*, float*)>(kernel_->entry("kiln_gemm_pack_b"));
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(floats, 16)) * sizeof(float);
  // The layout is the kernel's: its key names its source, which holds the packing code.
  const std::string layout = "template " + kernel_->key;
  if (std::optional<PackedCopy> saved = adopt_offered_pack(B, layout, bytes)) {
    packed_b_ = std::shared_ptr<float>(saved->owner, static_cast<float*>(const_cast<void*>(saved->data)));
    populate(saved->data, saved->bytes);
  } else {
    float* buffer = static_cast<float*>(::operator new(bytes, std::align_val_t(64)));
    packed_b_ = std::shared_ptr<float>(buffer, [](float* p) { ::operator delete(p, std::align_val_t(64)); });
    pack(B, buffer);
    record_pack(B, layout, {buffer, bytes, packed_b_});
  }
  // Every run reads the packed copy: the original's pages (an mmapped weight file's, mostly) go back.
  const GemmProblem& p = spec_.problem;
  const int64_t matrices = p.batch_stride_b == 0 ? 1 : p.batch_stride_b == kDenseStride ? p.batch : 0;
  page_out(B, static_cast<size_t>(matrices * p.k * p.n) * sizeof(float));
}

void GemmKernel::run(const float* bias, const float* A, const float* B, float* C, int64_t M,
                     const void* const* extra, int nthreads) const {
  KILN_INTERNAL_CHECK(entry_ != nullptr, "GemmKernel::run: not compiled");
  if (spec_.problem.b_constant) {
    KILN_INTERNAL_CHECK(packed_b_ != nullptr, "GemmKernel::run: constant B not set");
    B = packed_b_.get();
  }
  entry_(bias, A, B, C, M, extra, nthreads);
}

}  // namespace kiln::templates::gemm
