// Work done once: a node with the op, attributes and inputs of an earlier node gives way to it (its
// uses read the earlier node's outputs), and equal constants (element type, shape and bytes) are one.
// Exporters repeat work per layer: a BERT export computes its attention mask, Where(mask, -inf, 0), in
// every one of its 12 layers, a kernel each on the GPU. Every op kiln has is deterministic; a node whose
// output is a graph output is kept (the output keeps its name), and so are the types a node made.
#define XXH_INLINE_ALL  // header-only, as in codegen/cpu/content_hash.cpp
#include <xxhash.h>

#include <cstring>
#include <map>
#include <string>
#include <variant>

#include "kiln/graph.h"
#include "passes/passes.h"

namespace kiln {
namespace {

constexpr size_t kLargestMergedConstant = size_t{1} << 20;  // bytes: folded masks (vit: 155 KB), no weight matrix

void append_bits(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }

void append_tensor(std::string& key, const Tensor& t) {
  key += dtype_name(t.dtype());
  for (int64_t d : t.shape()) key += "," + std::to_string(d);
  const XXH128_hash_t h = XXH3_128bits(t.raw(), t.nbytes());
  append_bits(key, &h, sizeof h);
}

// The attributes as bytes that differ exactly when the attributes do (floats by their bits).
std::string attribute_key(const Node& n) {
  std::string key;
  for (const auto& [name, a] : n.attrs) {
    key += name;
    key += '=';
    key += std::to_string(a.value.index());
    std::visit(
        [&key](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, int64_t> || std::is_same_v<V, double>) {
            append_bits(key, &v, sizeof v);
          } else if constexpr (std::is_same_v<V, std::string>) {
            key += std::to_string(v.size()) + ":" + v;
          } else if constexpr (std::is_same_v<V, std::vector<int64_t>> || std::is_same_v<V, std::vector<double>>) {
            key += std::to_string(v.size()) + ":";
            append_bits(key, v.data(), v.size() * sizeof(typename V::value_type));
          } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
            for (const std::string& s : v) key += std::to_string(s.size()) + ":" + s;
          } else if constexpr (std::is_same_v<V, SubgraphRef>) {
            const void* p = v.get();  // the same branches only when the same graph object
            append_bits(key, &p, sizeof p);
          } else {
            append_tensor(key, v);
          }
        },
        a.value);
    key += ';';
  }
  return key;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

int eliminate_common_subexpressions(Graph& g) {
  std::vector<ValueId> same(g.values.size());  // the value each one is replaced by (itself: kept)
  for (size_t v = 0; v < same.size(); ++v) same[v] = static_cast<ValueId>(v);
  std::vector<char> graph_output(g.values.size(), 0);
  for (ValueId v : g.outputs) graph_output[size_t(v)] = 1;

  // Equal constants: one of them stands for all (bytes compared, not only their hash). Up to 1 MiB:
  // scalars and folded masks repeat (vit: a 155 KB mask a layer), weight matrices do not, and hashing
  // every weight would read a model's whole file (bert: 531 MB, a quarter of a saved model's load).
  std::map<std::string, std::vector<ValueId>> constants;
  bool merged_constants = false;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& value = g.value(static_cast<ValueId>(v));
    if (!value.constant || value.producer >= 0 || graph_output[v] || value.constant->nbytes() > kLargestMergedConstant)
      continue;
    std::string key;
    append_tensor(key, *value.constant);
    std::vector<ValueId>& seen = constants[key];
    for (ValueId s : seen)
      if (same_bytes(*g.value(s).constant, *value.constant) && g.value(s).type == value.type) same[v] = s;
    if (same[v] == static_cast<ValueId>(v)) seen.push_back(static_cast<ValueId>(v));
    else merged_constants = true;
  }

  int removed = 0;
  std::map<std::string, NodeId> computed;  // node key -> the first node with it
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    for (ValueId& in : n.inputs)
      if (in != kNoValue) in = same[size_t(in)];
    std::string key = std::string(op_name(n.op)) + "(";
    for (ValueId in : n.inputs) key += std::to_string(in) + ",";
    key += ")" + std::to_string(n.outputs.size()) + "{" + attribute_key(n) + "}";
    auto [it, inserted] = computed.emplace(key, static_cast<NodeId>(i));
    if (inserted) continue;
    const Node& first = g.nodes[size_t(it->second)];
    bool replaceable = true;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const ValueId mine = n.outputs[o], theirs = first.outputs[o];
      if (mine == kNoValue) continue;
      if (theirs == kNoValue || graph_output[size_t(mine)] || !(g.value(mine).type == g.value(theirs).type))
        replaceable = false;
    }
    if (!replaceable) continue;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] != kNoValue) same[size_t(n.outputs[o])] = first.outputs[o];
    ++removed;
  }
  // The replaced nodes and constants (nothing reads them now).
  if (removed > 0 || merged_constants) g.remove_dead();
  return removed;
}

}  // namespace kiln
