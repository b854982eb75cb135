// A Cast node for the passes that insert conversions (narrow_floats, widen_half_products).
#pragma once

#include <string>
#include <utility>

#include "kiln/graph.h"

namespace kiln {

inline Node cast_node(ValueId from, ValueId to, DType dtype, std::string name) {
  Node n;
  n.op = OpKind::Cast;
  n.name = std::move(name);
  n.inputs = {from};
  n.outputs = {to};
  n.attrs["to"] = Attribute{std::string(dtype_name(dtype))};
  return n;
}

}  // namespace kiln
