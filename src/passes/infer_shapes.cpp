#include "ops/registry.h"
#include "passes/passes.h"

namespace kiln {

int infer_shapes(Graph& g, const Options& options, bool fold) {
  int folded = 0;
  int fresh = first_fresh_symbol(g);  // keep fresh symbols distinct from any already in the graph

  for (ValueId id : g.inputs) {
    const TensorType& t = g.value(id).type;
    if (t.rank() > options.max_rank)
      user_error("graph input '{}' has rank {} (max_rank is {})", g.value(id).name, t.rank(), options.max_rank);
  }
  for (Node& n : g.nodes) {
    infer_node_types(g, n, &fresh, options.max_rank);
    if (fold && fold_node(g, n, options)) ++folded;
  }
  if (folded) g.remove_dead();
  return folded;
}

}  // namespace kiln
