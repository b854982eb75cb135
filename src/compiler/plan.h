// The execution plan of a compile: the steps a run takes, in order, and where their outputs live.
//
// A step is one eager node, a view (Reshape and friends: the output shares its input's buffer, no
// kernel runs), a generated kernel that computes a group of nodes, or a library call with its fused
// post-ops. Memory planning gives every intermediate whose size is known at compile time a slot in one
// arena per run; slots are reused once every reader of a value (and of the views of it) has run.
// Graph outputs, values of symbolic size and values that share a graph output's buffer are allocated
// on their own at run time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/graph.h"

namespace kiln::compiler {

enum class StepKind : uint8_t { node, view, generated, library };
const char* step_kind_name(StepKind k);

struct Step {
  StepKind kind = StepKind::node;
  NodeId node = -1;             // node, view: the node; generated, library: the group's last node
  std::vector<NodeId> nodes;    // every node the step computes
  std::vector<ValueId> inputs;  // what it reads (constants included), in the order its kernel takes them
  std::vector<ValueId> outputs;
  int kernel = -1;              // into Executable::kernels
  std::string label;            // for KILN_DEBUG=fusion and dumps
};

struct MemoryPlan {
  std::vector<int> slot_of;            // per value: arena slot, or -1 (allocated at run time, or no buffer)
  std::vector<int64_t> slot_offset;    // bytes from the arena's start, 64-byte aligned
  std::vector<int64_t> slot_bytes;
  int64_t arena_bytes = 0;
  int64_t planned_bytes = 0;           // sum of the planned values' sizes (what no reuse would take)
};

struct PlanStats {
  int kernels = 0;          // steps that launch work (every step but views)
  int views = 0;
  int generated = 0;
  int library = 0;
  int buffers = 0;          // arena slots
  int64_t arena_bytes = 0;
  int64_t planned_bytes = 0;
  int64_t bytes_moved = -1;  // bytes the kernels read and write at the compile-time sizes; -1 if unknown
};

// Steps for every node not computed inside a group: `step_of_node[n]` is the index of the fused step
// that computes node n (-1: n runs on its own). Steps come out in node order, a fused step where its
// last node stood.
std::vector<Step> make_steps(const Graph& g, std::vector<Step> fused, std::vector<int>& step_of_node);

// Per value, the index of the last step that reads it (or a view of it); graph outputs: steps.size().
std::vector<int> last_uses(const Graph& g, const std::vector<Step>& steps);

MemoryPlan plan_memory(const Graph& g, const std::vector<Step>& steps);

PlanStats plan_stats(const Graph& g, const std::vector<Step>& steps, const MemoryPlan& memory);

// One line per step (kind, label, nodes, output type), for KILN_DEBUG=fusion and --dump-dir.
std::string plan_text(const Graph& g, const std::vector<Step>& steps, const MemoryPlan& memory);

}  // namespace kiln::compiler
