// Dropout whose ratio or training_mode is known only at run time (the importer reads the others as
// Identity): exact where it does nothing random, training_mode false or ratio 0 (the output is the
// input, the mask all true); any other ratio in training mode drops at random, which kiln does not do.
#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

std::vector<TensorType> infer_dropout(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!ctx.has(i)) continue;
    const TensorType& t = ctx.in(i);
    const bool ok = i == 1 ? is_float(t.dtype) : t.dtype == DType::boolean;
    if (!ok) ctx.fail("{} must be {}, is {}", i == 1 ? "ratio" : "training_mode", i == 1 ? "a float" : "bool", type_string(t));
    for (const Dim& d : t.shape)
      if (d.is_static() && d.value != 1) ctx.fail("input {} must hold one element, is {}", i, type_string(t));
  }
  if (const Tensor* r = ctx.value(1); r && r->numel() == 1 && !(r->as_double(0) >= 0 && r->as_double(0) < 1))
    ctx.fail("ratio is {}, outside [0, 1)", r->as_double(0));
  return {x, TensorType{DType::boolean, x.shape}};
}

void kernel_dropout(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const bool training = in.size() > 2 && in[2] && in[2]->as_double(0) != 0;
  if (training) {
    const double ratio = in.size() > 1 && in[1] ? in[1]->as_double(0) : 0.5;  // ONNX's default ratio
    if (ratio != 0)
      unsupported("node '{}' (Dropout): training_mode is true and ratio is {} (random dropout is not supported; kiln "
                  "runs Dropout in training mode only with ratio 0)", node.name, ratio);
  }
  out[0] = in[0]->clone();
  if (out.size() > 1 && node.outputs[1] != kNoValue) {
    out[1] = Tensor::empty(DType::boolean, in[0]->shape());
    std::memset(out[1].raw(), 1, out[1].nbytes());
  }
}

}  // namespace

void register_dropout_op(OpRegistry& r) {
  OpDef d;
  d.infer = infer_dropout;
  d.kernel = kernel_dropout;
  d.kernel_makes_outputs = true;
  d.handles_half = true;  // a copy
  d.min_inputs = 1;
  d.max_inputs = 3;
  r.add(OpKind::Dropout, d);
}

}  // namespace kiln::shape_ops
