#include "ops/shape/shape_ops.h"

namespace kiln {

void register_shape_ops(OpRegistry& r) {
  shape_ops::register_view_ops(r);
  shape_ops::register_transpose_op(r);
  shape_ops::register_concat_split_ops(r);
  shape_ops::register_slice_op(r);
  shape_ops::register_gather_ops(r);
  shape_ops::register_broadcast_ops(r);
  shape_ops::register_pad_trilu_ops(r);
  shape_ops::register_generator_ops(r);
  shape_ops::register_scatter_scan_ops(r);
  shape_ops::register_select_ops(r);
  shape_ops::register_unique_op(r);
  shape_ops::register_tfidf_op(r);
  shape_ops::register_dropout_op(r);
}

}  // namespace kiln
