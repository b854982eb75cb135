// The GPU fixture of the DeviceOps tests (device_ops_test.cpp, device_ops_window_test.cpp): a context,
// a stream and a DeviceOps on the probed GPU, and device buffers with guard bytes after them (and
// pre-filled with a pattern), so a write past the end or a missed element shows.
#pragma once
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "backend/cuda/device_ops.h"
#include "cuda_test_util.h"

namespace kiln::backend::cuda::testing {

using Bytes = std::vector<unsigned char>;

inline constexpr size_t kGuard = 64;
inline constexpr unsigned char kPattern = 0xA5;

class DeviceOpsTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    device_.emplace(probe_.device);
    context_.emplace(*device_);
    stream_.emplace(*context_);
    ops_.emplace(*context_);
  }

  const Stream& stream() const { return *stream_; }
  const DeviceOps& ops() const { return *ops_; }

  // A device buffer holding `bytes` (placed `offset` bytes into it, to test unaligned views) and then
  // kGuard pattern bytes.
  struct Buffer {
    DeviceBuffer memory;
    size_t offset = 0, bytes = 0;
    CUdeviceptr ptr() const { return memory.ptr() + offset; }
  };

  Buffer upload(const Bytes& data, size_t offset = 0) const {
    Buffer b{DeviceBuffer(stream(), offset + data.size() + kGuard), offset, data.size()};
    PinnedBuffer host(*context_, b.memory.bytes());
    auto* p = static_cast<unsigned char*>(host.data());
    std::memset(p, kPattern, host.bytes());
    if (!data.empty()) std::memcpy(p + offset, data.data(), data.size());
    copy_to_device(stream(), b.memory, host, host.bytes());
    stream().synchronize();
    return b;
  }
  Buffer output(size_t bytes, size_t offset = 0) const { return upload(Bytes(bytes, kPattern), offset); }

  // The payload; fails the test if a guard byte (or a byte before an offset view) changed.
  Bytes download(const Buffer& b) const {
    PinnedBuffer host(*context_, b.memory.bytes());
    copy_to_host(stream(), host, b.memory, host.bytes());
    stream().synchronize();
    const auto* p = static_cast<const unsigned char*>(host.data());
    for (size_t i = 0; i < host.bytes(); ++i)
      if (i < b.offset || i >= b.offset + b.bytes) {
        EXPECT_EQ(p[i], kPattern) << "guard byte " << i << " of a " << b.bytes << "-byte output overwritten";
        if (p[i] != kPattern) break;
      }
    return Bytes(p + b.offset, p + b.offset + b.bytes);
  }

  std::optional<Device> device_;
  std::optional<Context> context_;
  std::optional<Stream> stream_;
  std::optional<DeviceOps> ops_;
  std::mt19937 random_{1234};
};

}  // namespace kiln::backend::cuda::testing
