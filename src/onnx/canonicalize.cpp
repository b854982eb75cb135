// Older opsets -> the opset-18 form every kernel expects, done while nodes are added to the graph.
#include <fmt/format.h>

#include <climits>

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

ValueId OnnxGraphReader::constant_i64(const std::string& base, const std::vector<int64_t>& values) {
  Tensor t = Tensor::from_vector<int64_t>(DType::i64, {static_cast<int64_t>(values.size())}, values);
  return graph_.add_constant(unique_name(base), std::move(t));
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

namespace {

std::string describe(OpKind op, const std::string& name) { return fmt::format("node '{}' ({})", name, op_name(op)); }

// Moves a list attribute (axes, split) to input `index` as a constant i64 tensor.
void attr_to_input(OnnxGraphReader& b, OpKind op, const std::string& name, std::vector<ValueId>& inputs,
                   AttrMap& attrs, const char* attr, size_t index) {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return;
  const auto* list = std::get_if<std::vector<int64_t>>(&it->second.value);
  if (!list) user_error("{}: attribute '{}' must be a list of integers", describe(op, name), attr);
  if (inputs.size() > index && inputs[index] != kNoValue)
    user_error("{}: '{}' is given both as an attribute and as input {}", describe(op, name), attr, index);
  if (inputs.size() <= index) inputs.resize(index + 1, kNoValue);
  inputs[index] = b.constant_i64(fmt::format("{}_{}", name, attr), *list);
  attrs.erase(it);
}

int64_t int_attr(const AttrMap& attrs, const char* attr, int64_t def, OpKind op, const std::string& name) {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return def;
  const auto* v = std::get_if<int64_t>(&it->second.value);
  if (!v) user_error("{}: attribute '{}' must be an integer", describe(op, name), attr);
  return *v;
}

// Softmax/LogSoftmax before opset 13 normalise over all dims from `axis` on (the input seen as 2-D).
// When `axis` is the last axis this is the opset-13 meaning; otherwise rewrite as
// Flatten(X, axis) -> op(axis=-1) -> Reshape(Shape(X)).
void add_legacy_softmax(OnnxGraphReader& b, OpKind op, const std::string& name, std::vector<ValueId> inputs,
                        const std::vector<std::string>& outputs, AttrMap attrs) {
  int64_t axis = int_attr(attrs, "axis", 1, op, name);
  if (inputs.empty() || inputs[0] == kNoValue || outputs.empty() || outputs[0].empty()) {
    b.add_node(op, std::move(inputs), outputs, name, std::move(attrs));  // malformed: shape inference reports it
    return;
  }
  std::optional<int> rank = b.known_rank(inputs[0]);
  if (rank && *rank > 0 && (axis == *rank - 1 || axis == -1)) {
    attrs["axis"] = Attribute{int64_t{-1}};
    b.add_node(op, std::move(inputs), outputs, name, std::move(attrs));
    return;
  }
  ValueId x = inputs[0];
  std::string flat = b.unique_name(name + "_flat");
  AttrMap flatten_attrs;
  flatten_attrs["axis"] = Attribute{axis};
  NodeId f = b.add_node(OpKind::Flatten, {x}, {flat}, b.unique_name(name + "_flatten"), std::move(flatten_attrs));
  ValueId flat_id = b.graph().nodes[static_cast<size_t>(f)].outputs[0];

  std::string normed = b.unique_name(name + "_2d");
  attrs["axis"] = Attribute{int64_t{-1}};
  NodeId s = b.add_node(op, {flat_id}, {normed}, name, std::move(attrs));
  ValueId normed_id = b.graph().nodes[static_cast<size_t>(s)].outputs[0];

  std::string shape = b.unique_name(name + "_shape");
  NodeId sh = b.add_node(OpKind::Shape, {x}, {shape}, b.unique_name(name + "_shape_of"), {});
  ValueId shape_id = b.graph().nodes[static_cast<size_t>(sh)].outputs[0];

  b.add_node(OpKind::Reshape, {normed_id, shape_id}, {outputs[0]}, b.unique_name(name + "_reshape"), {});
}

}  // namespace

void add_canonical_node(OnnxGraphReader& b, OpKind op, std::string name, std::vector<ValueId> inputs,
                        const std::vector<std::string>& outputs, AttrMap attrs) {
  const int64_t opset = b.opset();
  switch (op) {
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::ReduceSum:
      if (opset < 13) attr_to_input(b, op, name, inputs, attrs, "axes", 1);
      break;
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
      if (opset < 18) attr_to_input(b, op, name, inputs, attrs, "axes", 1);
      break;
    case OpKind::Split:
      if (opset < 13) attr_to_input(b, op, name, inputs, attrs, "split", 1);
      // Before 18, no 'split' meant equal parts, one per output; 18 says so with num_outputs.
      if (opset < 18 && !(inputs.size() > 1 && inputs[1] != kNoValue) && !attrs.count("num_outputs"))
        attrs["num_outputs"] = Attribute{static_cast<int64_t>(outputs.size())};
      break;
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
      if (opset < 13) return add_legacy_softmax(b, op, name, std::move(inputs), outputs, std::move(attrs));
      break;
    case OpKind::Cast:  // ONNX's element type code becomes kiln's dtype name: no ONNX codes past the importer
      if (attrs.count("to")) {
        const int64_t code = int_attr(attrs, "to", 0, op, name);
        auto t = code >= INT32_MIN && code <= INT32_MAX ? dtype_from_onnx(static_cast<int>(code)) : std::nullopt;
        if (!t)
          unsupported("{}: cannot cast to ONNX element type {} (supported: 1 2 3 6 7 9 10 11 16)", describe(op, name),
                     code);
        attrs["to"] = Attribute{std::string(dtype_name(*t))};
      }
      break;
    default: break;
  }
  b.add_node(op, std::move(inputs), outputs, std::move(name), std::move(attrs));
}

}  // namespace kiln
