#include "ops/node_runner.h"

#include <cmath>

#include "ops/common.h"
#include "support/checked_math.h"

namespace kiln {
namespace {

bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }

template <class To>
To convert_one(double v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != 0.0;
  } else if constexpr (std::is_integral_v<To>) {
    if (std::isnan(v)) return To{0};
    // Saturate instead of undefined behaviour on out-of-range values.
    if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (v <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace

Tensor convert_tensor(const Tensor& t, DType to) {
  Tensor out = Tensor::empty(to, t.shape());
  int64_t n = t.numel();
  if (t.dtype() == to) return t.clone();
  bool int_to_int = is_integer(t.dtype()) && is_integer(to);
  for (int64_t i = 0; i < n; ++i) {
    if (int_to_int) {  // exact, with two's-complement wrap like numpy's astype
      int64_t v = t.as_int64(i);
      switch (to) {
        case DType::i64: out.data<int64_t>()[i] = v; break;
        case DType::i32: out.data<int32_t>()[i] = static_cast<int32_t>(v); break;
        case DType::i8: out.data<int8_t>()[i] = static_cast<int8_t>(v); break;
        case DType::u8: out.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
        default: break;
      }
      continue;
    }
    double v = t.as_double(i);
    switch (to) {
      case DType::f32: out.data<float>()[i] = static_cast<float>(v); break;
      case DType::f64: out.data<double>()[i] = v; break;
      case DType::f16: out.data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
      case DType::bf16: out.data<uint16_t>()[i] = float_to_bf16(static_cast<float>(v)); break;
      case DType::i64: out.data<int64_t>()[i] = convert_one<int64_t>(v); break;
      case DType::i32: out.data<int32_t>()[i] = convert_one<int32_t>(v); break;
      case DType::i8: out.data<int8_t>()[i] = convert_one<int8_t>(v); break;
      case DType::u8: out.data<uint8_t>()[i] = convert_one<uint8_t>(v); break;
      case DType::boolean: out.data<bool>()[i] = convert_one<bool>(v); break;
    }
  }
  return out;
}

std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& inputs,
                             const NodeRunOptions& options) {
  const OpDef* def = op_registry().find(node.op);
  if (!def) unsupported("node '{}': operator {} is not supported", node.name, op_name(node.op));

  // f16/bf16: run in f32 and cast back, unless the op handles them itself.
  std::vector<Tensor> widened;
  std::vector<const Tensor*> in = inputs;
  DType half_type = DType::f32;
  bool widen = false;
  if (!def->handles_half) {
    widened.reserve(in.size());
    for (auto*& t : in)
      if (t && is_half(t->dtype())) {
        widen = true;
        half_type = t->dtype();
        widened.push_back(convert_tensor(*t, DType::f32));
        t = &widened.back();
      }
  }

  std::vector<TensorType> in_types(in.size());
  std::vector<const TensorType*> type_ptrs(in.size(), nullptr);
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) {
      in_types[i] = TensorType{in[i]->dtype(), shape_of(in[i]->shape())};
      type_ptrs[i] = &in_types[i];
    }
  int fresh = 0;
  InferContext ctx(node, type_ptrs, in, &fresh, options.max_rank);
  std::vector<TensorType> out_types = def->infer(ctx);
  if (out_types.size() < node.outputs.size())
    user_error("node '{}' ({}): has {} outputs, but the operator produces {}", node.name, op_name(node.op),
               node.outputs.size(), out_types.size());

  std::vector<Tensor> outs(node.outputs.size());
  if (!def->kernel_makes_outputs) {
    for (size_t i = 0; i < outs.size(); ++i) {
      if (node.outputs[i] == kNoValue) continue;
      const Shape& s = out_types[i].shape;
      KILN_INTERNAL_CHECK(is_static(s), "{}: run-time shape {} is not concrete", node.name, shape_string(s));
      std::vector<int64_t> dims = static_dims(s);
      int64_t bytes = checked_mul(checked_numel(dims, node.name), static_cast<int64_t>(dtype_size(out_types[i].dtype)),
                                  node.name);
      if (bytes > options.max_tensor_bytes)
        user_error("node '{}' ({}): output {} of {} bytes exceeds max_tensor_bytes ({})", node.name,
                   op_name(node.op), i, bytes, options.max_tensor_bytes);
      outs[i] = Tensor::empty(out_types[i].dtype, std::move(dims));
    }
  }
  def->kernel(node, in, outs, options.kernel);

  if (widen)
    for (auto& o : outs)
      if (o.defined() && o.dtype() == DType::f32) o = convert_tensor(o, half_type);
  return outs;
}

}  // namespace kiln
