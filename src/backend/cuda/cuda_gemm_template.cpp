// The GEMM template on the device: compiled through the module cache, launched with a grid from the
// call's sizes.
#include "backend/cuda/cuda_gemm_template.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_hopper.h"
#include "backend/cuda/cuda_kernels.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

// The wgmma kernel's view of a K-major operand [rows, k] (row stride ld elements): boxes of 64 x box_rows,
// 128-byte swizzled, zeros past the matrix. K = 0 is described as 1 (no box is loaded then).
CUtensorMap k_major_map(DType dtype, CUdeviceptr data, int64_t rows, int64_t k, int64_t ld, int box_rows) {
  return half_tensor_map(dtype, data,
                         {{std::max<int64_t>(k, 1), 0, 64}, {rows, (k == 0 ? 8 : ld) * 2, uint32_t(box_rows)}});
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The kernel's KilnRowNorm parameter (cuda_gemm_row_norm_source.cpp), field for field.
struct RowNormParameter {
  CUdeviceptr colsum, x, gamma, beta, y;
  long long ldx, ldy;
  float eps;
};

// K a split covers: a whole number of K steps, so that splits start on step boundaries.
int64_t k_per_split(const GemmTemplateConfig& c, int64_t k) {
  return ceil_div(ceil_div(k, c.split_k), c.bk) * c.bk;
}

}  // namespace

CudaUnit gemm_template_unit(const GemmTemplateSpec& spec) {
  // Named by content with a placeholder name, as the attention kernels are.
  const std::string name = content_name("gemm", gemm_template_source("kiln_gemm", spec));
  return {name, gemm_template_source(name, spec)};
}

GemmTemplateKernel::GemmTemplateKernel(const GemmTemplateSpec& spec, const Context& context, ModuleCache& modules)
    : spec_(spec) {
  check_gemm_spec(spec_);
  const size_t bytes = gemm_template_shared_bytes(spec_);
  const int limit = max_shared_optin(context);
  if (bytes > size_t(limit))
    user_error("GEMM template {}: {} bytes of shared memory a block, the device gives at most {}",
               gemm_config_name(spec_.config), bytes, limit);
  shared_bytes_ = static_cast<unsigned>(bytes);
  sm_count_ = context.device().sm_count;
  const CudaUnit unit = gemm_template_unit(spec_);
  const std::string& name = unit.name;
  const Module module = modules.get(name, unit.code);
  main_.emplace(module.function(name));
  if (needs_reduce_kernel()) reduce_.emplace(module.function(name + "_reduce"));
  allow_dynamic_shared(context, *main_, bytes);
}

bool GemmTemplateKernel::needs_reduce_kernel() const {
  return spec_.config.split_k > 1 && !spec_.config.cluster_reduce;
}

size_t GemmTemplateKernel::workspace_bytes(int64_t m, int64_t n) const {
  if (!needs_reduce_kernel()) return 0;
  return size_t(spec_.config.split_k) * size_t(m) * size_t(n) * sizeof(float);
}

bool gemm_template_accepts(const GemmTemplateSpec& spec, const GemmTemplateArgs& x) {
  if (spec.config.family != GemmFamily::wgmma) return true;
  // TMA: 16-byte aligned bases and row strides; coordinates are 32-bit.
  const int64_t limit = int64_t{1} << 31;
  return x.a % 16 == 0 && x.b % 16 == 0 && x.lda % 8 == 0 && x.ldb % 8 == 0 && x.m < limit && x.n < limit &&
         x.k < limit;
}

void GemmTemplateKernel::launch(const Stream& stream, const GemmTemplateArgs& x) const {
  const GemmTemplateConfig& c = spec_.config;
  const std::string what = fmt::format("GEMM template {} [{},{}]x[{},{}]", gemm_config_name(c), x.m, x.k, x.k, x.n);
  KILN_INTERNAL_CHECK(x.m >= 0 && x.n >= 0 && x.k >= 0, "{}: negative size", what);
  if (x.m == 0 || x.n == 0) return;
  KILN_INTERNAL_CHECK(x.a && x.b && x.c, "{}: null operand", what);
  KILN_INTERNAL_CHECK(x.lda >= x.k && x.ldb >= (spec_.trans_b ? x.k : x.n) && x.ldc >= x.n, "{}: row strides", what);
  KILN_INTERNAL_CHECK(!spec_.epilogue.bias || x.bias, "{}: no bias", what);
  KILN_INTERNAL_CHECK(!spec_.epilogue.residual || (x.residual && x.ldr >= x.n), "{}: no residual", what);
  KILN_INTERNAL_CHECK(!spec_.epilogue.row_norm ||
                          (x.norm_colsum && (!x.norm_y || (x.norm_gamma && x.norm_beta && x.ldy >= x.k))),
                      "{}: row_norm's vectors", what);
  KILN_INTERNAL_CHECK(x.workspace_bytes >= workspace_bytes(x.m, x.n) && (!needs_reduce_kernel() || x.workspace),
                      "{}: workspace", what);
  const int64_t blocks = ceil_div(x.m, c.bm) * ceil_div(x.n, c.bn);
  if (blocks > int64_t{0x7fffffff}) user_error("{}: {} tiles, past the grid's limit", what, blocks);
  if (c.family == GemmFamily::wgmma) {
    KILN_INTERNAL_CHECK(accepts(x), "{}: operands the TMA cannot read (alignment or size)", what);
    launch_wgmma(stream, x);
    return;
  }
  // 16-byte copies need 16-byte aligned rows: the address and the row stride.
  const int a_vec = x.a % 16 == 0 && x.lda % 8 == 0, b_vec = x.b % 16 == 0 && x.ldb % 8 == 0;
  CUdeviceptr a = x.a, b = x.b, out = x.c, bias = x.bias, res = x.residual, ws = x.workspace;
  long long m = x.m, n = x.n, k = x.k, lda = x.lda, ldb = x.ldb, ldc = x.ldc, ldr = x.ldr;
  long long k_split = k_per_split(c, x.k);
  LaunchConfig config;
  config.grid = {unsigned(blocks), 1, unsigned(c.split_k)};
  config.block.x = unsigned(c.threads());
  config.shared_bytes = shared_bytes_;
  config.waits_for_prior_grids = true;  // every template kernel starts with the prologue
  cuda::launch(stream, *main_, config, a, b, out, bias, res, ws, m, n, k, lda, ldb, ldc, ldr, k_split, a_vec, b_vec);
  launch_reduce(stream, x);
}

void GemmTemplateKernel::launch_wgmma(const Stream& stream, const GemmTemplateArgs& x) const {
  const GemmTemplateConfig& c = spec_.config;
  const CUtensorMap map_a = k_major_map(spec_.dtype, x.a, x.m, x.k, x.lda, c.bm);
  const CUtensorMap map_b = k_major_map(spec_.dtype, x.b, x.n, x.k, x.ldb, c.bn);
  CUdeviceptr out = x.c, bias = x.bias, res = x.residual, ws = x.workspace;
  long long m = x.m, n = x.n, k = x.k, ldc = x.ldc, ldr = x.ldr, k_split = k_per_split(c, x.k);
  const int64_t units = ceil_div(x.m, c.bm) * ceil_div(x.n, c.bn) * c.split_k;
  if (units > int64_t{0x7fffffff})
    user_error("GEMM template {}: {} tiles and splits, past the grid's limit", gemm_config_name(c), units);
  LaunchConfig config;
  config.grid.x = unsigned(c.persistent ? std::min<int64_t>(units, std::max(sm_count_, 1)) : units);
  config.block.x = unsigned(c.threads());
  config.shared_bytes = shared_bytes_;
  config.waits_for_prior_grids = true;
  if (spec_.epilogue.row_norm) {
    const RowNormParameter norm{x.norm_colsum, x.a, x.norm_gamma, x.norm_beta, x.norm_y, x.lda, x.ldy, x.norm_eps};
    cuda::launch(stream, *main_, config, map_a, map_b, out, bias, res, ws, m, n, k, ldc, ldr, k_split, norm);
  } else {
    cuda::launch(stream, *main_, config, map_a, map_b, out, bias, res, ws, m, n, k, ldc, ldr, k_split);
  }
  launch_reduce(stream, x);
}

void GemmTemplateKernel::launch_reduce(const Stream& stream, const GemmTemplateArgs& x) const {
  if (!needs_reduce_kernel()) return;
  CUdeviceptr ws = x.workspace, out = x.c, bias = x.bias, res = x.residual;
  long long m = x.m, n = x.n, ldc = x.ldc, ldr = x.ldr;
  LaunchConfig reduce;
  reduce.grid.x = unsigned(std::min<int64_t>(ceil_div(x.m * x.n, kGemmReduceThreads), 4096));
  reduce.block.x = kGemmReduceThreads;
  reduce.waits_for_prior_grids = true;
  cuda::launch(stream, *reduce_, reduce, ws, out, bias, res, m, n, ldc, ldr);
}

}  // namespace kiln::backend::cuda
