#include "ops/node_runner.h"

#include <cmath>
#include <cstring>

#include "ops/common.h"
#include "ops/elementwise/elementwise.h"
#include "support/checked_math.h"

namespace kiln {
namespace {


}  // namespace

// One conversion for the whole of kiln: Cast's (single rounding, NaN to 0, saturating).
Tensor convert_tensor(const Tensor& t, DType to) { return elementwise::convert_elements(t, to, /*parallel=*/true); }

std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& inputs,
                             const NodeRunOptions& options, std::vector<Tensor>* preallocated) {
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
      if (preallocated && i < preallocated->size() && (*preallocated)[i].raw() && !widen) {
        Tensor& given = (*preallocated)[i];
        KILN_INTERNAL_CHECK(given.dtype() == out_types[i].dtype && given.shape() == dims,
                            "{}: planned buffer {} {} does not fit output {} {}", node.name, dtype_name(given.dtype()),
                            given.shape_string(), dtype_name(out_types[i].dtype), shape_string(s));
        std::memset(given.raw(), 0, given.nbytes());
        outs[i] = given;
        continue;
      }
      int64_t bytes = checked_mul(checked_numel(dims, node.name), static_cast<int64_t>(dtype_size(out_types[i].dtype)),
                                  node.name);
      if (bytes > options.max_tensor_bytes)
        user_error("node '{}' ({}): output {} of {} bytes exceeds max_tensor_bytes ({})", node.name,
                   op_name(node.op), i, bytes, options.max_tensor_bytes);
      outs[i] = Tensor::empty(out_types[i].dtype, std::move(dims));
    }
  }
  KernelContext kernel = options.kernel;
  kernel.max_rank = options.max_rank;
  kernel.max_tensor_bytes = options.max_tensor_bytes;
  kernel.max_loop_iterations = options.max_loop_iterations;
  def->kernel(node, in, outs, kernel);

  if (widen)
    for (auto& o : outs)
      if (o.defined() && o.dtype() == DType::f32) o = convert_tensor(o, half_type);
  return outs;
}

}  // namespace kiln
