#include "schedule/blocked_layouts.h"

#include <map>

#include "kiln/errors.h"

namespace kiln::schedule {
namespace {

constexpr int64_t kBlock = 16;

// A 2-D f32 Conv group without channel groups: where the CPU's primitives have fast blocked kernels
// (a depthwise convolution given a blocked input fell to oneDNN's reference kernel, 100x slower).
bool blockable(const Graph& g, const LibraryGroup& grp) {
  if (grp.core != LibraryCore::conv) return false;
  const Node& conv = g.nodes[size_t(grp.core_node)];
  try {
    if (conv.attr_int("group", 1) != 1) return false;
  } catch (const UserError&) {
    return false;
  }
  const TensorType& x = g.value(conv.inputs[0]).type;
  const TensorType& y = g.value(grp.output).type;
  return x.rank() == 4 && y.rank() == 4 && x.dtype == DType::f32 && y.dtype == DType::f32;
}

bool channels_in_blocks(const Graph& g, ValueId v) {
  const Dim& c = g.value(v).type.shape[1];
  return c.is_static() && c.value > 0 && c.value % kBlock == 0;
}

}  // namespace

int assign_blocked_layouts(const Graph& g, std::vector<LibraryGroup>& groups) {
  std::map<NodeId, size_t> group_of;  // every node of a blockable group
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].blocked_input = groups[i].blocked_residual = groups[i].blocked_output = false;
    if (blockable(g, groups[i]))
      for (NodeId n : groups[i].nodes) group_of[n] = i;
  }
  const std::vector<int> uses = g.use_counts();
  std::vector<char> is_output(g.values.size(), 0);
  for (ValueId v : g.outputs) is_output[size_t(v)] = 1;
  // Each read of a value: the node and the input slot.
  std::vector<std::vector<std::pair<NodeId, size_t>>> reads(g.values.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (size_t k = 0; k < g.nodes[n].inputs.size(); ++k)
      if (g.nodes[n].inputs[k] != kNoValue) reads[size_t(g.nodes[n].inputs[k])].push_back({NodeId(n), k});
  int blocked = 0;
  for (LibraryGroup& producer : groups) {
    const ValueId v = producer.output;
    if (!blockable(g, producer) || is_output[size_t(v)] || !channels_in_blocks(g, v) || reads[size_t(v)].empty() ||
        int(reads[size_t(v)].size()) != uses[size_t(v)])
      continue;
    // Every read must be a blockable group's X (input 0 of its Conv) or its residual (an operand of its Add).
    bool ok = true;
    for (auto [node, slot] : reads[size_t(v)]) {
      auto it = group_of.find(node);
      if (it == group_of.end()) {
        ok = false;
        break;
      }
      const LibraryGroup& reader = groups[it->second];
      const bool as_x = node == reader.core_node && slot == 0;
      const bool as_residual = reader.residual >= 0 && reader.inputs[size_t(reader.residual)] == v &&
                               g.nodes[size_t(node)].op == OpKind::Add && node != reader.core_node;
      if (!as_x && !as_residual) ok = false;
    }
    if (!ok) continue;
    producer.blocked_output = true;
    for (auto [node, slot] : reads[size_t(v)]) {
      LibraryGroup& reader = groups[group_of.at(node)];
      if (node == reader.core_node && slot == 0) reader.blocked_input = true;
      else reader.blocked_residual = true;
    }
    ++blocked;
  }
  return blocked;
}

std::string blocked_layout_note(const LibraryGroup& group) {
  std::string parts;
  auto add = [&](bool on, const char* what) {
    if (on) parts += (parts.empty() ? "" : ", ") + std::string(what);
  };
  add(group.blocked_input, "in");
  add(group.blocked_residual, "residual");
  add(group.blocked_output, "out");
  return parts.empty() ? "" : " [nChw16c: " + parts + "]";
}

}  // namespace kiln::schedule
