#include "ops/control/control_ops.h"

namespace kiln {

void register_control_ops(OpRegistry& r) {
  register_if_op(r);
  register_loop_op(r);
  register_scan_op(r);
}

}  // namespace kiln
