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
      for (std::string& name : outer_names(graph_attribute(np, desc, attr), desc + " " + attr, depth_ + 1))
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
    for (const auto& in : n.proto->input()) form.inputs.push_back(in.empty() ? kNoValue : bound(b, in, desc));
    form.outputs.assign(n.proto->output().begin(), n.proto->output().end());
    add_canonical_node(b, std::move(form));
  }

  // The id of a name the node reads (bound: the nodes are sorted).
  static ValueId bound(const OnnxGraphReader& b, const std::string& name, const std::string& desc) {
    auto id = b.find(name);
    if (!id) internal_error("onnx import: {} reads '{}', unbound after sorting", desc, name);
    return *id;
  }

  // A subgraph node's canonical form: the ONNX attributes (subgraphs read by `read`), then the outer
  // values its subgraphs read appended to `inputs` (they become the subgraphs' inputs after their own).
  void add_subgraph_node(OnnxGraphReader& b, const PendingNode& n, const std::string& desc,
                         const SubgraphReader& read, std::vector<ValueId> inputs, AttrMap extra_attrs = {}) {
    NodeForm form;
    form.op_type = n.proto->op_type();
    form.version = n.support.version;
    form.name = n.name;
    form.attrs = convert_attributes(*n.proto, desc, options_, external_, &read);
    form.attrs.merge(extra_attrs);
    form.inputs = std::move(inputs);
    for (const std::string& name : n.outer) form.inputs.push_back(bound(b, name, desc));
    form.outputs.assign(n.proto->output().begin(), n.proto->output().end());
    add_canonical_node(b, std::move(form));
  }

  // An If: cond, then the outer values its branches read, which become the branches' inputs.
  void emit_if(OnnxGraphReader& b, const PendingNode& n, const std::string& desc) {
    check_if_node(*n.proto, desc);
    const SubgraphReader read = [&](const ::onnx::AttributeProto& a) {
      Importer branch(*this, a.g(), desc + " " + a.name());
      if (a.g().input_size())
        user_error("{} declares {} inputs; If branches take none (they read outer values by name)", branch.what_,
                   a.g().input_size());
      return std::make_shared<const Graph>(branch.read_subgraph(b, {}, {}, n.outer));
    };
    add_subgraph_node(b, n, desc, read, {bound(b, n.proto->input(0), desc)});
  }

  // Loop and Scan: the node's own inputs (an omitted optional one, M, cond or Scan-8's sequence_lens,
  // stays kNoValue), then the outer values the body reads; the attribute `captures` counts them (the
  // kernels find the carried values by it).
  void emit_body_node(OnnxGraphReader& b, const PendingNode& n, const std::string& desc) {
    const auto& np = *n.proto;
    std::vector<std::optional<ValueId>> own;  // the node's inputs; nullopt: omitted
    for (const std::string& name : np.input())
      own.push_back(name.empty() ? std::nullopt : std::optional<ValueId>(bound(b, name, desc)));
    const BodyInputs body = body_inputs(b, np, n.support.version, desc, own);
    const SubgraphReader read = [&](const ::onnx::AttributeProto& a) {
      Importer sub(*this, a.g(), desc + " " + a.name());
      return std::make_shared<const Graph>(sub.read_subgraph(b, body.types, body.typed, n.outer));
    };
    std::vector<ValueId> inputs;
    if (np.op_type() == "Scan" && n.support.version >= 9) inputs.push_back(kNoValue);  // kiln's Scan: sequence_lens first, always
    for (const auto& id : own) inputs.push_back(id.value_or(kNoValue));
    add_subgraph_node(b, n, desc, read, std::move(inputs),
                      {{"captures", Attribute{static_cast<int64_t>(n.outer.size())}}});
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
