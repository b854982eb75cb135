#include "ops/registry.h"

namespace kiln {

const TensorType& InferContext::in(size_t i) const {
  if (!has(i)) fail("required input {} is missing", i);
  return *in_[i];
}

Dim InferContext::fresh_dim(int64_t hint) { return Dim::sym(fmt::format("_d{}", (*fresh_)++), hint); }

void OpRegistry::add(OpKind op, OpDef def) {
  size_t i = static_cast<size_t>(op);
  KILN_INTERNAL_CHECK(def.infer && def.kernel, "op {} registered without inference or kernel", op_name(op));
  defs_[i] = def;  // registering twice replaces with the same definition: idempotent
  present_[i] = true;
}

const OpDef* OpRegistry::find(OpKind op) const {
  size_t i = static_cast<size_t>(op);
  return present_[i] ? &defs_[i] : nullptr;
}

}  // namespace kiln
