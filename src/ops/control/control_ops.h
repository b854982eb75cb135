// The control-flow op family: nodes that hold subgraphs and run them node by node (each op in its file).
#pragma once
#include "ops/registry.h"

namespace kiln {

void register_if_op(OpRegistry& r);    // If (if_op.cpp)
void register_loop_op(OpRegistry& r);  // Loop (loop_op.cpp)
void register_scan_op(OpRegistry& r);  // Scan (scan_op.cpp)

}  // namespace kiln
