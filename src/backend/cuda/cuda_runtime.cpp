#include "backend/cuda/cuda_runtime.h"

#include <fmt/format.h>

#include "backend/cuda/cubin_cache.h"
#include "backend/cuda/cublaslt.h"
#include "backend/cuda/cuda_choice_store.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/device_ops.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::backend::cuda {

CudaRuntime::CudaRuntime(int device_index, const Options& options)
    : context_(cuda::Device(device_index)), stream_(context_, options.cuda_overlap_launches), cache_options_(options),
      events_(make_event_pool(context_)) {}
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

// A captured graph and the memory allocated while it was recorded (its kernels' fixed addresses).
struct CudaRuntime::Capture {
  Context context;
  std::vector<CUdeviceptr> memory;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;

  explicit Capture(const Context& c) : context(c) {}
  ~Capture() {
    if (!context.try_make_current()) return;
    if (exec) driver().cuGraphExecDestroy(exec);
    if (graph) driver().cuGraphDestroy(graph);
    for (CUdeviceptr p : memory) driver().cuMemFree(p);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
};

void CudaRuntime::begin_capture() const {
  KILN_INTERNAL_CHECK(!capturing_, "begin_capture: a capture is already in progress");
  context_.make_current();
  auto capture = std::make_shared<Capture>(context_);
  // Relaxed: cuMemAlloc (and cuBLASLt's host-side calls) may run while the stream records.
  check(driver().cuStreamBeginCapture(stream_.handle(), CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
  capturing_ = std::move(capture);
}

std::shared_ptr<const void> CudaRuntime::end_capture() const {
  KILN_INTERNAL_CHECK(capturing_, "end_capture without begin_capture");
  std::shared_ptr<Capture> capture = std::move(capturing_);
  capturing_.reset();
  context_.make_current();
  check(driver().cuStreamEndCapture(stream_.handle(), &capture->graph), "cuStreamEndCapture");
  check(driver().cuGraphInstantiateWithFlags(&capture->exec, capture->graph, 0), "cuGraphInstantiateWithFlags");
  return capture;
}

void CudaRuntime::abort_capture() const noexcept {
  if (!capturing_) return;
  std::shared_ptr<Capture> capture = std::move(capturing_);
  capturing_.reset();
  if (context_.try_make_current()) driver().cuStreamEndCapture(stream_.handle(), &capture->graph);
}

void CudaRuntime::replay(const void* graph) const {
  context_.make_current();
  check(driver().cuGraphLaunch(static_cast<const Capture*>(graph)->exec, stream_.handle()), "cuGraphLaunch");
}

int CudaRuntime::measured_choice(const std::string& key, const std::function<int()>& measure,
                                 const std::function<bool(int)>& valid, int fallback, bool* stored) const {
  if (stored) *stored = false;
  {
    std::lock_guard lock(choices_mutex_);
    if (auto it = choices_.find(key); it != choices_.end()) return it->second;
    if (!choice_store_) {
      std::string libraries = "cublaslt none";
      if (cublaslt_available()) libraries = fmt::format("cublaslt {}", cublaslt().version);
      choice_store_ = std::make_unique<ChoiceStore>(cache_options_, info(), driver().driver_version, libraries);
    }
    if (std::optional<int> c = choice_store_->lookup(key); c && valid(*c)) {
      if (stored) *stored = true;
      return choices_.emplace(key, *c).first->second;
    }
    if (cache_options_.require_cached) return choices_.emplace(key, fallback).first->second;  // never a benchmark
  }
  const int choice = measure();  // unlocked: it runs work on the stream (two threads may both measure)
  std::lock_guard lock(choices_mutex_);
  choice_store_->store(key, choice);
  return choices_.emplace(key, choice).first->second;
}

void CudaRuntime::copy_into(const Tensor& from, Tensor& to) const {
  KILN_INTERNAL_CHECK(to.device() == device() && from.dtype() == to.dtype() && from.shape() == to.shape() &&
                          (from.device().is_host() || from.device() == device()),
                      "copy_into: {} {} to {} {}", device_string(from.device()), from.shape_string(),
                      device_string(to.device()), to.shape_string());
  if (from.nbytes() == 0) return;
  context_.make_current();
  if (from.device().is_host())
    check(driver().cuMemcpyHtoDAsync(device_ptr(to), from.raw(), from.nbytes(), stream_.handle()), "cuMemcpyHtoDAsync");
  else
    check(driver().cuMemcpyDtoDAsync(device_ptr(to), device_ptr(from), from.nbytes(), stream_.handle()),
          "cuMemcpyDtoDAsync");
}

std::shared_ptr<void> CudaRuntime::allocate(int64_t bytes) const {
  if (capturing_) {  // the graph's own memory: fixed addresses, freed with the graph
    CUdeviceptr p = 0;
    if (bytes > 0) {
      context_.make_current();
      check(driver().cuMemAlloc(&p, static_cast<size_t>(bytes)), fmt::format("cuMemAlloc({} bytes)", bytes));
      capturing_->memory.push_back(p);
    }
    return std::shared_ptr<void>(capturing_, reinterpret_cast<void*>(p));
  }
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
