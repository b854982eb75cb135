// Host-side pieces the Hopper kernels share (cuda_hopper.h).
#include "backend/cuda/cuda_hopper.h"

#include <fmt/format.h>

#include "backend/cuda/cuda_driver.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

using FuncSetAttribute = CUresult (*)(CUfunction, CUfunction_attribute, int);
using TensorMapEncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                          const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
                                          CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                          CUtensorMapFloatOOBfill);

}  // namespace

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

void allow_dynamic_shared(const Context& context, const Function& function, size_t bytes) {
  if (bytes <= 48 * 1024) return;
  static const auto set = reinterpret_cast<FuncSetAttribute>(driver_entry("cuFuncSetAttribute"));
  context.make_current();
  check(set(function.handle(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes)),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

bool tensor_map_takes(CUdeviceptr data, const std::vector<TensorMapDim>& dims) {
  if (data % 16 != 0 || dims.empty() || dims.size() > 5) return false;
  for (size_t i = 0; i < dims.size(); ++i) {
    const TensorMapDim& d = dims[i];
    if (d.size < 1 || d.size > (int64_t{1} << 31) || d.box < 1 || d.box > 256) return false;
    if (i > 0 && (d.byte_stride % 16 != 0 || d.byte_stride <= 0 || d.byte_stride >= (int64_t{1} << 40))) return false;
  }
  return true;
}

CUtensorMap half_tensor_map(DType dtype, CUdeviceptr data, const std::vector<TensorMapDim>& dims) {
  static const auto encode = reinterpret_cast<TensorMapEncodeTiled>(driver_entry("cuTensorMapEncodeTiled"));
  KILN_INTERNAL_CHECK(dtype == DType::bf16 || dtype == DType::f16, "tensor map of {}", dtype_name(dtype));
  KILN_INTERNAL_CHECK(tensor_map_takes(data, dims), "tensor map: bounds or alignment the TMA refuses");
  cuuint64_t sizes[5], strides[4];
  cuuint32_t box[5], element_strides[5];
  std::string shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    sizes[i] = cuuint64_t(dims[i].size);
    if (i > 0) strides[i - 1] = cuuint64_t(dims[i].byte_stride);
    box[i] = dims[i].box;
    element_strides[i] = 1;
    shape += fmt::format("{}{}", i ? "," : "", dims[i].size);
  }
  CUtensorMap map;
  const CUresult r = encode(&map, dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                            cuuint32_t(dims.size()), reinterpret_cast<void*>(data), sizes, strides, box,
                            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  KILN_INTERNAL_CHECK(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled of [{}] (innermost first): {}", shape,
                      describe_result(driver(), r));
  return map;
}

}  // namespace kiln::backend::cuda
