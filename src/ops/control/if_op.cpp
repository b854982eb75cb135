// If: runs then_branch or else_branch by a one-element bool condition. The branches read the node's
// inputs after `cond` (the outer-scope values they use, captured at import) as their own inputs.
// An If whose condition is a constant is inlined before planning (passes/inline_constant_ifs.cpp);
// the others run here, the chosen branch node by node through run_node (eagerly, in every mode).
#include <set>

#include "ops/control/control_ops.h"
#include "ops/control/subgraph.h"

namespace kiln {
namespace {

const Graph& checked_branch(const InferContext& ctx, const char* attr) {
  const Graph& g = ctx.node().attr_graph(attr);
  if (g.inputs.size() + 1 != ctx.num_inputs())
    ctx.fail("{} reads {} values, but the node passes it {}", attr, g.inputs.size(), ctx.num_inputs() - 1);
  if (g.outputs.size() != ctx.node().outputs.size())
    ctx.fail("{} has {} outputs, but the node has {}", attr, g.outputs.size(), ctx.node().outputs.size());
  return g;
}

std::vector<TensorType> branch_types(InferContext& ctx, const Graph& g) {
  std::vector<const TensorType*> types;
  std::vector<const Tensor*> values;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    types.push_back(&ctx.in(i));
    values.push_back(ctx.value(i));
  }
  return control::infer_subgraph(g, types, values, ctx.max_rank());
}

// A dim both branches agree on stays; any other (sizes that differ, or a symbol made inside a branch)
// is a fresh symbol, known at run time only.
Dim merged_dim(InferContext& ctx, const Dim& a, const Dim& b, const std::set<std::string>& outer) {
  if (a.is_static() && b.is_static() && a.value == b.value) return a;
  if (!a.is_static() && a == b && outer.count(a.symbol)) return a;
  return ctx.fresh_dim();
}

std::vector<TensorType> infer_if(InferContext& ctx) {
  const TensorType& cond = ctx.in(0);
  if (cond.dtype != DType::boolean) ctx.fail("cond must be bool, is {}", type_string(cond));
  for (const Dim& d : cond.shape)
    if (d.is_static() && d.value != 1) ctx.fail("cond must hold one element, is {}", type_string(cond));
  const Graph& then_g = checked_branch(ctx, "then_branch");
  const Graph& else_g = checked_branch(ctx, "else_branch");
  const std::set<std::string> outer = control::outer_symbols(ctx);
  if (const Tensor* c = ctx.value(0)) {  // known (a constant, or at run time): the chosen branch's types
    if (c->numel() != 1) ctx.fail("cond must hold one element, has {}", c->numel());
    return control::with_outer_symbols(ctx, branch_types(ctx, c->as_double(0) != 0 ? then_g : else_g), outer);
  }
  std::vector<TensorType> t = branch_types(ctx, then_g), e = branch_types(ctx, else_g);
  std::vector<TensorType> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].dtype != e[i].dtype)
      ctx.fail("output {} is {} in then_branch but {} in else_branch", i, dtype_name(t[i].dtype), dtype_name(e[i].dtype));
    if (t[i].rank() != e[i].rank())
      ctx.unsupported("output {} has rank {} in then_branch but {} in else_branch (kiln needs one rank)", i,
                      t[i].rank(), e[i].rank());
    TensorType m{t[i].dtype, {}};
    for (size_t k = 0; k < t[i].shape.size(); ++k) m.shape.push_back(merged_dim(ctx, t[i].shape[k], e[i].shape[k], outer));
    out.push_back(std::move(m));
  }
  return out;
}

void kernel_if(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  const Tensor& cond = *in[0];
  const Graph& branch = node.attr_graph(cond.as_double(0) != 0 ? "then_branch" : "else_branch");
  std::vector<Tensor> results = control::run_subgraph(branch, in.subspan(1), control::subgraph_run_options(kc));
  // Copies: a result may be a view of an input or a branch constant, whose buffer the plan may reuse.
  for (size_t i = 0; i < out.size() && i < results.size(); ++i)
    if (node.outputs[i] != kNoValue) out[i] = results[i].clone();
}

}  // namespace

void register_if_op(OpRegistry& r) {
  OpDef def;
  def.infer = infer_if;
  def.kernel = kernel_if;
  def.kernel_makes_outputs = true;
  def.handles_half = true;  // the branch's nodes widen for themselves
  def.min_inputs = 1;
  def.max_inputs = -1;
  r.add(OpKind::If, def);
}

}  // namespace kiln
