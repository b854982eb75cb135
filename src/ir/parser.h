// Reads the IR text form written by print_graph (format: ir/printer.h) back into a Graph.
#pragma once
#include <cstdint>
#include <functional>
#include <string_view>

#include "kiln/graph.h"

namespace kiln {

// A hand-written recursive-descent parser without recursion on input structure, so any text is safe.
// Every error is a UserError that starts with "IR text LINE:COL:". It rejects unknown ops and dtypes,
// duplicate value names, uses before definition, and constants that were printed elided.
Graph parse_graph(std::string_view text);

// The values of `<data N>` (printer.h, PrintOptions::external_data) as a tensor of `type` (static);
// a bad index or a size that does not fit is a UserError.
using DataSource = std::function<Tensor(int64_t index, const TensorType& type)>;
// The same, reading `<data N>` from `data` (without one, `<data N>` is an error like an elided constant).
Graph parse_graph(std::string_view text, const DataSource& data);

}  // namespace kiln
