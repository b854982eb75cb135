#include "backend/backend.h"

#include <cstring>

#include "support/error.h"

namespace kiln::backend {

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

}  // namespace kiln::backend
