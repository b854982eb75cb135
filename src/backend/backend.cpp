#include "backend/backend.h"

#include <chrono>
#include <cstring>

#include "support/error.h"

namespace kiln::backend {
namespace {

// The host's mark: its clock when mark() was called (host kernels have finished when launch returns).
struct HostMark final : DeviceRuntime::Mark {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();
};

}  // namespace

void DeviceRuntime::copy_into(const Tensor& from, Tensor& to) const {
  KILN_INTERNAL_CHECK(from.device().is_host() && to.device().is_host() && from.dtype() == to.dtype() &&
                          from.shape() == to.shape(),
                      "copy_into: {} {} to {} {}", device_string(from.device()), from.shape_string(),
                      device_string(to.device()), to.shape_string());
  if (from.nbytes() > 0) std::memcpy(to.raw(), from.raw(), from.nbytes());
}

void DeviceRuntime::begin_capture() const { internal_error("begin_capture: this runtime does not capture"); }
std::shared_ptr<const void> DeviceRuntime::end_capture() const {
  internal_error("end_capture: this runtime does not capture");
}
void DeviceRuntime::replay(const void*) const { internal_error("replay: this runtime does not capture"); }

std::unique_ptr<DeviceRuntime::Mark> DeviceRuntime::mark() const { return std::make_unique<HostMark>(); }

double DeviceRuntime::elapsed_ms(const Mark& from, const Mark& to) const {
  const auto* a = dynamic_cast<const HostMark*>(&from);
  const auto* b = dynamic_cast<const HostMark*>(&to);
  KILN_INTERNAL_CHECK(a && b, "elapsed_ms: a mark of another runtime");
  return std::chrono::duration<double, std::milli>(b->at - a->at).count();
}

}  // namespace kiln::backend
