#include "backend/group_shapes.h"

#include "support/error.h"

namespace kiln::backend {

GroupShapes::GroupShapes(const Graph& g, const GeneratedGroup& group, std::string kernel,
                         std::vector<std::string> symbol_names)
    : kernel_(std::move(kernel)),
      output_(g.value(group.output).type),
      sources_(group.symbols),
      symbol_names_(std::move(symbol_names)) {
  for (ValueId v : group.inputs) inputs_.push_back({g.value(v).name, g.value(v).type.shape});
  KILN_INTERNAL_CHECK(symbol_names_.size() == sources_.size(), "kernel {}: {} symbols, {} sources", kernel_,
                      symbol_names_.size(), sources_.size());
}

GroupShapes::Bound GroupShapes::bind(const std::vector<const Tensor*>& ins) const {
  Bound b;
  for (size_t k = 0; k < sources_.size(); ++k) {
    const int64_t v = ins[size_t(sources_[k].input)]->dim(sources_[k].dim);
    b.symbols.push_back(v);
    b.by_name[symbol_names_[k]] = v;
  }
  auto size_of = [&](const Dim& d) { return d.is_static() ? d.value : b.by_name.at(d.symbol); };
  for (size_t i = 0; i < ins.size(); ++i) {
    const Shape& want = inputs_[i].shape;
    bool same = static_cast<size_t>(ins[i]->rank()) == want.size();
    for (size_t d = 0; same && d < want.size(); ++d) same = ins[i]->dim(static_cast<int>(d)) == size_of(want[d]);
    if (!same)
      user_error("fused kernel '{}': input '{}' has shape {}, but the model's shapes say {}", kernel_, inputs_[i].name,
                 ins[i]->shape_string(), shape_string(want));
  }
  for (const Dim& d : output_.shape) b.output_dims.push_back(size_of(d));
  return b;
}

}  // namespace kiln::backend
