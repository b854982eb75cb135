// Vertical fusion of pointwise chains: a node whose only use is an elementwise consumer of the same
// output shape is inlined into that consumer; each group of two or more nodes becomes one generated
// kernel (loops::PointwiseKernel). Everything else stays a node run by its eager kernel.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "loops/pointwise.h"

namespace kiln::schedule {

struct SymbolSource {
  int input;  // which group input carries the symbol's size at run time
  int dim;    // in which dimension
};

struct PointwiseGroup {
  std::vector<NodeId> nodes;     // in topological order; the last one makes `output`
  std::vector<ValueId> inputs;   // external inputs, in kernel input order
  ValueId output = kNoValue;
  loops::PointwiseKernel kernel;
  std::vector<SymbolSource> symbols;  // in kernel_symbols(kernel) order
};

// Groups of two or more fusible nodes, in topological order of their outputs. A node belongs to at
// most one group. Graph outputs and values with other uses are never inlined.
std::vector<PointwiseGroup> find_pointwise_groups(const Graph& g);

}  // namespace kiln::schedule
