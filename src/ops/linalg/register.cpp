#include "ops/linalg/linalg_ops.h"

namespace kiln {

void register_linalg_ops(OpRegistry& r) {
  linalg_ops::register_matmul_ops(r);
  linalg_ops::register_matmul_integer_ops(r);
  linalg_ops::register_conv_ops(r);
  linalg_ops::register_pool_ops(r);
  linalg_ops::register_resize_op(r);
  linalg_ops::register_nms_op(r);
  linalg_ops::register_det_op(r);
  linalg_ops::register_grid_sample_op(r);
  linalg_ops::register_spectral_ops(r);
  linalg_ops::register_roi_align_op(r);
}

}  // namespace kiln
