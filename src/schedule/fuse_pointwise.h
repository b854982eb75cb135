// Vertical fusion of pointwise chains: a node whose uses are all elementwise consumers of the same
// output shape (or Transposes) in one group is inlined into that group; each group of two or more
// nodes becomes one generated kernel (loops::PointwiseKernel), reading transposed and broadcast
// operands by index. Everything else stays a node run by its eager kernel.
#pragma once
#include <string>
#include <vector>

#include "kiln/graph.h"
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

// Where each of a kernel's size symbols is read at run time: the first input dimension carrying it.
// False if some symbol has no source (the group cannot run).
bool find_symbol_sources(const Graph& g, const std::vector<ValueId>& inputs, const std::vector<loops::Expr>& symbols,
                         std::vector<SymbolSource>& sources);

// Groups of at least `min_nodes` fusible nodes (a backend without eager kernels takes lone nodes as
// groups of one), in topological order of their outputs. A node belongs to at
// most one group; nodes with claimed[id] != 0 (taken by another pass) are never used. A value is
// inlined only when every use is inside its group, reads it once per element and it is no graph
// output.
std::vector<PointwiseGroup> find_pointwise_groups(const Graph& g, const std::vector<char>& claimed = {},
                                                  size_t min_nodes = 2);

}  // namespace kiln::schedule
