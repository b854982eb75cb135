// Loop: runs `body` while the trip count M (input 0, optional) is not reached and cond (input 1,
// optional; then the body's output 0) holds. Inputs: M, cond, the loop-carried values, then the outer
// values the body reads (captured at import; attribute `captures` counts them). The body takes
// (iteration_num, cond, carried..., captures...) and makes (cond, carried..., scan outputs...); the node
// outputs the last carried values and each scan output stacked along a new axis 0. Like If, it runs as a
// node step in every mode: the body node by node through run_node, never fused.
#include <vector>

#include "ops/control/control_ops.h"
#include "ops/control/subgraph.h"

namespace kiln {
namespace {

struct LoopParts {
  const Graph* body;
  size_t carried;   // loop-carried values: inputs 2.., outputs 0..
  size_t captures;  // the outer values after them
};

LoopParts loop_parts(const Node& n, size_t inputs, const InferContext* ctx) {
  auto fail = [&](const std::string& what) {
    if (ctx) ctx->fail("{}", what);
    user_error("node '{}' (Loop): {}", n.name, what);
  };
  const int64_t captures = n.attr_int("captures", 0);
  if (inputs < 2) fail("needs inputs M and cond (either may be omitted), then the loop-carried values");
  if (captures < 0 || static_cast<size_t>(captures) > inputs - 2)
    fail(fmt::format("captures is {}, but the node has {} inputs after M and cond", captures, inputs - 2));
  const Graph& body = n.attr_graph("body");
  const size_t carried = inputs - 2 - static_cast<size_t>(captures);
  if (body.inputs.size() != inputs)
    fail(fmt::format("body takes {} inputs, but the node passes it {} (iteration_num, cond, {} loop-carried values, "
                     "{} outer values)", body.inputs.size(), inputs, carried, captures));
  if (body.outputs.size() != n.outputs.size() + 1)
    fail(fmt::format("body makes {} outputs, but the node has {} (the body makes cond, then one per node output)",
                     body.outputs.size(), n.outputs.size()));
  if (n.outputs.size() < carried)
    fail(fmt::format("has {} outputs, fewer than its {} loop-carried values", n.outputs.size(), carried));
  return {&body, carried, static_cast<size_t>(captures)};
}

// M and cond are one-element tensors of i64 and bool where present.
void check_scalar(const InferContext& ctx, size_t i, DType dtype, const char* what) {
  if (!ctx.has(i)) return;
  const TensorType& t = ctx.in(i);
  if (t.dtype != dtype) ctx.fail("{} must be {}, is {}", what, dtype_name(dtype), type_string(t));
  for (const Dim& d : t.shape)
    if (d.is_static() && d.value != 1) ctx.fail("{} must hold one element, is {}", what, type_string(t));
  if (const Tensor* v = ctx.value(i); v && v->numel() != 1) ctx.fail("{} must hold one element, has {}", what, v->numel());
}

// Whether the body passes its cond input through unchanged (or makes a constant true): then the loop
// ends only by its trip count.
bool body_keeps_cond(const Graph& body) {
  ValueId v = body.outputs[0];
  for (int hops = 0; hops <= static_cast<int>(body.nodes.size()); ++hops) {
    if (v == body.inputs[1]) return true;
    const Value& val = body.value(v);
    if (val.constant) return val.constant->numel() == 1 && val.constant->as_double(0) != 0;
    if (val.producer < 0) return false;
    const Node& p = body.nodes[static_cast<size_t>(val.producer)];
    if (p.op != OpKind::Identity || !p.has_input(0)) return false;
    v = p.inputs[0];
  }
  return false;
}

// The number of iterations where it is known before running: M a constant, and cond absent, a
// constant false, or a constant true that the body keeps.
std::optional<int64_t> known_trip_count(const InferContext& ctx, const Graph& body) {
  if (ctx.has(1)) {
    const Tensor* c = ctx.value(1);
    if (!c) return std::nullopt;
    if (c->as_double(0) == 0) return 0;
    if (!body_keeps_cond(body)) return std::nullopt;
  }
  if (!ctx.has(0) || !ctx.value(0)) return std::nullopt;
  return std::max<int64_t>(0, ctx.value(0)->as_int64(0));
}

std::vector<TensorType> infer_loop(InferContext& ctx) {
  const LoopParts p = loop_parts(ctx.node(), ctx.num_inputs(), &ctx);
  check_scalar(ctx, 0, DType::i64, "M (the trip count)");
  check_scalar(ctx, 1, DType::boolean, "cond");
  const std::set<std::string> outer = control::outer_symbols(ctx);
  std::vector<TensorType> types(ctx.num_inputs());
  std::vector<const Tensor*> values(ctx.num_inputs(), nullptr);
  types[0] = TensorType{DType::i64, {}};
  types[1] = TensorType{DType::boolean, {}};
  for (size_t i = 2; i < ctx.num_inputs(); ++i) types[i] = ctx.in(i);
  // Only the captures keep their values: the carried ones change from one iteration to the next.
  for (size_t i = 2 + p.carried; i < ctx.num_inputs(); ++i) values[i] = ctx.value(i);
  const control::CarriedTypes c =
      control::infer_carried(ctx, *p.body, types, values, 2, 1, p.carried, "loop-carried value");
  const std::vector<TensorType>& out = c.outputs;
  if (out[0].dtype != DType::boolean) ctx.fail("body output 0 (cond) must be bool, is {}", type_string(out[0]));
  std::vector<TensorType> result;
  for (size_t k = 0; k < p.carried; ++k) {
    TensorType t = types[2 + k];
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (c.loose[k][d]) t.shape[d] = ctx.fresh_dim();  // the last iteration's size, not the body's input's
    result.push_back(std::move(t));
  }
  std::vector<TensorType> scans(out.begin() + 1 + static_cast<std::ptrdiff_t>(p.carried), out.end());
  scans = control::with_outer_symbols(ctx, std::move(scans), outer);
  const std::optional<int64_t> trips = known_trip_count(ctx, *p.body);
  for (TensorType& t : scans) {
    if (t.rank() + 1 > ctx.max_rank()) ctx.fail("scan output of rank {} exceeds max_rank {}", t.rank() + 1, ctx.max_rank());
    t.shape.insert(t.shape.begin(), trips ? Dim::fixed(*trips) : ctx.fresh_dim());
    result.push_back(std::move(t));
  }
  return result;
}

void kernel_loop(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  const LoopParts p = loop_parts(node, in.size(), nullptr);
  const Graph& body = *p.body;
  const bool counted = in[0] != nullptr, conditional = in[1] != nullptr;
  const int64_t trips = counted ? in[0]->as_int64(0) : 0;
  bool cond = conditional ? in[1]->as_double(0) != 0 : true;
  std::vector<Tensor> carried;
  for (size_t k = 0; k < p.carried; ++k) carried.push_back(*in[2 + k]);
  const size_t num_scans = node.outputs.size() - p.carried;
  std::vector<std::vector<Tensor>> scans(num_scans);
  int64_t scan_bytes = 0;
  const NodeRunOptions run = control::subgraph_run_options(kc);
  Tensor iteration = Tensor::scalar<int64_t>(DType::i64, 0), cond_in = Tensor::scalar<int>(DType::boolean, 1);
  std::vector<const Tensor*> body_in(in.size());
  body_in[0] = &iteration;
  body_in[1] = &cond_in;
  for (size_t c = 2 + p.carried; c < in.size(); ++c) body_in[c] = in[c];
  int64_t i = 0;
  for (; (!counted || i < trips) && (!conditional || cond); ++i) {
    if (i >= kc.max_loop_iterations)
      user_error("node '{}' (Loop): still running after {} iterations, the limit (setting max_loop_iterations); its "
                 "trip count and cond do not end it", node.name, kc.max_loop_iterations);
    *iteration.data<int64_t>() = i;
    *cond_in.data<bool>() = cond;
    for (size_t k = 0; k < p.carried; ++k) body_in[2 + k] = &carried[k];
    std::vector<Tensor> results = control::run_subgraph(body, body_in, run);
    if (results[0].numel() != 1)
      user_error("node '{}' (Loop): the body's cond output must hold one element, has {} (iteration {})", node.name,
                 results[0].numel(), i);
    cond = results[0].as_double(0) != 0;
    for (size_t k = 0; k < p.carried; ++k) carried[k] = std::move(results[1 + k]);
    for (size_t j = 0; j < num_scans; ++j) {
      Tensor& t = results[1 + p.carried + j];
      if (!scans[j].empty() && (t.shape() != scans[j][0].shape() || t.dtype() != scans[j][0].dtype()))
        user_error("node '{}' (Loop): scan output {} is {} {} in iteration {} but {} {} in iteration 0 (every iteration "
                   "must give the same shape)", node.name, j, dtype_name(t.dtype()), t.shape_string(), i,
                   dtype_name(scans[j][0].dtype()), scans[j][0].shape_string());
      scan_bytes += static_cast<int64_t>(t.nbytes());
      if (scan_bytes > kc.max_tensor_bytes)
        user_error("node '{}' (Loop): its scan outputs exceed max_tensor_bytes ({}) after {} iterations", node.name,
                   kc.max_tensor_bytes, i + 1);
      scans[j].push_back(t.clone());  // a view of a carried value or a body constant must not alias
    }
  }
  // Copies: a result may be an input or a body constant, whose buffer the plan may reuse.
  for (size_t k = 0; k < p.carried; ++k)
    if (node.outputs[k] != kNoValue) out[k] = carried[k].clone();
  if (!num_scans) return;
  // No iteration: each scan output is [0, ...], its element type and sizes from the body's inference.
  std::vector<TensorType> empty_types;
  if (i == 0) {
    std::vector<TensorType> types(in.size());
    std::vector<const TensorType*> ptrs;
    std::vector<const Tensor*> values(in.size(), nullptr);
    types[0] = TensorType{DType::i64, {}};
    types[1] = TensorType{DType::boolean, {}};
    for (size_t c = 2; c < in.size(); ++c) types[c] = TensorType{in[c]->dtype(), shape_of(in[c]->shape())};
    for (size_t c = 2 + p.carried; c < in.size(); ++c) values[c] = in[c];
    for (const TensorType& t : types) ptrs.push_back(&t);
    empty_types = control::infer_subgraph(body, ptrs, values, kc.max_rank);
  }
  for (size_t j = 0; j < num_scans; ++j) {
    if (node.outputs[p.carried + j] == kNoValue) continue;
    if (!scans[j].empty()) {
      out[p.carried + j] = control::stack(scans[j], scans[j][0].dtype(), scans[j][0].shape());
      continue;
    }
    const TensorType& t = empty_types[1 + p.carried + j];
    std::vector<int64_t> dims;
    for (const Dim& d : t.shape) dims.push_back(d.is_static() ? d.value : 0);
    out[p.carried + j] = control::stack({}, t.dtype, dims);
  }
}

}  // namespace

void register_loop_op(OpRegistry& r) {
  OpDef def;
  def.infer = infer_loop;
  def.kernel = kernel_loop;
  def.kernel_makes_outputs = true;
  def.handles_half = true;  // the body's nodes widen for themselves
  def.min_inputs = 2;
  def.max_inputs = -1;
  r.add(OpKind::Loop, def);
}

}  // namespace kiln
