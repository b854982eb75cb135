// The reduction family: softmax, normalisations, Reduce*, ArgMax/ArgMin.
#include "ops/reduction/reduction_common.h"

namespace kiln {

void register_reduction_ops(OpRegistry& r) {
  register_softmax_ops(r);
  register_layernorm_op(r);
  register_batchnorm_op(r);
  register_reduce_ops(r);
  register_argminmax_ops(r);
}

}  // namespace kiln
