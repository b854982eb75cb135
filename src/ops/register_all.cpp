// The registry of every op kiln implements. Kept out of registry.cpp (OpRegistry itself), so that a
// program that registers only some families into an OpRegistry of its own (the CUDA tests' fp64
// reference: the elementwise ops and Transpose) links none of the other families' kernels, nor the vendor
// libraries behind them.
#include "ops/registry.h"

namespace kiln {

const OpRegistry& op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_all_ops(r);
    return r;
  }();
  return registry;
}

void register_all_ops(OpRegistry& r) {
  register_elementwise_ops(r);
  register_shape_ops(r);
  register_reduction_ops(r);
  register_linalg_ops(r);
  register_control_ops(r);
}

}  // namespace kiln
