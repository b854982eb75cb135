#include "onnx/import.h"

#include <algorithm>
#include <climits>
#include <map>
#include <memory>
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
  std::vector<std::string> outer;  // an If's: the names its branches read from this graph or above
};

bool is_if(const ::onnx::NodeProto& n) { return is_default_domain(n.domain()) && n.op_type() == "If"; }
// Loop and Scan: one subgraph, `body`, with inputs of its own (iteration number, cond, carried values;
// state variables and scan slices) before the outer values it reads.
bool has_body(const ::onnx::NodeProto& n) {
  return is_default_domain(n.domain()) && (n.op_type() == "Loop" || n.op_type() == "Scan");
}

// A branch attribute of an If, or a user error.
const ::onnx::GraphProto& branch_of(const ::onnx::NodeProto& n, const std::string& desc, const char* attr) {
  for (const auto& a : n.attribute())
    if (a.name() == attr) {
      if (a.type() != ::onnx::AttributeProto::GRAPH || !a.has_g())
        user_error("{}: attribute '{}' must be a graph", desc, attr);
      return a.g();
    }
  user_error("{}: has no attribute '{}'", desc, attr);
}

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, const std::filesystem::path& base_dir, const Options& options)
      : model_(model), options_(options), own_external_(std::make_unique<ExternalData>(base_dir)),
        external_(own_external_.get()) {}

  Graph run() {
    int64_t opset = checked_opset(model_);
    if (!model_.has_graph()) user_error("model has no graph");
    const auto& g = model_.graph();
    graph_ = &g;
    if (g.node_size() > options_.max_nodes)
      user_error("model has {} nodes, over the limit of {} (max_nodes)", g.node_size(), options_.max_nodes);
    if (g.sparse_initializer_size()) unsupported("sparse initializers are not supported");

    Graph graph;
    opset_ = opset;
    domain_opsets_ = other_domain_opsets(model_);
    OnnxGraphReader b(graph, options_, opset);
    add_initializers(b);
    add_inputs(b);
    read_body(b);
    return graph;
  }

 private:
  // An If branch's importer: the model's opsets and external data, a scope of its own.
  Importer(const Importer& parent, const ::onnx::GraphProto& g, std::string what)
      : model_(parent.model_), options_(parent.options_), external_(parent.external_), graph_(&g),
        opset_(parent.opset_), domain_opsets_(parent.domain_opsets_), depth_(parent.depth_ + 1), what_(std::move(what)) {}

  void read_body(OnnxGraphReader& b) {
    std::vector<PendingNode> nodes = check_nodes(b);
    for (size_t i : topological_order(b, nodes)) emit(b, nodes[i]);
    add_declared_types(b);
    add_outputs(b);
  }

  // A subgraph as a kiln graph whose inputs are its own declared ones, typed `own_types` (Loop's and
  // Scan's body; If's branches have none), then `captures` (the node's outer names, the same list for
  // both of If's branches); the captures this graph reads itself are bound to them, the others stay
  // unnamed in it. `typed[i]`: own input i's rank can be trusted by rewrites.
  Graph read_subgraph(OnnxGraphReader& outer, const std::vector<TensorType>& own_types, const std::vector<bool>& typed,
                      const std::vector<std::string>& captures) {
    const auto& g = *graph_;
    if (static_cast<size_t>(g.input_size()) != own_types.size())
      internal_error("onnx import: {} declares {} inputs, {} typed", what_, g.input_size(), own_types.size());
    if (g.node_size() > options_.max_nodes)
      user_error("{} has {} nodes, over the limit of {} (max_nodes)", what_, g.node_size(), options_.max_nodes);
    if (g.sparse_initializer_size()) unsupported("{}: sparse initializers are not supported", what_);
    std::vector<std::string> own_list = outer_names(g, what_, depth_);
    std::unordered_set<std::string> own(own_list.begin(), own_list.end());
    Graph graph;
    graph.name = g.name().empty() ? (own_types.empty() ? "branch" : "body") : g.name();
    OnnxGraphReader b(graph, options_, opset_);
    for (size_t i = 0; i < own_types.size(); ++i) {
      const std::string& name = g.input(static_cast<int>(i)).name();
      if (name.empty()) user_error("{}: input {} has no name", what_, i);
      claim(b, name, fmt::format("{} > graph input '{}'", what_, name));
      ValueId in = graph.add_value(name, own_types[i]);
      graph.inputs.push_back(in);
      b.bind(name, in);
      if (typed[i]) b.mark_typed(in);
    }
    for (const std::string& name : captures) {
      auto id = outer.find(name);
      if (!id) internal_error("onnx import: {} captures '{}', which is unbound", what_, name);
      ValueId in = graph.add_value(name, outer.graph().value(*id).type);
      graph.inputs.push_back(in);
      if (!own.count(name)) continue;
      b.bind(name, in);
      b.reserve_name(name);
      if (outer.known_rank(*id)) b.mark_typed(in);
    }
    add_initializers(b);
    read_body(b);
    return graph;
  }

  // Every name a value gets in the model must be new.
  void claim(OnnxGraphReader& b, const std::string& name, const std::string& what) {
    if (!producers_.insert(name).second) user_error("{}: value name '{}' is defined twice", what, name);
    b.reserve_name(name);
  }

  void add_initializers(OnnxGraphReader& b) {
    for (const auto& init : graph_->initializer()) {
      std::string what = fmt::format("initializer '{}'", init.name());
      if (init.name().empty()) user_error("an initializer has no name");
      claim(b, init.name(), what);
      Tensor t = tensor_from_proto(init, options_, external_, what);
      b.bind(init.name(), b.graph().add_constant(init.name(), std::move(t)));
    }
  }

  // Graph inputs that are also initializers are constants (old exporters list weights as inputs).
  void add_inputs(OnnxGraphReader& b) {
    const auto& g = *graph_;
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
    const auto& g = *graph_;
    nodes.reserve(static_cast<size_t>(g.node_size()));
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& np = g.node(i);
      std::string name = node_name(np, i);
      if (!is_default_domain(np.domain())) {
        nodes.push_back(PendingNode{&np, other_domain_support(np, name), std::move(name), {}});
        for (const auto& out : np.output())
          if (!out.empty()) claim(b, out, fmt::format("node '{}' ({}::{})", nodes.back().name, np.domain(), np.op_type()));
        continue;
      }
      OpSupport support = check_op_support(np.op_type(), opset_, name);
      std::string desc = fmt::format("{}node '{}' ({})", depth_ ? what_ + " > " : "", name, np.op_type());
      for (const auto& out : np.output())
        if (!out.empty()) claim(b, out, desc);
      nodes.push_back(PendingNode{&np, support, std::move(name), {}});
      if (is_if(np)) nodes.back().outer = subgraph_outer_names(np, desc, {"then_branch", "else_branch"});
      if (has_body(np)) nodes.back().outer = subgraph_outer_names(np, desc, {"body"});
    }
    return nodes;
  }

  // What a node's subgraphs read from outside them: the union of their outer names (both of If's
  // branches, Loop's or Scan's body).
  std::vector<std::string> subgraph_outer_names(const ::onnx::NodeProto& np, const std::string& desc,
                                                std::initializer_list<const char*> attrs) const {
    std::vector<std::string> names;
    std::unordered_set<std::string> seen;
    for (const char* attr : attrs)
      for (std::string& name : outer_names(branch_of(np, desc, attr), desc + " " + attr, depth_ + 1))
        if (seen.insert(name).second) names.push_back(std::move(name));
    return names;
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
  // The names a node reads: its inputs, and for an If what its branches read from outside them.
  static std::vector<std::string> reads(const PendingNode& n) {
    std::vector<std::string> names(n.proto->input().begin(), n.proto->input().end());
    names.insert(names.end(), n.outer.begin(), n.outer.end());
    return names;
  }

  std::vector<size_t> topological_order(OnnxGraphReader& b, const std::vector<PendingNode>& nodes) {
    std::unordered_map<std::string, size_t> producer;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const auto& out : nodes[i].proto->output())
        if (!out.empty()) producer.emplace(out, i);
    std::vector<std::vector<size_t>> users(nodes.size());
    std::vector<size_t> pending(nodes.size(), 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const auto& in : reads(nodes[i])) {
        if (in.empty() || b.find(in)) continue;  // omitted optional input, graph input or initializer
        auto it = producer.find(in);
        if (it == producer.end() && !nodes[i].outer.empty() &&
            std::find(nodes[i].outer.begin(), nodes[i].outer.end(), in) != nodes[i].outer.end())
          user_error("{}node '{}' ({}): a branch reads '{}', which no node, graph input or initializer defines here "
                     "or in an enclosing graph", depth_ ? what_ + " > " : "", nodes[i].name, nodes[i].proto->op_type(), in);
        if (it == producer.end())
          user_error("{}node '{}' ({}): input '{}' is not produced by any node, nor a graph input or initializer",
                     depth_ ? what_ + " > " : "", nodes[i].name, nodes[i].proto->op_type(), in);
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
    auto stuck_input = [&](size_t i) -> std::pair<size_t, std::string> {
      for (const auto& in : reads(nodes[i])) {
        auto it = producer.find(in);
        if (it != producer.end() && pending[it->second] != 0) return {it->second, in};
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
               nodes[at].proto->op_type(), stuck_input(at).second);
  }

  void emit(OnnxGraphReader& b, const PendingNode& n) {
    std::string desc = fmt::format("{}node '{}' ({})", depth_ ? what_ + " > " : "", n.name, n.proto->op_type());
    if (is_if(*n.proto)) return emit_if(b, n, desc);
    if (has_body(*n.proto)) return emit_body_node(b, n, desc);
    NodeForm form;
    form.op_type = n.proto->op_type();
    if (!is_default_domain(n.proto->domain())) form.domain = n.proto->domain();
    form.version = n.support.version;
    form.name = n.name;
    form.attrs = convert_attributes(*n.proto, desc, options_, external_);
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

  // An If: cond, then the outer values its branches read, which become the branches' inputs.
  void emit_if(OnnxGraphReader& b, const PendingNode& n, const std::string& desc) {
    const auto& np = *n.proto;
    if (np.input_size() != 1 || np.input(0).empty()) user_error("{}: needs exactly one input, cond", desc);
    for (const auto& a : np.attribute())
      if (a.name() != "then_branch" && a.name() != "else_branch")
        user_error("{}: has attribute '{}', which If does not have", desc, a.name());
    const ::onnx::GraphProto& then_g = branch_of(np, desc, "then_branch");
    const ::onnx::GraphProto& else_g = branch_of(np, desc, "else_branch");
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
    const SubgraphReader read = [&](const ::onnx::AttributeProto& a) {
      Importer branch(*this, a.g(), desc + " " + a.name());
      if (a.g().input_size())
        user_error("{} declares {} inputs; If branches take none (they read outer values by name)", branch.what_,
                   a.g().input_size());
      return std::make_shared<const Graph>(branch.read_subgraph(b, {}, {}, n.outer));
    };
    NodeForm form;
    form.op_type = np.op_type();
    form.version = n.support.version;
    form.name = n.name;
    form.attrs = convert_attributes(np, desc, options_, external_, &read);
    auto cond = b.find(np.input(0));
    if (!cond) internal_error("onnx import: {} input '{}' unbound after sorting", desc, np.input(0));
    form.inputs.push_back(*cond);
    for (const std::string& name : n.outer) {
      auto id = b.find(name);
      if (!id) internal_error("onnx import: {} reads '{}', unbound after sorting", desc, name);
      form.inputs.push_back(*id);
    }
    form.outputs.assign(np.output().begin(), np.output().end());
    add_canonical_node(b, std::move(form));
  }

  // Loop and Scan: the node's own inputs (an omitted optional one, M, cond or Scan-8's sequence_lens,
  // stays kNoValue), then the outer values the body reads, which become the body's inputs after its
  // own; the attribute `captures` counts them (the kernels find the carried values by it).
  void emit_body_node(OnnxGraphReader& b, const PendingNode& n, const std::string& desc) {
    const auto& np = *n.proto;
    const bool loop = np.op_type() == "Loop";
    const int version = n.support.version;
    std::unordered_set<std::string> allowed{"body"};
    if (!loop) allowed.insert({"num_scan_inputs"});
    if (!loop && version == 8) allowed.insert("directions");
    if (!loop && version >= 9)
      allowed.insert({"scan_input_directions", "scan_output_directions", "scan_input_axes", "scan_output_axes"});
    for (const auto& a : np.attribute())
      if (!allowed.count(a.name())) user_error("{}: has attribute '{}', which {}-{} does not have", desc, a.name(), np.op_type(), version);
    const ::onnx::GraphProto& body = branch_of(np, desc, "body");
    if (np.output_size() == 0) user_error("{}: has no outputs ({} makes at least one)", desc, np.op_type());
    std::vector<std::optional<ValueId>> own;  // the node's inputs; nullopt: omitted
    for (int i = 0; i < np.input_size(); ++i) {
      if (np.input(i).empty()) {
        own.push_back(std::nullopt);
        continue;
      }
      auto id = b.find(np.input(i));
      if (!id) internal_error("onnx import: {} input '{}' unbound after sorting", desc, np.input(i));
      own.push_back(*id);
    }
    // The body's own inputs: where the node's input k feeds body input j (types from it), or a fixed type.
    std::vector<TensorType> types;
    std::vector<bool> typed;
    std::vector<bool> known_types;  // the element type is known (not a placeholder)
    auto from_node = [&](size_t k, int drop_dims, const std::string& what) {
      if (k >= own.size() || !own[k]) user_error("{}: {} is omitted, but it is not optional", desc, what);
      const Value& v = b.graph().value(*own[k]);
      const int j = static_cast<int>(types.size());
      // The element type where known; else the body's declaration, checked when the node is inferred.
      auto dtype = b.known_dtype(*own[k]);
      if (!dtype && j < body.input_size())
        if (auto t = declared_type(body.input(j), desc + " body input", "_body", false, options_)) dtype = t->dtype;
      TensorType t{dtype.value_or(v.type.dtype), {}};
      const bool known = b.known_rank(*own[k]).has_value();
      if (known && v.type.rank() < drop_dims) user_error("{}: {} has rank {}, too low to scan", desc, what, v.type.rank());
      // Sizes may change from one iteration to the next: only the element type and rank are kept.
      for (int d = drop_dims; d < v.type.rank(); ++d) t.shape.push_back(Dim::sym(fmt::format("_body{}_{}", j, d - drop_dims)));
      types.push_back(std::move(t));
      typed.push_back(known);
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
      types.push_back(TensorType{DType::i64, {}});
      types.push_back(TensorType{DType::boolean, {}});
      typed.insert(typed.end(), {true, true});
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
                             false, options_);
      if (t && known_types[size_t(j)] && t->dtype != types[size_t(j)].dtype)
        user_error("{}: body input {} ('{}') is declared {}, but the node gives it {}", desc, j, body.input(j).name(),
                   dtype_name(t->dtype), dtype_name(types[size_t(j)].dtype));
    }
    const SubgraphReader read = [&](const ::onnx::AttributeProto& a) {
      Importer sub(*this, a.g(), desc + " " + a.name());
      return std::make_shared<const Graph>(sub.read_subgraph(b, types, typed, n.outer));
    };
    NodeForm form;
    form.op_type = np.op_type();
    form.version = version;
    form.name = n.name;
    form.attrs = convert_attributes(np, desc, options_, external_, &read);
    form.attrs["captures"] = Attribute{static_cast<int64_t>(n.outer.size())};
    if (!loop && version >= 9) form.inputs.push_back(kNoValue);  // kiln's Scan: sequence_lens first, always
    for (const auto& id : own) form.inputs.push_back(id ? *id : kNoValue);
    for (const std::string& name : n.outer) {
      auto id = b.find(name);
      if (!id) internal_error("onnx import: {} reads '{}', unbound after sorting", desc, name);
      form.inputs.push_back(*id);
    }
    form.outputs.assign(np.output().begin(), np.output().end());
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
    const auto& g = *graph_;
    for (int i = 0; i < g.value_info_size(); ++i)
      declare(b, g.value_info(i), fmt::format("value_info '{}'", g.value_info(i).name()), fmt::format("_vi{}", i));
  }

  void add_outputs(OnnxGraphReader& b) {
    const auto& g = *graph_;
    if (g.output_size() == 0) user_error("{} has no outputs", what_);
    std::unordered_set<std::string> seen;
    for (int i = 0; i < g.output_size(); ++i) {
      const auto& out = g.output(i);
      std::string what = fmt::format("{}graph output '{}'", depth_ ? what_ + " > " : "", out.name());
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
  std::unique_ptr<ExternalData> own_external_;  // the top-level importer's; branches share it
  ExternalData* external_;
  const ::onnx::GraphProto* graph_ = nullptr;  // the graph this importer reads (the model's, or a branch)
  int64_t opset_ = 0;
  std::map<std::string, int64_t> domain_opsets_;  // of the domains other than the default one
  int depth_ = 0;                    // 0: the model's graph; n: a branch nested n deep
  std::string what_ = "the graph";   // names this graph in messages
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
