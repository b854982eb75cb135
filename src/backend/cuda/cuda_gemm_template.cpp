// The GEMM template on the device: compiled through the module cache, launched with a grid from the
// call's sizes.
#include "backend/cuda/cuda_gemm_template.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_kernels.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

// Driver entry points that not every kiln kernel needs, resolved here once: a missing one is a UserError
// naming it (an old driver).
void* driver_entry(const char* name) {
  const DriverApi& api = driver();
  void* p = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult r = api.cuGetProcAddress(name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !p)
    user_error("device cuda: the CUDA driver (CUDA {}) does not give {}: {}", cuda_version_text(api.driver_version),
               name, describe_result(api, r));
  return p;
}

// Static shared memory stops at 48 KB; more must be opted into per function.
using FuncSetAttribute = CUresult (*)(CUfunction, CUfunction_attribute, int);
FuncSetAttribute func_set_attribute() {
  static const auto fn = reinterpret_cast<FuncSetAttribute>(driver_entry("cuFuncSetAttribute"));
  return fn;
}

using TensorMapEncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                          const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
                                          CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                          CUtensorMapFloatOOBfill);
TensorMapEncodeTiled tensor_map_encode_tiled() {
  static const auto fn = reinterpret_cast<TensorMapEncodeTiled>(driver_entry("cuTensorMapEncodeTiled"));
  return fn;
}

// The wgmma kernel's view of a K-major operand [rows, k] (row stride ld elements): boxes of 64 x box_rows,
// 128-byte swizzled, zeros past the matrix. K = 0 is described as 1 (no box is loaded then).
CUtensorMap k_major_map(DType dtype, CUdeviceptr data, int64_t rows, int64_t k, int64_t ld, int box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(std::max<int64_t>(k, 1)), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(k == 0 ? 8 : ld) * 2};  // a row stride the encoder takes
  const cuuint32_t box[2] = {64, cuuint32_t(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = tensor_map_encode_tiled()(
      &map, dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
      reinterpret_cast<void*>(data), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  KILN_INTERNAL_CHECK(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled of a [{},{}] operand (row stride {}): {}", rows, k,
                      ld, describe_result(driver(), r));
  return map;
}

int max_shared_optin(const Context& context) {
  const DriverApi& api = driver();
  context.make_current();
  CUdevice device = 0;
  check(api.cuDeviceGet(&device, context.device().index), "cuDeviceGet");
  int value = 0;
  check(api.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device),
        "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  return value;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
  if (spec_.config.split_k > 1) reduce_.emplace(module.function(name + "_reduce"));
  if (bytes > 48 * 1024) {
    context.make_current();
    check(func_set_attribute()(main_->handle(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes)),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  }
}

size_t GemmTemplateKernel::workspace_bytes(int64_t m, int64_t n) const {
  if (spec_.config.split_k == 1) return 0;
  return size_t(spec_.config.split_k) * size_t(m) * size_t(n) * sizeof(float);
}

bool GemmTemplateKernel::accepts(const GemmTemplateArgs& x) const {
  if (spec_.config.family != GemmFamily::wgmma) return true;
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
  KILN_INTERNAL_CHECK(x.workspace_bytes >= workspace_bytes(x.m, x.n) && (c.split_k == 1 || x.workspace), "{}: workspace",
                      what);
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
  cuda::launch(stream, *main_, config, map_a, map_b, out, bias, res, ws, m, n, k, ldc, ldr, k_split);
  launch_reduce(stream, x);
}

void GemmTemplateKernel::launch_reduce(const Stream& stream, const GemmTemplateArgs& x) const {
  if (spec_.config.split_k == 1) return;
  CUdeviceptr ws = x.workspace, out = x.c, bias = x.bias, res = x.residual;
  long long m = x.m, n = x.n, ldc = x.ldc, ldr = x.ldr;
  LaunchConfig reduce;
  reduce.grid.x = unsigned(std::min<int64_t>(ceil_div(x.m * x.n, kGemmReduceThreads), 4096));
  reduce.block.x = kGemmReduceThreads;
  cuda::launch(stream, *reduce_, reduce, ws, out, bias, res, m, n, ldc, ldr);
}

}  // namespace kiln::backend::cuda
