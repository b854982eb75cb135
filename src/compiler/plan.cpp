#include "compiler/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ops/registry.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::compiler {
namespace {

// Ops whose kernel returns its input's buffer under another shape (src/ops/shape/view_ops.cpp).
bool is_view(OpKind op) {
  return op == OpKind::Identity || op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Squeeze ||
         op == OpKind::Unsqueeze;
}

// Bytes of a value at its compile-time size; -1 if a dimension is symbolic.
int64_t static_bytes(const Value& v) {
  if (!is_static(v.type.shape)) return -1;
  return checked_mul(checked_numel(static_dims(v.type.shape), v.name), static_cast<int64_t>(dtype_size(v.type.dtype)),
                     v.name);
}

// Per value: the value whose buffer it is (itself, or what a chain of views reads).
std::vector<ValueId> buffer_roots(const Graph& g, const std::vector<Step>& steps) {
  std::vector<ValueId> root(g.values.size());
  for (size_t v = 0; v < root.size(); ++v) root[v] = static_cast<ValueId>(v);
  for (const Step& s : steps)
    if (s.kind == StepKind::view && !s.inputs.empty() && s.inputs[0] != kNoValue)
      for (ValueId out : s.outputs)
        if (out != kNoValue) root[size_t(out)] = root[size_t(s.inputs[0])];
  return root;
}

constexpr int64_t kAlign = 64;

}  // namespace

const char* step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::node: return "node";
    case StepKind::view: return "view";
    case StepKind::generated: return "generated";
    case StepKind::library: return "library";
  }
  return "?";
}

std::vector<Step> make_steps(const Graph& g, std::vector<Step> fused, std::vector<int>& step_of_node) {
  step_of_node.assign(g.nodes.size(), -1);
  for (size_t k = 0; k < fused.size(); ++k)
    for (NodeId n : fused[k].nodes) {
      KILN_INTERNAL_CHECK(step_of_node[size_t(n)] < 0, "plan: {} is in two fused steps", g.describe(g.nodes[size_t(n)]));
      step_of_node[size_t(n)] = static_cast<int>(k);
    }
  std::vector<Step> steps;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    int k = step_of_node[i];
    if (k >= 0) {
      if (fused[size_t(k)].node == static_cast<NodeId>(i)) steps.push_back(std::move(fused[size_t(k)]));
      continue;
    }
    const Node& n = g.nodes[i];
    Step s;
    s.kind = is_view(n.op) ? StepKind::view : StepKind::node;
    s.node = static_cast<NodeId>(i);
    s.nodes = {s.node};
    s.inputs = n.inputs;
    s.outputs = n.outputs;
    s.label = std::string(op_name(n.op));
    steps.push_back(std::move(s));
  }
  return steps;
}

std::vector<int> last_uses(const Graph& g, const std::vector<Step>& steps) {
  std::vector<int> last(g.values.size(), -1);
  for (size_t s = 0; s < steps.size(); ++s)
    for (ValueId v : steps[s].inputs)
      if (v != kNoValue) last[size_t(v)] = static_cast<int>(s);
  for (ValueId v : g.outputs) last[size_t(v)] = static_cast<int>(steps.size());
  return last;
}

MemoryPlan plan_memory(const Graph& g, const std::vector<Step>& steps) {
  MemoryPlan plan;
  plan.slot_of.assign(g.values.size(), -1);
  std::vector<ValueId> root = buffer_roots(g, steps);
  std::vector<int> last = last_uses(g, steps);
  // A buffer lives until the last read of any value sharing it; one shared with a graph output
  // leaves the run and is never planned.
  std::vector<int> buffer_end(g.values.size(), -1);
  std::vector<char> escapes(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v)
    buffer_end[size_t(root[v])] = std::max(buffer_end[size_t(root[v])], last[v]);
  for (ValueId v : g.outputs) escapes[size_t(root[size_t(v)])] = 1;

  std::vector<int> slot_free_after;  // per slot: the step after which it may be reused
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    if (step.kind == StepKind::view) continue;
    if (step.kind == StepKind::node && op_registry().find(g.nodes[size_t(step.node)].op) &&
        op_registry().find(g.nodes[size_t(step.node)].op)->kernel_makes_outputs)
      continue;
    for (ValueId v : step.outputs) {
      if (v == kNoValue || root[size_t(v)] != v || escapes[size_t(v)]) continue;
      int64_t bytes = static_bytes(g.value(v));
      if (bytes <= 0) continue;
      int end = std::max(buffer_end[size_t(v)], static_cast<int>(s));
      // Best fit among slots free before this step (a step never writes over what it reads).
      int best = -1;
      for (size_t k = 0; k < plan.slot_bytes.size(); ++k) {
        if (slot_free_after[k] >= static_cast<int>(s)) continue;
        bool fits = plan.slot_bytes[k] >= bytes;
        if (best < 0) { best = static_cast<int>(k); continue; }
        bool best_fits = plan.slot_bytes[size_t(best)] >= bytes;
        if (fits && (!best_fits || plan.slot_bytes[k] < plan.slot_bytes[size_t(best)])) best = static_cast<int>(k);
        else if (!fits && !best_fits && plan.slot_bytes[k] > plan.slot_bytes[size_t(best)]) best = static_cast<int>(k);
      }
      if (best < 0) {
        best = static_cast<int>(plan.slot_bytes.size());
        plan.slot_bytes.push_back(0);
        slot_free_after.push_back(-1);
      }
      plan.slot_bytes[size_t(best)] = std::max(plan.slot_bytes[size_t(best)], bytes);
      slot_free_after[size_t(best)] = end;
      plan.slot_of[size_t(v)] = best;
      plan.planned_bytes += bytes;
    }
  }
  for (int64_t bytes : plan.slot_bytes) {
    plan.slot_offset.push_back(plan.arena_bytes);
    plan.arena_bytes = checked_add(plan.arena_bytes, (bytes + kAlign - 1) / kAlign * kAlign, "arena");
  }
  return plan;
}

PlanStats plan_stats(const Graph& g, const std::vector<Step>& steps, const MemoryPlan& memory) {
  PlanStats st;
  st.buffers = static_cast<int>(memory.slot_bytes.size());
  st.arena_bytes = memory.arena_bytes;
  st.planned_bytes = memory.planned_bytes;
  int64_t moved = 0;
  bool known = true;
  for (const Step& s : steps) {
    if (s.kind == StepKind::view) {
      ++st.views;
      continue;
    }
    ++st.kernels;
    st.generated += s.kind == StepKind::generated;
    st.library += s.kind == StepKind::library;
    std::set<ValueId> touched(s.inputs.begin(), s.inputs.end());
    touched.insert(s.outputs.begin(), s.outputs.end());
    for (ValueId v : touched) {
      if (v == kNoValue) continue;
      int64_t b = static_bytes(g.value(v));
      if (b < 0) known = false;
      else moved += b;
    }
  }
  st.bytes_moved = known ? moved : -1;
  return st;
}

std::string plan_text(const Graph& g, const std::vector<Step>& steps, const MemoryPlan& memory) {
  std::string text;
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& step = steps[s];
    std::string outs;
    for (ValueId v : step.outputs) {
      if (v == kNoValue) continue;
      int slot = memory.slot_of[size_t(v)];
      outs += fmt::format("{}{}{}", outs.empty() ? "" : ", ", type_string(g.value(v).type),
                          slot >= 0 ? fmt::format(" @slot{}", slot) : "");
    }
    std::string names;
    if (step.nodes.size() > 1)
      for (NodeId n : step.nodes) names += fmt::format("{}{}", names.empty() ? " [" : ", ", op_name(g.nodes[size_t(n)].op));
    if (!names.empty()) names += "]";
    text += fmt::format("{:4} {:9} {}{} -> {}  ({})\n", s, step_kind_name(step.kind), step.label, names, outs,
                        g.nodes[size_t(step.node)].name);
  }
  return text;
}

}  // namespace kiln::compiler
