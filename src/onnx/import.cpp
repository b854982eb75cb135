#include "onnx/import.h"

#include <climits>
#include <map>
#include <onnx/onnx.pb.h>
#include <queue>

#include "onnx/external_data.h"
#include "onnx/file_util.h"
#include "onnx/graph_reader.h"
#include "onnx/tensor_proto.h"
#include "support/error.h"

namespace kiln {
namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// The model's node name, or "<Op>_<index>" when it has none.
std::string node_name(const ::onnx::NodeProto& n, int index) {
  return n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
}

// The opset the model imports of each domain other than the default one.
std::map<std::string, int64_t> other_domain_opsets(const ::onnx::ModelProto& model) {
  std::map<std::string, int64_t> opsets;
  for (const auto& imp : model.opset_import())
    if (!is_default_domain(imp.domain()) && !opsets.emplace(imp.domain(), imp.version()).second)
      user_error("model imports the domain '{}' twice", imp.domain());
  return opsets;
}

// Whether every node of the model is of another domain, with an operator kiln reads there (a model of
// ai.onnx.preview.training alone imports no default opset).
bool only_other_domain_ops(const ::onnx::ModelProto& model) {
  if (!model.has_graph() || model.graph().node_size() == 0) return false;
  for (const auto& n : model.graph().node())
    if (is_default_domain(n.domain()) || !domain_op_since(n.domain(), n.op_type())) return false;
  return true;
}

// The default-domain opset (0 for a model whose nodes are all of other domains), after checking the IR
// version and the opset imports.
int64_t checked_opset(const ::onnx::ModelProto& model) {
  if (!model.has_ir_version() || model.ir_version() == 0)
    user_error("model has no ir_version (is this an ONNX model?)");
  if (model.ir_version() < kMinIrVersion || model.ir_version() > kMaxIrVersion)
    unsupported("ONNX ir_version {} is not supported (kiln reads {} to {})", model.ir_version(), kMinIrVersion,
               kMaxIrVersion);
  int64_t opset = -1;
  for (const auto& imp : model.opset_import()) {
    if (!is_default_domain(imp.domain())) continue;
    if (opset >= 0) user_error("model imports the default ONNX domain twice");
    opset = imp.version();
  }
  if (opset < 0 && only_other_domain_ops(model)) return 0;
  if (opset < 0) {
    // Name the first node kiln cannot read: of the default domain (which the model does not import), or
    // an operator of another domain kiln does not read.
    if (model.has_graph())
      for (int i = 0; i < model.graph().node_size(); ++i) {
        const auto& n = model.graph().node(i);
        if (is_default_domain(n.domain()))
          user_error("node '{}' ({}): the model imports no opset of the default ONNX domain", node_name(n, i),
                     n.op_type());
        if (!domain_op_since(n.domain(), n.op_type()))
          unsupported("node '{}': unsupported operator {}::{}", node_name(n, i), n.domain(), n.op_type());
      }
    user_error("model imports no opset of the default ONNX domain");
  }
  if (opset < kMinOpset || opset > kMaxOpset)
    unsupported("ONNX opset {} is not supported (kiln reads opsets {} to {})", opset, kMinOpset, kMaxOpset);
  return opset;
}

// A declared type from a ValueInfoProto. `fresh_prefix` names dims that have neither a value nor a
// parameter ("_in0" -> "_in0_1"). Returns nullopt when the declaration says nothing usable and
// `required` is false.
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

struct PendingNode {
  const ::onnx::NodeProto* proto;
  OpSupport support;  // its version, kiln op or rewrite
  std::string name;   // the model's, or "<Op>_<index>" when it has none
};

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, const std::filesystem::path& base_dir, const Options& options)
      : model_(model), options_(options), external_(base_dir) {}

  Graph run() {
    int64_t opset = checked_opset(model_);
    if (!model_.has_graph()) user_error("model has no graph");
    const auto& g = model_.graph();
    if (g.node_size() > options_.max_nodes)
      user_error("model has {} nodes, over the limit of {} (max_nodes)", g.node_size(), options_.max_nodes);
    if (g.sparse_initializer_size()) unsupported("sparse initializers are not supported");

    Graph graph;
    opset_ = opset;
    domain_opsets_ = other_domain_opsets(model_);
    OnnxGraphReader b(graph, options_, opset);
    add_initializers(b);
    add_inputs(b);
    std::vector<PendingNode> nodes = check_nodes(b);
    for (size_t i : topological_order(b, nodes)) emit(b, nodes[i]);
    add_declared_types(b);
    add_outputs(b);
    return graph;
  }

 private:
  // Every name a value gets in the model must be new.
  void claim(OnnxGraphReader& b, const std::string& name, const std::string& what) {
    if (!producers_.insert(name).second) user_error("{}: value name '{}' is defined twice", what, name);
    b.reserve_name(name);
  }

  void add_initializers(OnnxGraphReader& b) {
    for (const auto& init : model_.graph().initializer()) {
      std::string what = fmt::format("initializer '{}'", init.name());
      if (init.name().empty()) user_error("an initializer has no name");
      claim(b, init.name(), what);
      Tensor t = tensor_from_proto(init, options_, &external_, what);
      b.bind(init.name(), b.graph().add_constant(init.name(), std::move(t)));
    }
  }

  // Graph inputs that are also initializers are constants (old exporters list weights as inputs).
  void add_inputs(OnnxGraphReader& b) {
    const auto& g = model_.graph();
    std::unordered_set<std::string> seen;
    for (int i = 0; i < g.input_size(); ++i) {
      const auto& in = g.input(i);
      std::string what = fmt::format("graph input '{}'", in.name());
      if (in.name().empty()) user_error("graph input {} has no name", i);
      if (!seen.insert(in.name()).second) user_error("{} is listed twice", what);
      if (auto c = b.find(in.name())) {
        auto t = declared_type(in, what, fmt::format("_in{}", i), false, options_);
        DType have = b.graph().value(*c).constant->dtype();
        if (t && t->dtype != have)
          user_error("{} is declared {} but its initializer is {}", what, dtype_name(t->dtype), dtype_name(have));
        continue;
      }
      claim(b, in.name(), what);
      TensorType type = *declared_type(in, what, fmt::format("_in{}", i), true, options_);
      ValueId id = b.graph().add_value(in.name(), std::move(type));
      b.graph().inputs.push_back(id);
      b.bind(in.name(), id);
      b.mark_typed(id);
    }
  }

  // Per-node checks that need no ordering: domain, op, output names.
  std::vector<PendingNode> check_nodes(OnnxGraphReader& b) {
    std::vector<PendingNode> nodes;
    const auto& g = model_.graph();
    nodes.reserve(static_cast<size_t>(g.node_size()));
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& np = g.node(i);
      std::string name = node_name(np, i);
      if (!is_default_domain(np.domain())) {
        nodes.push_back(PendingNode{&np, other_domain_support(np, name), std::move(name)});
        for (const auto& out : np.output())
          if (!out.empty()) claim(b, out, fmt::format("node '{}' ({}::{})", nodes.back().name, np.domain(), np.op_type()));
        continue;
      }
      if (np.op_type() == "If" || np.op_type() == "Loop" || np.op_type() == "Scan")
        unsupported("node '{}' ({}): subgraphs are not supported", name, np.op_type());
      OpSupport support = check_op_support(np.op_type(), opset_, name);
      std::string desc = fmt::format("node '{}' ({})", name, np.op_type());
      for (const auto& out : np.output())
        if (!out.empty()) claim(b, out, desc);
      nodes.push_back(PendingNode{&np, support, std::move(name)});
    }
    return nodes;
  }

  // A node of another domain: an operator kiln reads there, at an opset of its domain the model imports.
  OpSupport other_domain_support(const ::onnx::NodeProto& np, const std::string& name) const {
    const int since = domain_op_since(np.domain(), np.op_type());
    if (!since) unsupported("node '{}': unsupported operator {}::{}", name, np.domain(), np.op_type());
    auto it = domain_opsets_.find(np.domain());
    if (it == domain_opsets_.end())
      user_error("node '{}': the domain of {}::{} is not in the model's opset imports", name, np.domain(), np.op_type());
    if (it->second < since || it->second > INT_MAX)
      unsupported("node '{}': {}::{} at opset {} of its domain is not supported (kiln reads it from opset {})", name,
                  np.domain(), np.op_type(), it->second, since);
    OpSupport s;
    s.version = static_cast<int>(it->second);
    s.rewritten = true;
    return s;
  }

  // Kahn's algorithm, preferring the model's order among ready nodes. A dangling input or a cycle is
  // a user error naming the node and the value.
  std::vector<size_t> topological_order(OnnxGraphReader& b, const std::vector<PendingNode>& nodes) {
    std::unordered_map<std::string, size_t> producer;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const auto& out : nodes[i].proto->output())
        if (!out.empty()) producer.emplace(out, i);
    std::vector<std::vector<size_t>> users(nodes.size());
    std::vector<size_t> pending(nodes.size(), 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const auto& in : nodes[i].proto->input()) {
        if (in.empty() || b.find(in)) continue;  // omitted optional input, graph input or initializer
        auto it = producer.find(in);
        if (it == producer.end())
          user_error("node '{}' ({}): input '{}' is not produced by any node, nor a graph input or initializer",
                     nodes[i].name, nodes[i].proto->op_type(), in);
        users[it->second].push_back(i);
        ++pending[i];
      }
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    order.reserve(nodes.size());
    while (!ready.empty()) {
      size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.push(u);
    }
    if (order.size() == nodes.size()) return order;
    // Every node left has a left-over producer; walking producers from any of them must come back to
    // a node already seen, which lies on a cycle.
    auto stuck_input = [&](size_t i) -> std::pair<size_t, const std::string*> {
      for (const auto& in : nodes[i].proto->input()) {
        auto it = producer.find(in);
        if (it != producer.end() && pending[it->second] != 0) return {it->second, &in};
      }
      internal_error("onnx import: node '{}' left unsorted without a pending input", nodes[i].name);
    };
    size_t at = 0;
    while (pending[at] == 0) ++at;
    std::vector<char> seen(nodes.size(), 0);
    while (!seen[at]) {
      seen[at] = 1;
      at = stuck_input(at).first;
    }
    user_error("node '{}' ({}): input '{}' depends on the node's own output (the graph has a cycle)", nodes[at].name,
               nodes[at].proto->op_type(), *stuck_input(at).second);
  }

  void emit(OnnxGraphReader& b, const PendingNode& n) {
    std::string desc = fmt::format("node '{}' ({})", n.name, n.proto->op_type());
    NodeForm form;
    form.op_type = n.proto->op_type();
    if (!is_default_domain(n.proto->domain())) form.domain = n.proto->domain();
    form.version = n.support.version;
    form.name = n.name;
    form.attrs = convert_attributes(*n.proto, desc, options_, &external_);
    std::vector<ValueId>& inputs = form.inputs;
    for (const auto& in : n.proto->input()) {
      if (in.empty()) {
        inputs.push_back(kNoValue);
        continue;
      }
      auto id = b.find(in);
      if (!id) internal_error("onnx import: {} input '{}' unbound after sorting", desc, in);
      inputs.push_back(*id);
    }
    form.outputs.assign(n.proto->output().begin(), n.proto->output().end());
    add_canonical_node(b, std::move(form));
  }

  // value_info and graph outputs declare types of node outputs; inputs and constants keep their own.
  void declare(OnnxGraphReader& b, const ::onnx::ValueInfoProto& vi, const std::string& what, const std::string& fresh) {
    auto id = b.find(vi.name());
    if (!id) return;
    Value& v = b.graph().value(*id);
    if (v.producer < 0) return;
    auto type = declared_type(vi, what, fresh, false, options_);
    if (!type) return;
    v.type = std::move(*type);
    b.mark_typed(*id);
  }

  void add_declared_types(OnnxGraphReader& b) {
    const auto& g = model_.graph();
    for (int i = 0; i < g.value_info_size(); ++i)
      declare(b, g.value_info(i), fmt::format("value_info '{}'", g.value_info(i).name()), fmt::format("_vi{}", i));
  }

  void add_outputs(OnnxGraphReader& b) {
    const auto& g = model_.graph();
    if (g.output_size() == 0) user_error("the graph has no outputs");
    std::unordered_set<std::string> seen;
    for (int i = 0; i < g.output_size(); ++i) {
      const auto& out = g.output(i);
      std::string what = fmt::format("graph output '{}'", out.name());
      if (out.name().empty()) user_error("graph output {} has no name", i);
      if (!seen.insert(out.name()).second) user_error("{} is listed twice", what);
      auto id = b.find(out.name());
      if (!id) user_error("{} is not produced by any node, nor a graph input or initializer", what);
      declare(b, out, what, fmt::format("_out{}", i));
      b.graph().outputs.push_back(*id);
    }
  }

  const ::onnx::ModelProto& model_;
  const Options& options_;
  int64_t opset_ = 0;
  std::map<std::string, int64_t> domain_opsets_;  // of the domains other than the default one
  ExternalData external_;
  std::unordered_set<std::string> producers_;
};

}  // namespace

Graph import_onnx_model(const ::onnx::ModelProto& model, const std::filesystem::path& base_dir,
                        const Options& options) {
  return Importer(model, base_dir, options).run();
}

Graph import_onnx_bytes(std::string_view bytes, const std::filesystem::path& base_dir, const Options& options) {
  if (bytes.empty()) user_error("the model file is empty");
  if (static_cast<int64_t>(bytes.size()) > options.max_model_bytes)
    user_error("the model is {} bytes, over the limit of {} (max_model_bytes)", bytes.size(), options.max_model_bytes);
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    user_error("the model is {} bytes; protobuf files of 2 GiB or more are not supported (use external data)",
               bytes.size());
  ::onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    user_error("not a valid ONNX model: the protobuf does not parse (truncated or corrupt file)");
  // Bytes appended to a model usually parse as fields no ModelProto of a supported version has.
  if (!model.unknown_fields().empty())
    user_error("not a valid ONNX model: unknown top-level fields (trailing garbage, or a newer ONNX version)");
  return import_onnx_model(model, base_dir, options);
}

Graph import_onnx(const std::string& path, const Options& options) {
  std::string bytes = read_file_limited(path, options.max_model_bytes, "model");
  if (bytes.empty()) user_error("model '{}' is empty", path);
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  // Every message names the file: a user running several models must know which one is at fault.
  try {
    return import_onnx_bytes(bytes, dir.empty() ? std::filesystem::path(".") : dir, options);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(fmt::format("{}: {}", path, e.what()));
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace kiln
