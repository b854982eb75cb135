#include "ops/linalg/linalg_ops.h"

namespace kiln {

void register_linalg_ops(OpRegistry& r) {
  linalg_ops::register_matmul_ops(r);
  linalg_ops::register_conv_ops(r);
  linalg_ops::register_pool_ops(r);
  linalg_ops::register_resize_op(r);
}

}  // namespace kiln
