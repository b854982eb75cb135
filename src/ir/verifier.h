// Structural checks of a graph, run after import and after passes: a failure is a kiln bug.
#pragma once
#include <string_view>

#include "kiln/graph.h"

namespace kiln {

// Checks: value ids in range; each value produced by at most one node and its producer field agrees;
// nodes in topological order (every input is a graph input, a constant or an earlier node's output);
// graph inputs are neither produced nor listed twice; graph outputs are defined; constants are not
// produced by nodes and hold a tensor that matches their declared type (when it is known; a symbolic
// or unknown dim matches any size).
// Throws InternalError("after pass '<after_pass>': node 'n' (Op) #i: ...") on the first violation.
void verify_graph(const Graph& g, std::string_view after_pass);

}  // namespace kiln
