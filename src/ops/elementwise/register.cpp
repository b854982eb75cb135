#include "ops/elementwise/elementwise.h"

namespace kiln {

void register_elementwise_ops(OpRegistry& r) {
  elementwise::register_unary_math_ops(r);
  elementwise::register_unary_activation_ops(r);
  elementwise::register_unary_logic_ops(r);
  elementwise::register_cast_op(r);
  elementwise::register_arithmetic_ops(r);
  elementwise::register_compare_ops(r);
  elementwise::register_variadic_ops(r);
}

}  // namespace kiln
