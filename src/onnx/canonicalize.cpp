// The importer's graph building: names, constants, node forms, and the last step of every node into
// kiln's canonical form (after version_adapters.cpp has brought it to its newest version).
#include <fmt/format.h>

#include <climits>
#include <utility>

#include "onnx/graph_reader.h"
#include "onnx/tensor_proto.h"
#include "support/error.h"

namespace kiln {

std::string OnnxGraphReader::unique_name(const std::string& base) {
  std::string name = base;
  for (int i = 1; taken_.count(name); ++i) name = fmt::format("{}_{}", base, i);
  taken_.insert(name);
  return name;
}

std::optional<ValueId> OnnxGraphReader::find(const std::string& name) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> OnnxGraphReader::known_rank(ValueId id) const {
  const Value& v = graph_.value(id);
  if (v.constant) return v.constant->rank();
  if (typed_.count(id)) return v.type.rank();
  return std::nullopt;
}

std::optional<DType> OnnxGraphReader::known_dtype(ValueId id) const {
  const Value& v = graph_.value(id);
  if (v.constant) return v.constant->dtype();
  if (typed_.count(id)) return v.type.dtype;
  if (v.producer >= 0) {  // a Cast says what it makes
    const Node& p = graph_.nodes[static_cast<size_t>(v.producer)];
    if (p.op == OpKind::Cast) return dtype_from_name(p.attr_string("to", ""));
  }
  return std::nullopt;
}

ValueId OnnxGraphReader::constant_i64(const std::string& base, const std::vector<int64_t>& values) {
  Tensor t = Tensor::from_vector<int64_t>(DType::i64, {static_cast<int64_t>(values.size())}, values);
  return graph_.add_constant(unique_name(base), std::move(t));
}

ValueId OnnxGraphReader::scalar_like(const std::string& base, double v, ValueId like) {
  std::optional<DType> t = known_dtype(like);
  if (t == DType::f64) return graph_.add_constant(unique_name(base), Tensor::scalar(DType::f64, v));
  ValueId f = graph_.add_constant(unique_name(t == DType::f32 ? base : base + "_f32"),
                                  Tensor::scalar(DType::f32, static_cast<float>(v)));
  if (t == DType::f32) return f;
  std::string out = unique_name(base);
  NodeId n = add_node(OpKind::CastLike, {f, like}, {out}, unique_name(base + "_cast"), {});
  return graph_.nodes[static_cast<size_t>(n)].outputs[0];
}

NodeId OnnxGraphReader::add_node(OpKind op, std::vector<ValueId> inputs, const std::vector<std::string>& outputs,
                                 std::string name, AttrMap attrs) {
  NodeId id = graph_.add_node(op, std::move(inputs), outputs, std::move(name));
  Node& n = graph_.nodes.back();
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (n.outputs[i] != kNoValue) bind(outputs[i], n.outputs[i]);
  return id;
}

std::string NodeForm::desc() const {
  if (!domain.empty()) return fmt::format("node '{}' ({}::{}-{})", name, domain, op_type, version);
  return fmt::format("node '{}' ({}-{})", name, op_type, version);
}

namespace {

// The attribute `attr` of `node` as a T (`def` when absent); another type is the model's fault.
template <class T>
T typed_attr(const NodeForm& node, const char* attr, const T& def, const char* type_name) {
  auto it = node.attrs.find(attr);
  if (it == node.attrs.end()) return def;
  const T* v = std::get_if<T>(&it->second.value);
  if (!v) user_error("{}: attribute '{}' must be {}", node.desc(), attr, type_name);
  return *v;
}

}  // namespace

int64_t NodeForm::int_attr(const char* attr, int64_t def) const { return typed_attr(*this, attr, def, "an integer"); }
double NodeForm::float_attr(const char* attr, double def) const { return typed_attr(*this, attr, def, "a float"); }
std::string NodeForm::string_attr(const char* attr, const std::string& def) const {
  return typed_attr(*this, attr, def, "a string");
}

void NodeForm::attr_to_input(OnnxGraphReader& b, const char* attr, size_t index) {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return;
  const auto* list = std::get_if<std::vector<int64_t>>(&it->second.value);
  if (!list) user_error("{}: attribute '{}' must be a list of integers", desc(), attr);
  if (has_input(index)) user_error("{}: '{}' is given both as an attribute and as input {}", desc(), attr, index);
  if (inputs.size() <= index) inputs.resize(index + 1, kNoValue);
  inputs[index] = b.constant_i64(fmt::format("{}_{}", name, attr), *list);
  attrs.erase(it);
}

void NodeForm::float_attr_to_input(OnnxGraphReader& b, const char* attr, size_t index) {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return;
  const auto* v = std::get_if<double>(&it->second.value);
  if (!v) user_error("{}: attribute '{}' must be a float", desc(), attr);
  if (has_input(index)) user_error("{}: '{}' is given both as an attribute and as input {}", desc(), attr, index);
  if (!has_input(0)) user_error("{}: input 0 is missing", desc());
  if (inputs.size() <= index) inputs.resize(index + 1, kNoValue);
  inputs[index] = b.scalar_like(fmt::format("{}_{}", name, attr), *v, inputs[0]);
  attrs.erase(it);
}

// The attributes that hold an ONNX element type code.
constexpr std::pair<OpKind, const char*> kDtypeAttributes[] = {{OpKind::Cast, "to"},
                                                              {OpKind::MelWeightMatrix, "output_datatype"}};

void add_canonical_node(OnnxGraphReader& b, NodeForm n) {
  // Another domain's operator is only ever a rewrite (the importer checked that it has one) and has no
  // version steps.
  if (n.domain.empty()) adapt_to_newest(b, n);
  if (!add_rewritten_node(b, n)) {
    if (!n.domain.empty()) internal_error("onnx import: {} has no rewrite", n.desc());
    auto op = op_from_name(n.op_type);
    if (!op) internal_error("onnx import: {} has no kiln op", n.desc());
    // ONNX's element type codes become kiln's dtype names: no ONNX codes past the importer.
    for (const auto& [dtype_op, attr] : kDtypeAttributes) {
      if (*op != dtype_op || !n.attrs.count(attr)) continue;
      const int64_t code = n.int_attr(attr, 0);
      auto t = code >= INT32_MIN && code <= INT32_MAX ? dtype_from_onnx(static_cast<int>(code)) : std::nullopt;
      if (!t && *op == OpKind::Cast)
        unsupported("{}: cannot cast to ONNX element type {} (supported: 1 to 7, 9 to 13, 16)", n.desc(), code);
      if (!t) unsupported("{}: {} is ONNX element type {}, which kiln does not support", n.desc(), attr, code);
      n.attrs[attr] = Attribute{std::string(dtype_name(*t))};
    }
    b.add_node(*op, std::move(n.inputs), n.outputs, n.name, std::move(n.attrs));
  }
  for (auto& f : n.then) f(b);
}

}  // namespace kiln
