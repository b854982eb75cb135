// Decompositions: ops the fusion passes do not know, rewritten into ones they do, before scheduling.
//
// The rules are data, one a line (decompositions.cpp):
//     HardSwish(x) = Mul(x, Max(Min(Add(Mul(x, 0.16666666666666666), 0.5), 1), 0))
//     LeakyRelu(x; alpha=0.01) = Where(Less(x, 0), Mul(x, alpha), x)
// Parameters name the node's inputs in order; `name=default` after the semicolon reads a float
// attribute; numbers and attributes become scalar constants of the first input's dtype. A rule
// applies to float nodes (f32, f64) whose inputs are all present and match its parameters; anything
// else keeps its eager kernel. Each rule is the base lowering of its op in a LoweringTable, so a
// backend may override it.
#pragma once
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "lower/lowering_table.h"

namespace kiln::lower {

struct Term {
  enum class Kind { param, attr, number, call } kind = Kind::number;
  int index = -1;      // param: which input; attr: which attribute of the rule
  double value = 0.0;  // number
  OpKind op{};         // call
  std::vector<Term> args;
};

struct DecompositionRule {
  OpKind op{};
  std::vector<std::string> params;
  std::vector<std::pair<std::string, double>> attrs;  // name and default
  Term body;
  std::string text;  // the line it came from
};

// Parses one rule; a malformed rule is an InternalError naming the line (the table is kiln's own).
DecompositionRule parse_rule(const std::string& line);
// Every rule of kiln's table, parsed.
std::vector<DecompositionRule> decomposition_rules();

// What a lowering does to a node: appends the nodes that replace it to `out` (the last one writes
// the node's own output value) and returns true, or returns false to keep the node as it is.
using DecomposeFn = bool(Graph& g, const Node& n, std::vector<Node>& out);
using DecompositionTable = LoweringTable<DecomposeFn>;

// Registers each rule as the base lowering of its op (explicit: there are no static registrations).
void register_decompositions(DecompositionTable& table);

// Rewrites every node whose op has a lowering in `table` and returns how many were rewritten. New
// values have no types yet: run shape inference after.
int decompose(Graph& g, const DecompositionTable& table);

}  // namespace kiln::lower
