// Inputs for a model the user did not give: drawn from a seed, shaped as the graph says.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "kiln/graph.h"

namespace kiln {

// For each graph input not in `given`: integer ids in [0, rows) when the input indexes a constant
// table through Gather (token ids), ones for inputs named like a mask, small non-negative integers
// otherwise; floats from a standard normal; bools at random. Every dim must be static (bind first).
std::map<std::string, Tensor> make_inputs(const Graph& g, const std::map<std::string, Tensor>& given, uint64_t seed);

// Sizes for the symbolic dims of the graph's inputs: from `dims`, given tensors, then size hints. A given
// tensor of the wrong rank or static size, a size given two different ways, and a symbol left without a
// size are user errors that name the input.
std::map<std::string, int64_t> resolve_dims(const Graph& g, const std::map<std::string, Tensor>& given,
                                            std::map<std::string, int64_t> dims);

// A user error for a size given to a symbol that no graph input has (a misspelt --dim), naming those
// the inputs have.
void check_dims_known(const Graph& g, const std::map<std::string, int64_t>& dims);

}  // namespace kiln
