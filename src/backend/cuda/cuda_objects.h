// RAII owners of the driver's objects: a device, its primary context, streams, stream-ordered device
// buffers, pinned host buffers, modules loaded from a cubin and their kernels. Each owner keeps what it
// depends on alive (a buffer its stream, a stream its context), so destruction order never matters.
// Every call checks its CUresult (cuda_driver.h's check); destructors cannot throw and ignore failures.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace kiln::backend::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;  // "NVIDIA H200"
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  int64_t total_memory = 0;  // bytes
  bool memory_pools = false;  // stream-ordered allocation (cuMemAllocAsync) is supported

  std::string arch() const;  // "sm_90": NVRTC's --gpu-architecture for this device's own code
  std::string summary() const;  // "0: NVIDIA H200, sm_90, 132 SMs, 139.8 GiB"
};

int device_count();  // 0 is possible only in theory: cuInit fails without a device

class Device {
 public:
  explicit Device(int index);  // an index past device_count() is a UserError
  CUdevice handle() const { return handle_; }
  const DeviceInfo& info() const { return info_; }

 private:
  CUdevice handle_ = 0;
  DeviceInfo info_;
};

// The device's primary context (the one the CUDA runtime shares), retained while any copy lives. Every
// object below makes it current on the calling thread before its driver calls, so any thread may use them.
class Context {
 public:
  explicit Context(const Device& device);
  void make_current() const;
  bool try_make_current() const noexcept;  // for destructors, which cannot throw
  const DeviceInfo& device() const;

 private:
  struct Retained;
  std::shared_ptr<const Retained> retained_;
};

// A non-blocking stream (no implicit synchronisation with the legacy default stream). Copies share it.
class Stream {
 public:
  // overlap_launches: kernels launched with LaunchConfig::waits_for_prior_grids become programmatic
  // dependents of the kernel before them (setting cuda_overlap_launches; ignored before sm_90).
  explicit Stream(const Context& context, bool overlap_launches = false);
  CUstream handle() const;
  const Context& context() const;
  void synchronize() const;  // also where a kernel's asynchronous fault is reported
  bool overlaps_launches() const;

 private:
  struct Owned;
  std::shared_ptr<const Owned> owned_;
};

// Device memory from the device's stream-ordered pool (cuMemAllocAsync), freed on the same stream after
// the work queued before the free. Work on another stream must be ordered after the allocation (and the
// free after that work) by the caller. Zero bytes holds no allocation (ptr() == 0).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const Stream& stream, size_t bytes);  // out of memory: a UserError with the driver's message
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  std::optional<Stream> stream_;  // empty with no allocation
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory (cuMemHostAlloc), the staging side of asynchronous copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const Context& context, size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  std::span<T> as() const {
    return {static_cast<T*>(data_), bytes_ / sizeof(T)};
  }

 private:
  void release() noexcept;
  std::optional<Context> context_;  // empty with no allocation
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Asynchronous copies of the first `bytes` of each buffer on `stream`; more than either holds is an
// InternalError. The host side must stay untouched until the stream is synchronised.
void copy_to_device(const Stream& stream, const DeviceBuffer& dst, const PinnedBuffer& src, size_t bytes);
void copy_to_host(const Stream& stream, const PinnedBuffer& dst, const DeviceBuffer& src, size_t bytes);

class Module;

// A kernel of a loaded module; keeps the module loaded.
class Function {
 public:
  CUfunction handle() const { return handle_; }
  const std::string& name() const { return name_; }

 private:
  friend class Module;
  Function(std::shared_ptr<const void> module, CUfunction handle, std::string name)
      : module_(std::move(module)), handle_(handle), name_(std::move(name)) {}
  std::shared_ptr<const void> module_;
  CUfunction handle_ = nullptr;
  std::string name_;
};

// A module loaded from a cubin image (NVRTC's output). Copies share it; it is unloaded with the last
// copy and the last Function taken from it.
class Module {
 public:
  Module(const Context& context, std::span<const char> cubin);
  // The kernel named `name` (an extern "C" name, or a lowered one); a missing kernel is an InternalError.
  Function function(std::string_view name) const;

 private:
  struct Loaded;
  std::shared_ptr<const Loaded> loaded_;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned shared_bytes = 0;  // dynamic shared memory
  // The kernel calls kiln_grid_prologue() (cuda_scalar_preamble) before it touches memory, so on a stream
  // that overlaps launches it may start while the kernel before it is still running. Never set it for a
  // kernel without that call: it would read its inputs before they are written.
  bool waits_for_prior_grids = false;
};

// cuLaunchKernel with one pointer per parameter, in the kernel's parameter order.
void launch_kernel(const Stream& stream, const Function& function, const LaunchConfig& config,
                   std::span<void*> parameters);

// Typed form: each argument is passed by value as the kernel's parameter of the same type (a CUdeviceptr
// for a pointer parameter).
template <class... Args>
void launch(const Stream& stream, const Function& function, const LaunchConfig& config, const Args&... args) {
  static_assert((std::is_trivially_copyable_v<Args> && ...), "kernel arguments are copied bytewise");
  void* parameters[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
  launch_kernel(stream, function, config, std::span<void*>(parameters, sizeof...(Args)));
}

}  // namespace kiln::backend::cuda
