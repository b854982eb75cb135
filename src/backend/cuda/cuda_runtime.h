// The CUDA backend's DeviceRuntime: one GPU's primary context and one stream that every launch of a
// session is ordered on; arenas and kernel outputs from the device's stream-ordered pool; copies
// between host and device tensors on that stream.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/cuda_objects.h"
#include "kiln/options.h"

namespace kiln::backend::cuda {

class ChoiceStore;
class DeviceOps;

class CudaRuntime final : public DeviceRuntime {
 public:
  // No usable GPU or driver: a UserError naming what is missing. `options` locate the cubin cache.
  CudaRuntime(int device_index, const Options& options);
  ~CudaRuntime() override;

  std::shared_ptr<void> allocate(int64_t bytes) const override;
  kiln::Device device() const override { return {kiln::Device::Kind::cuda, info().index}; }
  backend::Stream stream() const override { return {stream_.handle()}; }
  Tensor upload(const Tensor& t) const override;
  Tensor download(const Tensor& t) const override;
  // Also reports what the device ops recorded (an out-of-range Gather index) as a user error.
  void synchronize() const override;
  void copy_into(const Tensor& from, Tensor& to) const override;

  // CUDA graphs: stream capture in relaxed mode; while capturing, allocate() takes plain cuMemAlloc
  // memory that the graph owns (kernels' outputs and scratch keep fixed addresses across replays).
  bool can_capture() const override { return true; }
  void begin_capture() const override;
  std::shared_ptr<const void> end_capture() const override;
  void abort_capture() const noexcept override;
  void replay(const void* graph) const override;
  bool capturing() const { return capturing_ != nullptr; }

  // A choice measured once (the fastest cuBLASLt algorithm of a problem, a GEMM template or the library):
  // the remembered answer, else the tuning store's (cuda_choice_store.h) where `valid` takes it (a file
  // this build did not write may hold any number), else `measure()`'s, which is then stored; under
  // require_cached, `fallback` instead of a measurement. `stored` (if given) says whether the answer came
  // from the store.
  int measured_choice(const std::string& key, const std::function<int()>& measure,
                      const std::function<bool(int)>& valid, int fallback, bool* stored = nullptr) const;

  // Timing with events on the stream (cuEventRecord; cuEventElapsedTime after synchronize; cuda_timing.cpp).
  // Marking while the stream is being captured is an InternalError: the event would be a node of the graph.
  std::unique_ptr<Mark> mark() const override;
  double elapsed_ms(const Mark& from, const Mark& to) const override;
  bool device_clock() const override { return true; }
  struct EventPool;  // cuda_timing.cpp
  static std::shared_ptr<EventPool> make_event_pool(const Context& context);

  // An uninitialised device tensor (the output of a kernel that has no planned buffer).
  Tensor empty(DType dtype, const std::vector<int64_t>& shape) const;
  const Context& context() const { return context_; }
  const cuda::Stream& cuda_stream() const { return stream_; }
  const DeviceInfo& info() const { return context_.device(); }
  // The hand-written kernels (device_ops.h), compiled on first use through the cubin cache.
  const DeviceOps& device_ops() const;

 private:
  Context context_;
  cuda::Stream stream_;
  Options cache_options_;
  struct Capture;
  mutable std::shared_ptr<Capture> capturing_;  // set between begin_capture and end_capture
  std::shared_ptr<EventPool> events_;  // timing events marks give back, so a profiled run creates none
  mutable std::mutex choices_mutex_;
  mutable std::map<std::string, int> choices_;
  mutable std::unique_ptr<ChoiceStore> choice_store_;  // opened on the first choice not remembered
  mutable std::once_flag ops_once_;
  mutable std::unique_ptr<DeviceOps> ops_;
};

// A device tensor's address, as the driver takes it.
inline CUdeviceptr device_ptr(const Tensor& t) { return reinterpret_cast<CUdeviceptr>(t.raw()); }

}  // namespace kiln::backend::cuda
