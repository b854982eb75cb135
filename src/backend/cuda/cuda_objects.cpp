#include "backend/cuda/cuda_objects.h"

#include <utility>

#include "backend/cuda/cuda_driver.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

int device_attribute(CUdevice device, CUdevice_attribute attribute, std::string_view what) {
  int value = 0;
  check(driver().cuDeviceGetAttribute(&value, attribute, device), fmt::format("cuDeviceGetAttribute({})", what));
  return value;
}

std::string dim3_text(const Dim3& d) { return fmt::format("{}x{}x{}", d.x, d.y, d.z); }

}  // namespace

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", compute_major, compute_minor); }

std::string DeviceInfo::summary() const {
  return fmt::format("{}: {}, {}, {} SMs, {:.1f} GiB", index, name, arch(), sm_count,
                     static_cast<double>(total_memory) / (1024.0 * 1024.0 * 1024.0));
}

int device_count() {
  int count = 0;
  check(driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

Device::Device(int index) {
  const DriverApi& api = driver();
  int count = device_count();
  KILN_USER_CHECK(index >= 0 && index < count, "device cuda:{}: this machine has {} CUDA device{}", index, count,
                  count == 1 ? "" : "s");
  check(api.cuDeviceGet(&handle_, index), fmt::format("cuDeviceGet({})", index));
  char name[256] = {};
  check(api.cuDeviceGetName(name, sizeof name, handle_), "cuDeviceGetName");
  size_t total = 0;
  check(api.cuDeviceTotalMem(&total, handle_), "cuDeviceTotalMem");
  info_.index = index;
  info_.name = name;
  info_.compute_major = device_attribute(handle_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute major");
  info_.compute_minor = device_attribute(handle_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute minor");
  info_.sm_count = device_attribute(handle_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  info_.total_memory = static_cast<int64_t>(total);
  info_.memory_pools = device_attribute(handle_, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, "memory pools") != 0;
}

// ---- Context ----

struct Context::Retained {
  DeviceInfo device;
  CUdevice handle = 0;
  CUcontext context = nullptr;
  ~Retained() { driver().cuDevicePrimaryCtxRelease(handle); }
};

Context::Context(const Device& device) {
  auto retained = std::make_shared<Retained>();
  retained->device = device.info();
  retained->handle = device.handle();
  check(driver().cuDevicePrimaryCtxRetain(&retained->context, device.handle()),
        fmt::format("cuDevicePrimaryCtxRetain(device {})", device.info().index));
  retained_ = std::move(retained);
  make_current();
}

void Context::make_current() const { check(driver().cuCtxSetCurrent(retained_->context), "cuCtxSetCurrent"); }

bool Context::try_make_current() const noexcept {
  return driver().cuCtxSetCurrent(retained_->context) == CUDA_SUCCESS;
}

const DeviceInfo& Context::device() const { return retained_->device; }

// ---- Stream ----

struct Stream::Owned {
  Context context;
  CUstream handle = nullptr;
  bool overlap_launches = false;
  explicit Owned(const Context& c) : context(c) {}
  ~Owned() {
    if (handle && context.try_make_current()) driver().cuStreamDestroy(handle);
  }
};

Stream::Stream(const Context& context, bool overlap_launches) {
  auto owned = std::make_shared<Owned>(context);
  // Programmatic dependent launch is a Hopper (sm_90) feature.
  owned->overlap_launches = overlap_launches && context.device().compute_major >= 9;
  context.make_current();
  check(driver().cuStreamCreate(&owned->handle, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  owned_ = std::move(owned);
}

CUstream Stream::handle() const { return owned_->handle; }
const Context& Stream::context() const { return owned_->context; }
bool Stream::overlaps_launches() const { return owned_->overlap_launches; }

void Stream::synchronize() const {
  context().make_current();
  check(driver().cuStreamSynchronize(handle()), "cuStreamSynchronize");
}

// ---- DeviceBuffer ----

DeviceBuffer::DeviceBuffer(const Stream& stream, size_t bytes) {
  if (bytes == 0) return;
  stream.context().make_current();
  check(driver().cuMemAllocAsync(&ptr_, bytes, stream.handle()),
        fmt::format("cuMemAllocAsync({} bytes on {})", bytes, stream.context().device().summary()));
  stream_ = stream;
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : stream_(std::move(other.stream_)), ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {
  other.stream_.reset();
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    stream_ = std::move(other.stream_);
    other.stream_.reset();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_ && stream_ && stream_->context().try_make_current()) driver().cuMemFreeAsync(ptr_, stream_->handle());
  stream_.reset();
  ptr_ = 0;
  bytes_ = 0;
}

// ---- PinnedBuffer ----

PinnedBuffer::PinnedBuffer(const Context& context, size_t bytes) {
  if (bytes == 0) return;
  context.make_current();
  check(driver().cuMemHostAlloc(&data_, bytes, 0), fmt::format("cuMemHostAlloc({} bytes)", bytes));
  context_ = context;
  bytes_ = bytes;
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : context_(std::move(other.context_)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {
  other.context_.reset();
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    context_ = std::move(other.context_);
    other.context_.reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  if (data_ && context_ && context_->try_make_current()) driver().cuMemFreeHost(data_);
  context_.reset();
  data_ = nullptr;
  bytes_ = 0;
}

// ---- copies ----

void copy_to_device(const Stream& stream, const DeviceBuffer& dst, const PinnedBuffer& src, size_t bytes) {
  KILN_INTERNAL_CHECK(bytes <= dst.bytes() && bytes <= src.bytes(),
                      "device cuda: copy of {} bytes from a {}-byte pinned buffer to a {}-byte device buffer", bytes,
                      src.bytes(), dst.bytes());
  if (bytes == 0) return;
  stream.context().make_current();
  check(driver().cuMemcpyHtoDAsync(dst.ptr(), src.data(), bytes, stream.handle()),
        fmt::format("cuMemcpyHtoDAsync({} bytes)", bytes));
}

void copy_to_host(const Stream& stream, const PinnedBuffer& dst, const DeviceBuffer& src, size_t bytes) {
  KILN_INTERNAL_CHECK(bytes <= dst.bytes() && bytes <= src.bytes(),
                      "device cuda: copy of {} bytes from a {}-byte device buffer to a {}-byte pinned buffer", bytes,
                      src.bytes(), dst.bytes());
  if (bytes == 0) return;
  stream.context().make_current();
  check(driver().cuMemcpyDtoHAsync(dst.data(), src.ptr(), bytes, stream.handle()),
        fmt::format("cuMemcpyDtoHAsync({} bytes)", bytes));
}

// ---- Module ----

struct Module::Loaded {
  Context context;
  CUmodule handle = nullptr;
  explicit Loaded(const Context& c) : context(c) {}
  ~Loaded() {
    if (handle && context.try_make_current()) driver().cuModuleUnload(handle);
  }
};

Module::Module(const Context& context, std::span<const char> cubin) {
  KILN_INTERNAL_CHECK(!cubin.empty(), "device cuda: a module loaded from an empty image");
  auto loaded = std::make_shared<Loaded>(context);
  context.make_current();
  check(driver().cuModuleLoadData(&loaded->handle, cubin.data()),
        fmt::format("cuModuleLoadData({}-byte image on {})", cubin.size(), context.device().summary()));
  loaded_ = std::move(loaded);
}

Function Module::function(std::string_view name) const {
  std::string n(name);
  CUfunction handle = nullptr;
  loaded_->context.make_current();
  check(driver().cuModuleGetFunction(&handle, loaded_->handle, n.c_str()), fmt::format("cuModuleGetFunction({})", n));
  return Function(loaded_, handle, std::move(n));
}

void launch_kernel(const Stream& stream, const Function& function, const LaunchConfig& config,
                   std::span<void*> parameters) {
  const Dim3& g = config.grid;
  const Dim3& b = config.block;
  stream.context().make_current();
  const auto what = [&] {
    return fmt::format("cuLaunchKernel({}, grid {}, block {}, {} shared bytes)", function.name(), dim3_text(g),
                       dim3_text(b), config.shared_bytes);
  };
  if (!(config.waits_for_prior_grids && stream.overlaps_launches())) {
    check(driver().cuLaunchKernel(function.handle(), g.x, g.y, g.z, b.x, b.y, b.z, config.shared_bytes,
                                  stream.handle(), parameters.data(), nullptr),
          what());
    return;
  }
  // A programmatic dependent: it may start before the kernel ahead of it on the stream ends (in a
  // captured graph too: capture keeps the attribute as a programmatic edge).
  CUlaunchAttribute overlap{};
  overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  overlap.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig launch{};
  launch.gridDimX = g.x;
  launch.gridDimY = g.y;
  launch.gridDimZ = g.z;
  launch.blockDimX = b.x;
  launch.blockDimY = b.y;
  launch.blockDimZ = b.z;
  launch.sharedMemBytes = config.shared_bytes;
  launch.hStream = stream.handle();
  launch.attrs = &overlap;
  launch.numAttrs = 1;
  check(driver().cuLaunchKernelEx(&launch, function.handle(), parameters.data(), nullptr), what());
}

}  // namespace kiln::backend::cuda
