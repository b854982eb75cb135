// Text form of the graph IR, for debugging output, tests and hand-written graphs. The parser
// (ir/parser.h) reads it back: parse_graph(print_graph(g)) prints identically, as long as no constant
// was elided. Format (one statement a line; `//` starts a comment):
//
//   graph main(%ids: i64[batch~1,seq~128], %mask: i64[batch,seq]) -> (%logits) {
//     const %w: f32[2,2] = [1, 2, 3, 4]
//     group 0 = library "matmul+relu"
//     %y: f32[batch,seq,2] = MatMul(%x, %w) in 0
//     %r: f32[batch,seq,2] = Relu(%y) in 0
//     %a: f32[batch], %b = Split(%r, _) {axis=0, num_outputs=2} @"split/0"
//   }
//
// Names that are not plain identifiers are quoted (%"onnx::MatMul_1"); `_` is an omitted optional
// input or output; a node output without a type has not been inferred yet; `seq~128` is a symbolic dim
// with a size hint; `@name` is the node name, printed only when it is not the default "{Op}_{index}".
// `group N = KIND "LABEL"` declares fusion group N (groups are numbered from 0, in order); `in N` puts
// a node in it (the plan of a compile: Graph::groups).
// Attributes: 3, 0.5 (floats always carry '.', 'e', nan or inf), "text", [1, 2], [0.5, 1.0],
// ["a", "b"], ints[] / floats[] / strings[] when empty, and tensors as `f32[2] [1, 2]`. A subgraph
// (If's branches) prints nested as `graph then(...) -> (...) {...}`, which the parser reads back.
// Constants larger than max_inline_elements print as `<elided N bytes fnv=HEX>`, which the parser
// refuses, or, with PrintOptions::external_data, as `<data N>`: the values are kept outside the text
// (a saved model's data sections) and the parser gets them back from its DataSource.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "kiln/graph.h"

namespace kiln {

struct PrintOptions {
  int64_t max_inline_elements = 16;  // larger constants and tensor attributes are elided...
  bool inline_all = false;           // ...unless this is set (then the text always parses back)
  // Set: a larger tensor is handed to it and printed as `<data N>`, N being what it returned.
  std::function<int64_t(const Tensor&)> external_data;
};

std::string print_graph(const Graph& g, const PrintOptions& options = {});
// One tensor's values as the text form writes them: "[1, 2]" or "<elided N bytes fnv=HEX>".
std::string print_tensor_values(const Tensor& t, const PrintOptions& options = {});

}  // namespace kiln
