// The checks and body signatures of If, Loop and Scan nodes: what their subgraph attributes must look
// like, and the types of the inputs a Loop or Scan body receives from its node.
#include <onnx/onnx.pb.h>

#include <unordered_set>

#include "onnx/graph_reader.h"
#include "onnx/tensor_proto.h"
#include "support/error.h"

namespace kiln {

std::optional<TensorType> declared_type(const ::onnx::ValueInfoProto& vi, const std::string& what,
                                        const std::string& fresh_prefix, bool required, const Options& options) {
  if (!vi.has_type()) {
    if (required) user_error("{} has no type", what);
    return std::nullopt;
  }
  const auto& type = vi.type();
  if (!type.has_tensor_type()) {
    if (type.value_case() == ::onnx::TypeProto::VALUE_NOT_SET && !required) return std::nullopt;
    unsupported("{} is not a tensor (sequences, maps, optionals and sparse tensors are not supported)", what);
  }
  const auto& tt = type.tensor_type();
  if (tt.elem_type() == ::onnx::TensorProto::UNDEFINED && !required) return std::nullopt;
  DType dtype = checked_dtype(tt.elem_type(), what);
  if (!tt.has_shape()) {
    if (required) user_error("{} has no shape (its rank must be declared)", what);
    return std::nullopt;
  }
  const auto& dims = tt.shape().dim();
  if (dims.size() > options.max_rank)
    user_error("{}: rank {} is over the limit of {} (max_rank)", what, dims.size(), options.max_rank);
  TensorType result{dtype, {}};
  for (int i = 0; i < dims.size(); ++i) {
    const auto& d = dims[i];
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) user_error("{}: dimension {} is negative ({})", what, i, d.dim_value());
      result.shape.push_back(Dim::fixed(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      result.shape.push_back(Dim::sym(d.dim_param()));
    } else {
      result.shape.push_back(Dim::sym(fmt::format("{}_{}", fresh_prefix, i)));
    }
  }
  return result;
}

const ::onnx::GraphProto& graph_attribute(const ::onnx::NodeProto& n, const std::string& desc, const char* attr) {
  for (const auto& a : n.attribute())
    if (a.name() == attr) {
      if (a.type() != ::onnx::AttributeProto::GRAPH || !a.has_g())
        user_error("{}: attribute '{}' must be a graph", desc, attr);
      return a.g();
    }
  user_error("{}: has no attribute '{}'", desc, attr);
}

void check_if_node(const ::onnx::NodeProto& np, const std::string& desc) {
  if (np.input_size() != 1 || np.input(0).empty()) user_error("{}: needs exactly one input, cond", desc);
  for (const auto& a : np.attribute())
    if (a.name() != "then_branch" && a.name() != "else_branch")
      user_error("{}: has attribute '{}', which If does not have", desc, a.name());
  const ::onnx::GraphProto& then_g = graph_attribute(np, desc, "then_branch");
  const ::onnx::GraphProto& else_g = graph_attribute(np, desc, "else_branch");
  for (const auto* g : {&then_g, &else_g})
    if (g->output_size() != np.output_size())
      user_error("{}: {} has {} outputs, but the node has {}", desc, g == &then_g ? "then_branch" : "else_branch",
                 g->output_size(), np.output_size());
  for (int i = 0; i < np.output_size(); ++i) {
    if (np.output(i).empty()) user_error("{}: output {} has no name (If's outputs are not optional)", desc, i);
    const auto& t = then_g.output(i).type();
    const auto& e = else_g.output(i).type();
    if (t.has_tensor_type() && e.has_tensor_type() && t.tensor_type().elem_type() && e.tensor_type().elem_type() &&
        t.tensor_type().elem_type() != e.tensor_type().elem_type())
      user_error("{}: output {} is {} in then_branch but {} in else_branch", desc, i,
                 dtype_name(checked_dtype(t.tensor_type().elem_type(), desc)),
                 dtype_name(checked_dtype(e.tensor_type().elem_type(), desc)));
  }
}

namespace {

void check_body_attributes(const ::onnx::NodeProto& np, int version, const std::string& desc) {
  const bool loop = np.op_type() == "Loop";
  std::unordered_set<std::string> allowed{"body"};
  if (!loop) allowed.insert({"num_scan_inputs"});
  if (!loop && version == 8) allowed.insert("directions");
  if (!loop && version >= 9)
    allowed.insert({"scan_input_directions", "scan_output_directions", "scan_input_axes", "scan_output_axes"});
  for (const auto& a : np.attribute())
    if (!allowed.count(a.name()))
      user_error("{}: has attribute '{}', which {}-{} does not have", desc, a.name(), np.op_type(), version);
  if (np.output_size() == 0) user_error("{}: has no outputs ({} makes at least one)", desc, np.op_type());
}

}  // namespace

BodyInputs body_inputs(OnnxGraphReader& b, const ::onnx::NodeProto& np, int version, const std::string& desc,
                       const std::vector<std::optional<ValueId>>& own) {
  check_body_attributes(np, version, desc);
  const bool loop = np.op_type() == "Loop";
  const ::onnx::GraphProto& body = graph_attribute(np, desc, "body");
  BodyInputs result;
  std::vector<bool> known_types;  // the element type is known (not a placeholder)
  // The body input fed by the node's input k, its first `drop_dims` dimensions scanned away.
  auto from_node = [&](size_t k, int drop_dims, const std::string& what) {
    if (k >= own.size() || !own[k]) user_error("{}: {} is omitted, but it is not optional", desc, what);
    const Value& v = b.graph().value(*own[k]);
    const int j = static_cast<int>(result.types.size());
    // The element type where known; else the body's declaration, checked when the node is inferred.
    auto dtype = b.known_dtype(*own[k]);
    if (!dtype && j < body.input_size())
      if (auto t = declared_type(body.input(j), desc + " body input", "_body", false, b.options())) dtype = t->dtype;
    TensorType t{dtype.value_or(v.type.dtype), {}};
    const bool known = b.known_rank(*own[k]).has_value();
    if (known && v.type.rank() < drop_dims) user_error("{}: {} has rank {}, too low to scan", desc, what, v.type.rank());
    // Sizes may change from one iteration to the next: only the element type and rank are kept.
    for (int d = drop_dims; d < v.type.rank(); ++d) t.shape.push_back(Dim::sym(fmt::format("_body{}_{}", j, d - drop_dims)));
    result.types.push_back(std::move(t));
    result.typed.push_back(known);
    known_types.push_back(dtype.has_value());
  };
  const int body_inputs = body.input_size();
  if (loop) {
    if (np.input_size() < 2)
      user_error("{}: needs at least two inputs, M and cond (either may be the empty name), then the loop-carried values", desc);
    const int carried = np.input_size() - 2;
    if (body_inputs != carried + 2)
      user_error("{}: body has {} inputs, but Loop's body takes {} (iteration_num, cond and the {} loop-carried values)",
                 desc, body_inputs, carried + 2, carried);
    if (body.output_size() != np.output_size() + 1)
      user_error("{}: body has {} outputs, but the node has {} (the body makes cond, then one per node output: the "
                 "{} loop-carried values and the scan outputs)", desc, body.output_size(), np.output_size(), carried);
    if (np.output_size() < carried)
      user_error("{}: has {} outputs, fewer than its {} loop-carried values", desc, np.output_size(), carried);
    result.types.push_back(TensorType{DType::i64, {}});
    result.types.push_back(TensorType{DType::boolean, {}});
    result.typed.insert(result.typed.end(), {true, true});
    known_types.insert(known_types.end(), {true, true});
    for (int k = 0; k < carried; ++k) from_node(size_t(2 + k), 0, fmt::format("loop-carried value {}", k));
  } else {
    int64_t scans = -1;
    for (const auto& a : np.attribute())
      if (a.name() == "num_scan_inputs") scans = a.i();
    const int first = version == 8 ? 1 : 0;  // Scan-8's sequence_lens comes first
    const int given = np.input_size() - first;
    if (scans < 1 || scans > given)
      user_error("{}: num_scan_inputs must be 1 to {} (the node's inputs{}), is {}", desc, given,
                 version == 8 ? " after sequence_lens" : "", scans);
    const int states = given - static_cast<int>(scans);
    if (body_inputs != given)
      user_error("{}: body has {} inputs, but the node passes it {} ({} state variables and {} scan inputs)", desc,
                 body_inputs, given, states, scans);
    if (body.output_size() != np.output_size())
      user_error("{}: body has {} outputs, but the node has {}", desc, body.output_size(), np.output_size());
    if (np.output_size() < states)
      user_error("{}: has {} outputs, fewer than its {} state variables", desc, np.output_size(), states);
    const int batch = version == 8 ? 1 : 0;  // Scan-8's body sees one batch entry
    for (int k = 0; k < given; ++k)
      from_node(size_t(first + k), k < states ? batch : batch + 1,
                k < states ? fmt::format("state variable {}", k) : fmt::format("scan input {}", k - states));
  }
  // Declared element types of the body's inputs must be those the node gives.
  for (int j = 0; j < body_inputs; ++j) {
    auto t = declared_type(body.input(j), fmt::format("{} body input '{}'", desc, body.input(j).name()), "_body",
                           false, b.options());
    if (t && known_types[size_t(j)] && t->dtype != result.types[size_t(j)].dtype)
      user_error("{}: body input {} ('{}') is declared {}, but the node gives it {}", desc, j, body.input(j).name(),
                 dtype_name(t->dtype), dtype_name(result.types[size_t(j)].dtype));
  }
  return result;
}

}  // namespace kiln
