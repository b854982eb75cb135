// --precision bf16 / fp16: the model's f32 values narrowed to a half type (passes.h says what changes).
#include <cmath>
#include <limits>

#include "passes/cast_node.h"
#include "passes/passes.h"
#include "support/error.h"

namespace kiln {
namespace {

// The largest finite value and the smallest positive (subnormal) one of a half type.
float max_finite(DType t) { return t == DType::f16 ? 65504.0f : 3.38953139e38f; }
float min_positive(DType t) { return t == DType::f16 ? 5.96046448e-08f : std::numeric_limits<float>::denorm_min(); }

// `t` (f32) as `to`, each finite value clamped into the type's range first (NaN and +-Inf stay). In
// parallel: a model's weights are most of a --precision prepare (bert: 532 MB of f32 took 0.5 s on one
// thread). Each element is its own, so the bytes do not depend on the thread count.
Tensor narrow_tensor(const Tensor& t, DType to) {
  Tensor out = Tensor::empty(to, t.shape());
  const float* src = t.data<float>();
  uint16_t* dst = out.data<uint16_t>();
  const int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > (int64_t{1} << 16))
  for (int64_t i = 0; i < n; ++i) {
    float v = src[i];
    if (std::isfinite(v)) {
      const float mag = std::fabs(v);
      if (mag > max_finite(to)) v = std::copysign(max_finite(to), v);
      else if (mag != 0 && mag < min_positive(to)) v = std::copysign(min_positive(to), v);
    }
    dst[i] = to == DType::bf16 ? float_to_bf16(v) : float_to_half(v);
  }
  return out;
}

// Inputs ONNX types apart from the data (tensor(float) whatever T is): they keep f32.
bool keeps_f32(const Node& n, size_t input) {
  switch (n.op) {
    case OpKind::Resize: return input == 1 || input == 2;  // roi, scales
    default: return false;
  }
}

}  // namespace

void narrow_floats(Graph& g, const Options& options, DType to) {
  KILN_INTERNAL_CHECK(is_half(to), "narrow_floats to {}", dtype_name(to));
  for (const Node& n : g.nodes)  // its subgraphs would stay f32 while the values they read narrow
    if (n.op == OpKind::If || n.op == OpKind::Loop || n.op == OpKind::Scan)
      unsupported("{}: --precision {} does not narrow {} subgraphs", g.describe(n), dtype_name(to),
                  n.op == OpKind::If ? "If branches" : std::string(op_name(n.op)) + " bodies");
  const std::string suffix = "_" + std::string(dtype_name(to));
  const size_t original_values = g.values.size();
  std::vector<char> is_input(original_values, 0), is_output(original_values, 0), keep(original_values, 0);
  for (ValueId v : g.inputs) is_input[size_t(v)] = 1;
  for (ValueId v : g.outputs) is_output[size_t(v)] = 1;
  for (const Node& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.has_input(i) && keeps_f32(n, i)) keep[size_t(n.inputs[i])] = 1;

  // Where the model's f32 interface meets the narrowed graph: a Cast after each f32 input, before
  // each f32 output; every other reader of such a value reads the narrowed one (read_as).
  std::vector<ValueId> read_as(original_values);
  for (size_t v = 0; v < original_values; ++v) read_as[v] = static_cast<ValueId>(v);
  std::vector<Node> entry, exit;
  for (ValueId v : g.inputs) {
    if (g.value(v).type.dtype != DType::f32 || keep[size_t(v)]) continue;  // an output too: it leaves as it came
    const TensorType type{to, g.value(v).type.shape};
    const ValueId narrowed = g.add_value(g.value(v).name + suffix, type);
    entry.push_back(cast_node(v, narrowed, to, g.value(v).name + suffix));
    read_as[size_t(v)] = narrowed;
  }
  for (Node& n : g.nodes) {
    for (ValueId& out : n.outputs) {
      if (out == kNoValue || !is_output[size_t(out)] || g.value(out).type.dtype != DType::f32) continue;
      const TensorType type{to, g.value(out).type.shape};
      const ValueId narrowed = g.add_value(g.value(out).name + suffix, type);
      exit.push_back(cast_node(narrowed, out, DType::f32, g.value(out).name + "_f32"));
      read_as[size_t(out)] = narrowed;
      out = narrowed;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.has_input(i) && !keeps_f32(n, i)) n.inputs[i] = read_as[size_t(n.inputs[i])];
    if (n.op == OpKind::Cast && n.attr_string("to", "") == dtype_name(DType::f32))
      n.attrs["to"] = Attribute{std::string(dtype_name(to))};
    if (n.op == OpKind::Constant) {  // value_float(s) would make an f32 constant: a tensor of `to`
      if (n.has_attr("value_float"))
        n.attrs = {{"value", Attribute{Tensor::scalar<float>(DType::f32, static_cast<float>(n.attr_float("value_float", 0)))}}};
      else if (n.has_attr("value_floats")) {
        std::vector<float> v;
        for (double x : n.attr_floats("value_floats")) v.push_back(static_cast<float>(x));
        n.attrs = {{"value", Attribute{Tensor::from_vector<float>(DType::f32, {int64_t(v.size())}, v)}}};
      }
    }
    if (n.op == OpKind::ConstantOfShape && !n.has_attr("value"))  // the default is an f32 zero
      n.attrs["value"] = Attribute{Tensor::from_vector<float>(DType::f32, {1}, {0.0f})};
    for (auto& [name, attr] : n.attrs)  // Constant / ConstantOfShape values
      if (auto* t = std::get_if<Tensor>(&attr.value); t && t->dtype() == DType::f32) attr.value = narrow_tensor(*t, to);
  }
  for (size_t v = 0; v < original_values; ++v) {
    Value& val = g.values[v];
    if (val.type.dtype != DType::f32 || keep[v] || is_input[v] || is_output[v]) continue;
    val.type.dtype = to;
    if (val.constant) val.constant = std::make_shared<const Tensor>(narrow_tensor(*val.constant, to));
  }

  std::vector<Node> nodes = std::move(entry);
  for (Node& n : g.nodes) nodes.push_back(std::move(n));
  for (Node& n : exit) nodes.push_back(std::move(n));
  g.set_nodes(std::move(nodes));
  infer_shapes(g, options);
}

}  // namespace kiln
