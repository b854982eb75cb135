// Scan: runs `body` once per entry of the scan inputs along their axes, carrying state variables.
// kiln's Scan (9 and later; 8 read by an adapter): inputs sequence_lens (Scan-8's, else omitted), the N
// state variables, the num_scan_inputs scan inputs, then the outer values the body reads (captured at
// import; attribute `captures` counts them). The body takes (states..., slices..., captures...) and
// makes (states..., scan outputs...); the node outputs the last states and each scan output stacked
// along its axis. batch_major = 1 is Scan-8: inputs and outputs carry a leading batch axis, each batch
// entry is scanned on its own along axis 1 for its sequence_lens entry (the rest of its scan outputs
// zeros). Like Loop, a node step in every mode: the body runs node by node through run_node.
#include <cstring>
#include <vector>

#include "ops/control/control_ops.h"
#include "ops/control/subgraph.h"

namespace kiln {
namespace {

struct ScanParts {
  const Graph* body;
  bool batch_major;
  size_t states, scans, captures, outputs;  // outputs: the scan outputs
  std::vector<int64_t> in_dirs, out_dirs, in_axes, out_axes;  // axes not yet normalised
};

ScanParts scan_parts(const Node& n, size_t inputs, const InferContext* ctx) {
  auto fail = [&](const std::string& what) {
    if (ctx) ctx->fail("{}", what);
    user_error("node '{}' (Scan): {}", n.name, what);
  };
  ScanParts p;
  p.body = &n.attr_graph("body");
  p.batch_major = n.attr_int("batch_major", 0) != 0;
  const int64_t scans = n.attr_int("num_scan_inputs", 0), captures = n.attr_int("captures", 0);
  if (inputs < 1) fail("needs at least one scan input");
  if (captures < 0 || static_cast<size_t>(captures) > inputs - 1)
    fail(fmt::format("captures is {}, but the node has {} inputs after sequence_lens", captures, inputs - 1));
  const size_t given = inputs - 1 - static_cast<size_t>(captures);
  if (scans < 1 || static_cast<size_t>(scans) > given)
    fail(fmt::format("num_scan_inputs must be 1 to {} (its inputs), is {}", given, scans));
  p.scans = static_cast<size_t>(scans);
  p.captures = static_cast<size_t>(captures);
  p.states = given - p.scans;
  if (p.body->inputs.size() != inputs - 1)
    fail(fmt::format("body takes {} inputs, but the node passes it {} ({} state variables, {} scan inputs, {} outer "
                     "values)", p.body->inputs.size(), inputs - 1, p.states, p.scans, p.captures));
  if (p.body->outputs.size() != n.outputs.size())
    fail(fmt::format("body makes {} outputs, but the node has {}", p.body->outputs.size(), n.outputs.size()));
  if (n.outputs.size() < p.states)
    fail(fmt::format("has {} outputs, fewer than its {} state variables", n.outputs.size(), p.states));
  p.outputs = n.outputs.size() - p.states;
  auto list = [&](const char* attr, size_t count) {
    std::vector<int64_t> v = n.attr_ints(attr, std::vector<int64_t>(count, 0));
    if (v.size() != count) fail(fmt::format("{} has {} entries, but there are {}", attr, v.size(), count));
    return v;
  };
  p.in_dirs = list("scan_input_directions", p.scans);
  p.out_dirs = list("scan_output_directions", p.outputs);
  p.in_axes = list("scan_input_axes", p.scans);
  p.out_axes = list("scan_output_axes", p.outputs);
  for (const auto* dirs : {&p.in_dirs, &p.out_dirs})
    for (int64_t d : *dirs)
      if (d != 0 && d != 1) fail(fmt::format("a direction is {} (0: forward, 1: reverse)", d));
  if (p.batch_major)
    for (const auto* axes : {&p.in_axes, &p.out_axes, &p.out_dirs})
      for (int64_t a : *axes)
        if (a != 0) fail("Scan-8's form (batch_major) takes no axes nor output directions");
  return p;
}

// `axis` of a tensor of `rank` (negative from the end), or a user error.
int normalised_axis(const Node& n, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    user_error("node '{}' (Scan): {} is {}, out of range for rank {}", n.name, what, axis, rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<TensorType> infer_scan(InferContext& ctx) {
  const Node& n = ctx.node();
  const ScanParts p = scan_parts(n, ctx.num_inputs(), &ctx);
  const size_t first_scan = 1 + p.states, batch = p.batch_major ? 1 : 0;
  if (ctx.has(0)) {
    if (!p.batch_major) ctx.fail("sequence_lens is Scan-8's input only");
    const TensorType& t = ctx.in(0);
    if (t.dtype != DType::i64 || t.rank() != 1) ctx.fail("sequence_lens must be a 1-D i64 tensor, is {}", type_string(t));
  }
  const std::set<std::string> outer = control::outer_symbols(ctx);
  // The body's inputs: the states (less the batch axis), the scan inputs less their axis, the captures.
  std::vector<TensorType> types;
  std::vector<const Tensor*> values;
  std::optional<Dim> length, batch_dim;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    TensorType t = ctx.in(i);
    values.push_back(nullptr);
    if (i >= first_scan + p.scans) {  // a capture keeps its value
      values.back() = ctx.value(i);
    } else if (batch) {
      if (t.rank() < (i >= first_scan ? 2 : 1))
        ctx.fail("input {} ({}) lacks Scan-8's batch axis{}", i, type_string(t), i >= first_scan ? " and sequence axis" : "");
      if (!batch_dim) batch_dim = t.shape[0];
      if (batch_dim->is_static() && t.shape[0].is_static() && batch_dim->value != t.shape[0].value)
        ctx.fail("input {} has a batch of {}, another input {}", i, t.shape[0].value, batch_dim->value);
      t.shape.erase(t.shape.begin());
    }
    if (i >= first_scan && i < first_scan + p.scans) {
      const size_t s = i - first_scan;
      const int axis = normalised_axis(n, batch ? 0 : p.in_axes[s], t.rank(), fmt::format("scan_input_axes[{}]", s));
      const Dim d = t.shape[size_t(axis)];
      if (!length || (!length->is_static() && d.is_static())) length = d;
      else if (length->is_static() && d.is_static() && length->value != d.value)
        ctx.fail("scan input {} has {} entries along its axis, scan input 0 has {}", s, d.value, length->value);
      t.shape.erase(t.shape.begin() + axis);
    }
    types.push_back(std::move(t));
  }
  const control::CarriedTypes c = control::infer_carried(ctx, *p.body, types, values, 0, 0, p.states, "state variable");
  std::vector<TensorType> result;
  for (size_t k = 0; k < p.states; ++k) {
    TensorType t = types[k];
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (c.loose[k][d]) t.shape[d] = ctx.fresh_dim();
    if (batch) t.shape.insert(t.shape.begin(), *batch_dim);
    result.push_back(std::move(t));
  }
  std::vector<TensorType> outs(c.outputs.begin() + static_cast<std::ptrdiff_t>(p.states), c.outputs.end());
  outs = control::with_outer_symbols(ctx, std::move(outs), outer);
  for (size_t j = 0; j < outs.size(); ++j) {
    TensorType& t = outs[j];
    if (t.rank() + 1 + static_cast<int>(batch) > ctx.max_rank())
      ctx.fail("scan output {} of rank {} exceeds max_rank {}", j, t.rank() + 1 + batch, ctx.max_rank());
    const int axis = normalised_axis(n, p.out_axes[j], t.rank() + 1, fmt::format("scan_output_axes[{}]", j));
    t.shape.insert(t.shape.begin() + axis, *length);
    if (batch) t.shape.insert(t.shape.begin(), *batch_dim);
    result.push_back(std::move(t));
  }
  return result;
}

struct ScanRun {
  std::vector<Tensor> states;
  std::vector<Tensor> outputs;
};

// One scan over `length` entries: scan input s read along axis in_axes[s] (normalised); the scan
// outputs stacked along their axes (normalised against the body output's rank + 1).
ScanRun run_scan(const Node& node, const ScanParts& p, std::vector<Tensor> states, const std::vector<const Tensor*>& xs,
                 const std::vector<int>& in_axes, int64_t length, std::span<const Tensor* const> captures,
                 const KernelContext& kc) {
  const Graph& body = *p.body;
  if (length > kc.max_loop_iterations)
    user_error("node '{}' (Scan): {} iterations, over the limit of {} (setting max_loop_iterations)", node.name, length,
               kc.max_loop_iterations);
  const NodeRunOptions run = control::subgraph_run_options(kc);
  std::vector<std::vector<Tensor>> parts(p.outputs);
  std::vector<Tensor> slices(p.scans);
  std::vector<const Tensor*> body_in(p.states + p.scans + p.captures);
  for (size_t c = 0; c < p.captures; ++c) body_in[p.states + p.scans + c] = captures[c];
  int64_t bytes = 0;
  for (int64_t t = 0; t < length; ++t) {
    for (size_t k = 0; k < p.states; ++k) body_in[k] = &states[k];
    for (size_t s = 0; s < p.scans; ++s) {
      slices[s] = control::slice_axis(*xs[s], in_axes[s], p.in_dirs[s] ? length - 1 - t : t);
      body_in[p.states + s] = &slices[s];
    }
    std::vector<Tensor> results = control::run_subgraph(body, body_in, run);
    for (size_t k = 0; k < p.states; ++k) states[k] = std::move(results[k]);
    for (size_t j = 0; j < p.outputs; ++j) {
      Tensor& r = results[p.states + j];
      if (!parts[j].empty() && (r.shape() != parts[j][0].shape() || r.dtype() != parts[j][0].dtype()))
        user_error("node '{}' (Scan): scan output {} is {} {} in iteration {} but {} {} in iteration 0 (every iteration "
                   "must give the same shape)", node.name, j, dtype_name(r.dtype()), r.shape_string(), t,
                   dtype_name(parts[j][0].dtype()), parts[j][0].shape_string());
      bytes += static_cast<int64_t>(r.nbytes());
      if (bytes > kc.max_tensor_bytes)
        user_error("node '{}' (Scan): its scan outputs exceed max_tensor_bytes ({})", node.name, kc.max_tensor_bytes);
      parts[j].push_back(r.clone());
    }
  }
  ScanRun out;
  for (Tensor& s : states) out.states.push_back(s.clone());
  std::vector<TensorType> empty_types;
  if (length == 0 && p.outputs) {  // the scan outputs' element types and other sizes from the body's inference
    std::vector<TensorType> types;
    std::vector<const TensorType*> ptrs;
    std::vector<const Tensor*> values(body_in.size(), nullptr);
    for (const Tensor& s : states) types.push_back(TensorType{s.dtype(), shape_of(s.shape())});
    for (size_t s = 0; s < p.scans; ++s) {
      std::vector<int64_t> dims = xs[s]->shape();
      dims.erase(dims.begin() + in_axes[s]);
      types.push_back(TensorType{xs[s]->dtype(), shape_of(dims)});
    }
    for (size_t c = 0; c < p.captures; ++c) {
      types.push_back(TensorType{captures[c]->dtype(), shape_of(captures[c]->shape())});
      values[p.states + p.scans + c] = captures[c];
    }
    for (const TensorType& t : types) ptrs.push_back(&t);
    empty_types = control::infer_subgraph(body, ptrs, values, kc.max_rank);
  }
  for (size_t j = 0; j < p.outputs; ++j) {
    DType dtype;
    std::vector<int64_t> shape;
    if (!parts[j].empty()) {
      dtype = parts[j][0].dtype();
      shape = parts[j][0].shape();
    } else {
      dtype = empty_types[p.states + j].dtype;
      for (const Dim& d : empty_types[p.states + j].shape) shape.push_back(d.is_static() ? d.value : 0);
    }
    const int axis = normalised_axis(node, p.out_axes[j], static_cast<int64_t>(shape.size()) + 1,
                                     fmt::format("scan_output_axes[{}]", j));
    out.outputs.push_back(control::stack(parts[j], dtype, shape, axis, p.out_dirs[j] != 0));
  }
  return out;
}

void kernel_scan(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  const ScanParts p = scan_parts(node, in.size(), nullptr);
  const size_t first_scan = 1 + p.states;
  std::span<const Tensor* const> captures = in.subspan(first_scan + p.scans);
  auto put = [&](const ScanRun& r) {
    for (size_t k = 0; k < p.states; ++k)
      if (node.outputs[k] != kNoValue) out[k] = r.states[k];
    for (size_t j = 0; j < p.outputs; ++j)
      if (node.outputs[p.states + j] != kNoValue) out[p.states + j] = r.outputs[j];
  };
  if (!p.batch_major) {
    std::vector<Tensor> states;
    for (size_t k = 0; k < p.states; ++k) states.push_back(*in[1 + k]);
    std::vector<const Tensor*> xs(in.begin() + static_cast<std::ptrdiff_t>(first_scan),
                                  in.begin() + static_cast<std::ptrdiff_t>(first_scan + p.scans));
    std::vector<int> axes;
    int64_t length = -1;
    for (size_t s = 0; s < p.scans; ++s) {
      axes.push_back(normalised_axis(node, p.in_axes[s], xs[s]->rank(), fmt::format("scan_input_axes[{}]", s)));
      const int64_t len = xs[s]->dim(axes.back());
      if (length >= 0 && len != length)
        user_error("node '{}' (Scan): scan input {} has {} entries along its axis, scan input 0 has {}", node.name, s,
                   len, length);
      length = len;
    }
    return put(run_scan(node, p, std::move(states), xs, axes, length, captures, kc));
  }
  // Scan-8: each batch entry on its own, along axis 1 of the scan inputs (0 of the entry).
  const int64_t batch = in[first_scan]->dim(0), seq = in[first_scan]->dim(1);
  for (size_t i = 1; i < first_scan + p.scans; ++i)
    if (in[i]->dim(0) != batch || (i >= first_scan && in[i]->dim(1) != seq))
      user_error("node '{}' (Scan): input {} is {}, but scan input 0 is {} (batch, sequence)", node.name, i,
                 in[i]->shape_string(), in[first_scan]->shape_string());
  if (batch == 0) unsupported("node '{}' (Scan): a batch of 0 (Scan-8's form)", node.name);
  if (in[0] && in[0]->numel() != batch)
    user_error("node '{}' (Scan): sequence_lens has {} entries for a batch of {}", node.name, in[0]->numel(), batch);
  std::vector<std::vector<Tensor>> states(p.states), outputs(p.outputs);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = in[0] ? in[0]->as_int64(b) : seq;
    if (len < 0 || len > seq)
      user_error("node '{}' (Scan): sequence_lens[{}] is {}, outside 0..{}", node.name, b, len, seq);
    std::vector<Tensor> st;
    for (size_t k = 0; k < p.states; ++k) st.push_back(control::slice_axis(*in[1 + k], 0, b));
    std::vector<Tensor> entries;
    for (size_t s = 0; s < p.scans; ++s) entries.push_back(control::slice_axis(*in[first_scan + s], 0, b));
    // Only the first `len` entries are scanned (the reverse direction starts at len - 1).
    std::vector<Tensor> heads;
    std::vector<const Tensor*> xs;
    for (Tensor& e : entries) {
      std::vector<Tensor> rows;
      for (int64_t t = 0; t < len; ++t) rows.push_back(control::slice_axis(e, 0, t));
      std::vector<int64_t> row_shape(e.shape().begin() + 1, e.shape().end());
      heads.push_back(control::stack(rows, e.dtype(), row_shape));
    }
    for (const Tensor& h : heads) xs.push_back(&h);
    ScanRun r = run_scan(node, p, std::move(st), xs, std::vector<int>(p.scans, 0), len, captures, kc);
    for (size_t k = 0; k < p.states; ++k) states[k].push_back(std::move(r.states[k]));
    for (size_t j = 0; j < p.outputs; ++j) {  // padded with zeros to the full sequence
      Tensor& o = r.outputs[j];
      std::vector<int64_t> dims = o.shape();
      dims[0] = seq;
      Tensor padded = Tensor::empty(o.dtype(), dims);
      std::memset(padded.raw(), 0, padded.nbytes());
      if (o.nbytes()) std::memcpy(padded.raw(), o.raw(), o.nbytes());
      outputs[j].push_back(std::move(padded));
    }
  }
  ScanRun all;
  for (size_t k = 0; k < p.states; ++k)
    all.states.push_back(control::stack(states[k], in[1 + k]->dtype(),
                                        std::vector<int64_t>(in[1 + k]->shape().begin() + 1, in[1 + k]->shape().end())));
  for (size_t j = 0; j < p.outputs; ++j) {
    all.outputs.push_back(control::stack(outputs[j], outputs[j][0].dtype(), outputs[j][0].shape()));
  }
  put(all);
}

}  // namespace

void register_scan_op(OpRegistry& r) {
  OpDef def;
  def.infer = infer_scan;
  def.kernel = kernel_scan;
  def.kernel_makes_outputs = true;
  def.handles_half = true;  // the body's nodes widen for themselves
  def.min_inputs = 2;
  def.max_inputs = -1;
  r.add(OpKind::Scan, def);
}

}  // namespace kiln
