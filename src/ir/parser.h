// Reads the IR text form written by print_graph (format: ir/printer.h) back into a Graph.
#pragma once
#include <string_view>

#include "kiln/graph.h"

namespace kiln {

// A hand-written recursive-descent parser without recursion on input structure, so any text is safe.
// Every error is a UserError that starts with "IR text LINE:COL:". It rejects unknown ops and dtypes,
// duplicate value names, uses before definition, and constants that were printed elided.
Graph parse_graph(std::string_view text);

}  // namespace kiln
