#include "backend/cuda/cuda_runtime.h"

#include <fmt/format.h>

#include "backend/cuda/cubin_cache.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/device_ops.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::backend::cuda {

CudaRuntime::CudaRuntime(int device_index, const Options& options)
    : context_(cuda::Device(device_index)), stream_(context_), cache_options_(options) {}
CudaRuntime::~CudaRuntime() = default;

const DeviceOps& CudaRuntime::device_ops() const {
  std::call_once(ops_once_, [&] {
    ops_ = std::make_unique<DeviceOps>(context_, [this](std::string_view name, std::string_view code) {
      return compile_cubins({{std::string(name), std::string(code)}}, compile_arch(info()), cache_options_).cubins[0];
    });
  });
  return *ops_;
}

void CudaRuntime::synchronize() const {
  stream_.synchronize();
  if (ops_) ops_->check_errors(stream_);
}

std::shared_ptr<void> CudaRuntime::allocate(int64_t bytes) const {
  // The pool's allocations are 256-byte aligned, more than the 64 the arena's offsets assume.
  auto buffer = std::make_shared<DeviceBuffer>(stream_, static_cast<size_t>(bytes));
  void* base = reinterpret_cast<void*>(buffer->ptr());
  return std::shared_ptr<void>(buffer, base);
}

Tensor CudaRuntime::empty(DType dtype, const std::vector<int64_t>& shape) const {
  const int64_t bytes = checked_mul(checked_numel(shape, "a device tensor"), static_cast<int64_t>(dtype_size(dtype)),
                                    "a device tensor");
  std::shared_ptr<void> memory = allocate(bytes);
  void* data = memory.get();
  return Tensor::wrap(dtype, shape, std::move(memory), data, device());
}

Tensor CudaRuntime::upload(const Tensor& t) const {
  if (t.device() == device()) return t;
  KILN_INTERNAL_CHECK(t.device().is_host(), "upload: a tensor on {} to {}", device_string(t.device()),
                      device_string(device()));
  Tensor d = empty(t.dtype(), t.shape());
  if (t.nbytes() == 0) return d;
  context_.make_current();
  // From pageable memory the driver stages the bytes before it returns: `t` may go away right after.
  check(driver().cuMemcpyHtoDAsync(device_ptr(d), t.raw(), t.nbytes(), stream_.handle()),
        fmt::format("cuMemcpyHtoDAsync({} bytes)", t.nbytes()));
  return d;
}

Tensor CudaRuntime::download(const Tensor& t) const {
  if (t.device().is_host()) return t;
  KILN_INTERNAL_CHECK(t.device() == device(), "download: a tensor on {} from {}", device_string(t.device()),
                      device_string(device()));
  Tensor h = Tensor::empty(t.dtype(), t.shape());
  if (t.nbytes() == 0) return h;
  context_.make_current();
  check(driver().cuMemcpyDtoHAsync(h.raw(), device_ptr(t), t.nbytes(), stream_.handle()),
        fmt::format("cuMemcpyDtoHAsync({} bytes)", t.nbytes()));
  stream_.synchronize();
  return h;
}

}  // namespace kiln::backend::cuda
