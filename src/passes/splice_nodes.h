// The end of a rewriting pass: new nodes put where old ones stood, the old ones and what nothing reads
// any more dropped, the node list kept in topological order.
#pragma once
#include <vector>

#include "kiln/graph.h"

namespace kiln {

// placed[i]: the nodes that go right before node i; dropped[i]: node i goes. Both are indexed by the
// graph's node ids.
inline void splice_nodes(Graph& g, std::vector<std::vector<Node>>& placed, const std::vector<char>& dropped) {
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (Node& n : placed[i]) out.push_back(std::move(n));
    if (!dropped[i]) out.push_back(std::move(g.nodes[i]));
  }
  g.set_nodes(std::move(out));
  g.remove_dead();
}

}  // namespace kiln
