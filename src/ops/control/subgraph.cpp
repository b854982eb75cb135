#include "ops/control/subgraph.h"

#include <cstring>
#include <map>

#include "support/checked_math.h"

namespace kiln::control {

std::vector<TensorType> infer_subgraph(const Graph& g, const std::vector<const TensorType*>& types,
                                       const std::vector<const Tensor*>& values, int64_t max_rank) {
  KILN_INTERNAL_CHECK(types.size() == g.inputs.size() && values.size() == g.inputs.size(),
                      "subgraph '{}': {} inputs given, it has {}", g.name, types.size(), g.inputs.size());
  Graph copy = g;
  for (size_t i = 0; i < types.size(); ++i) {
    Value& v = copy.value(copy.inputs[i]);
    KILN_INTERNAL_CHECK(types[i] != nullptr, "subgraph '{}': input {} has no type", g.name, i);
    v.type = *types[i];
    // Borrowed for this call only: value-dependent sizes (a captured shape) stay exact.
    if (values[i]) v.constant = std::shared_ptr<const Tensor>(std::shared_ptr<const Tensor>{}, values[i]);
  }
  int fresh = first_fresh_symbol(copy);
  for (Node& n : copy.nodes) infer_node_types(copy, n, &fresh, max_rank);
  std::vector<TensorType> out;
  for (ValueId v : copy.outputs) out.push_back(copy.value(v).type);
  return out;
}

std::vector<Tensor> run_subgraph(const Graph& g, std::span<const Tensor* const> inputs, const NodeRunOptions& options) {
  KILN_INTERNAL_CHECK(inputs.size() == g.inputs.size(), "subgraph '{}': {} inputs given, it has {}", g.name,
                      inputs.size(), g.inputs.size());
  std::vector<Tensor> vals(g.values.size());
  std::vector<char> have(g.values.size(), 0);
  auto set = [&](ValueId v, Tensor t) {
    vals[size_t(v)] = std::move(t);
    have[size_t(v)] = 1;
  };
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant) set(static_cast<ValueId>(v), *g.values[v].constant);
  for (size_t i = 0; i < inputs.size(); ++i) set(g.inputs[i], *inputs[i]);
  for (const Node& n : g.nodes) {
    std::vector<const Tensor*> ins;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        ins.push_back(nullptr);
        continue;
      }
      KILN_INTERNAL_CHECK(have[size_t(v)], "subgraph '{}': {} reads a value not computed before it", g.name, g.describe(n));
      ins.push_back(&vals[size_t(v)]);
    }
    std::vector<Tensor> outs = run_node(n, ins, options);
    for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i)
      if (n.outputs[i] != kNoValue) set(n.outputs[i], std::move(outs[i]));
  }
  std::vector<Tensor> out;
  for (ValueId v : g.outputs) {
    KILN_INTERNAL_CHECK(have[size_t(v)], "subgraph '{}': output '{}' was not computed", g.name, g.value(v).name);
    out.push_back(vals[size_t(v)]);
  }
  return out;
}

std::set<std::string> outer_symbols(const InferContext& ctx) {
  std::set<std::string> s;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has(i))
      for (const Dim& d : ctx.in(i).shape)
        if (!d.is_static()) s.insert(d.symbol);
  return s;
}

std::vector<TensorType> with_outer_symbols(InferContext& ctx, std::vector<TensorType> types,
                                           const std::set<std::string>& outer) {
  std::map<std::string, Dim> renamed;
  for (TensorType& t : types)
    for (Dim& d : t.shape) {
      if (d.is_static() || outer.count(d.symbol)) continue;
      auto it = renamed.find(d.symbol);
      if (it == renamed.end()) it = renamed.emplace(d.symbol, ctx.fresh_dim(d.hint)).first;
      d = it->second;
    }
  return types;
}

NodeRunOptions subgraph_run_options(const KernelContext& kc) {
  NodeRunOptions run;
  run.kernel = kc;
  run.max_rank = kc.max_rank;
  run.max_tensor_bytes = kc.max_tensor_bytes;
  run.max_loop_iterations = kc.max_loop_iterations;
  return run;
}

CarriedTypes infer_carried(InferContext& ctx, const Graph& body, std::vector<TensorType>& types,
                           const std::vector<const Tensor*>& values, size_t in_first, size_t out_first, size_t count,
                           const char* what) {
  const std::set<std::string> outer = outer_symbols(ctx);
  CarriedTypes r;
  r.loose.resize(count);
  for (size_t k = 0; k < count; ++k) r.loose[k].assign(types[in_first + k].shape.size(), 0);
  // Each round loosens at least one dim or ends: the rounds end.
  while (true) {
    std::vector<const TensorType*> ptrs;
    for (const TensorType& t : types) ptrs.push_back(&t);
    r.outputs = infer_subgraph(body, ptrs, values, ctx.max_rank());
    bool changed = false;
    for (size_t k = 0; k < count; ++k) {
      TensorType& have = types[in_first + k];
      const TensorType& got = r.outputs[out_first + k];
      if (got.dtype != have.dtype)
        ctx.fail("{} {} goes into the body as {} but comes out {}", what, k, dtype_name(have.dtype), dtype_name(got.dtype));
      if (got.rank() != have.rank())
        ctx.unsupported("{} {} goes into the body with rank {} but comes out with rank {} (kiln needs one rank)", what, k,
                        have.rank(), got.rank());
      for (size_t d = 0; d < have.shape.size(); ++d) {
        const Dim &a = have.shape[d], &b = got.shape[d];
        const bool same = (a.is_static() && b.is_static() && a.value == b.value) ||
                          (!a.is_static() && a == b && outer.count(a.symbol));
        if (r.loose[k][d] || same) continue;
        have.shape[d] = ctx.fresh_dim();
        r.loose[k][d] = 1;
        changed = true;
      }
    }
    if (!changed) return r;
  }
}

Tensor stack(const std::vector<Tensor>& parts, DType dtype, const std::vector<int64_t>& shape, int axis, bool reverse) {
  KILN_INTERNAL_CHECK(axis >= 0 && static_cast<size_t>(axis) <= shape.size(), "stack: axis {} of rank {}", axis,
                      shape.size());
  std::vector<int64_t> dims = shape;
  const int64_t n = static_cast<int64_t>(parts.size());
  dims.insert(dims.begin() + axis, n);
  Tensor out = Tensor::empty(dtype, dims);
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(dtype));
  for (int d = 0; d < axis; ++d) outer *= shape[size_t(d)];
  for (size_t d = size_t(axis); d < shape.size(); ++d) inner *= shape[d];
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t t = 0; t < n; ++t) {
    const Tensor& p = parts[size_t(t)];
    KILN_INTERNAL_CHECK(p.dtype() == dtype && p.shape() == shape, "stack: a part of {} {} among {} {}",
                        dtype_name(p.dtype()), p.shape_string(), dtype_name(dtype), shape_string(shape_of(shape)));
    const int64_t at = reverse ? n - 1 - t : t;
    const auto* src = static_cast<const char*>(p.raw());
    for (int64_t o = 0; o < outer && inner; ++o)
      std::memcpy(dst + (o * n + at) * inner, src + o * inner, static_cast<size_t>(inner));
  }
  return out;
}

Tensor slice_axis(const Tensor& t, int axis, int64_t index) {
  std::vector<int64_t> dims = t.shape();
  KILN_INTERNAL_CHECK(axis >= 0 && axis < t.rank() && index >= 0 && index < dims[size_t(axis)],
                      "slice_axis: entry {} of axis {} of {}", index, axis, t.shape_string());
  const int64_t len = dims[size_t(axis)];
  dims.erase(dims.begin() + axis);
  Tensor out = Tensor::empty(t.dtype(), dims);
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(t.dtype()));
  for (int d = 0; d < axis; ++d) outer *= t.shape()[size_t(d)];
  for (int d = axis + 1; d < t.rank(); ++d) inner *= t.shape()[size_t(d)];
  const auto* src = static_cast<const char*>(t.raw());
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer && inner; ++o)
    std::memcpy(dst + o * inner, src + (o * len + index) * inner, static_cast<size_t>(inner));
  return out;
}

}  // namespace kiln::control
