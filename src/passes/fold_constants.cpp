#include <algorithm>

#include "ops/node_runner.h"
#include "passes/passes.h"
#include "support/checked_math.h"

namespace kiln {
namespace {

// Bytes a value would take, or -1 when its shape is not static; an overflow names the node.
int64_t static_bytes(const Graph& g, const Node& n, const TensorType& t) {
  if (!is_static(t.shape)) return -1;
  std::string what = g.describe(n) + ": output " + type_string(t);
  return checked_mul(checked_numel(static_dims(t.shape), what), static_cast<int64_t>(dtype_size(t.dtype)), what);
}

bool foldable(const Graph& g, const Node& n, int64_t budget) {
  // Every output omitted: nothing to fold into (the node is dead; remove_dead drops it). Its kernel would
  // write to outputs nobody allocated.
  if (std::all_of(n.outputs.begin(), n.outputs.end(), [](ValueId o) { return o == kNoValue; })) return false;
  for (ValueId o : n.outputs) {
    if (o == kNoValue) continue;
    int64_t bytes = static_bytes(g, n, g.value(o).type);
    if (bytes < 0 || bytes > budget) return false;
  }
  if (n.op == OpKind::Shape || n.op == OpKind::Size)  // only the input's shape matters
    return is_static(g.value(n.inputs[0]).type.shape);
  if (n.op == OpKind::CastLike)  // only the element type of `like` matters
    return n.inputs.size() == 2 && n.inputs[0] != kNoValue && n.inputs[1] != kNoValue && g.value(n.inputs[0]).constant;
  for (ValueId v : n.inputs)
    if (v != kNoValue && !g.value(v).constant) return false;
  return true;
}

}  // namespace

bool fold_node(Graph& g, Node& n, const Options& options) {
  if (!foldable(g, n, options.constant_fold_bytes)) return false;
  NodeRunOptions run;
  run.kernel.threads = 1;
  run.max_rank = options.max_rank;
  run.max_tensor_bytes = options.max_tensor_bytes;
  run.max_loop_iterations = options.max_loop_iterations;
  std::vector<const Tensor*> ins;
  Tensor placeholder;
  for (ValueId v : n.inputs) {
    if (v == kNoValue) {
      ins.push_back(nullptr);
    } else if (g.value(v).constant) {
      ins.push_back(g.value(v).constant.get());
    } else {  // Shape/Size of a static value, CastLike's `like`: any tensor of that type will do, without data
      const TensorType& t = g.value(v).type;
      placeholder = Tensor::wrap(t.dtype, is_static(t.shape) ? static_dims(t.shape) : std::vector<int64_t>{}, nullptr,
                                 nullptr);
      ins.push_back(&placeholder);
    }
  }
  std::vector<Tensor> outs = run_node(n, ins, run);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i] == kNoValue) continue;
    Value& v = g.value(n.outputs[i]);
    v.constant = std::make_shared<const Tensor>(outs[i].clone());  // own the bytes (outputs may be views)
    v.type = TensorType{outs[i].dtype(), shape_of(outs[i].shape())};
    v.producer = -1;
  }
  n.outputs.assign(n.outputs.size(), kNoValue);  // the node is now dead; remove_dead drops it
  return true;
}

}  // namespace kiln
