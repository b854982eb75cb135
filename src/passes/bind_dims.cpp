#include "passes/passes.h"
#include "support/error.h"

namespace kiln {

void bind_dims(Graph& g, const std::map<std::string, int64_t>& sizes) {
  if (sizes.empty()) return;
  for (const auto& [name, size] : sizes)
    if (size < 0) user_error("--dim {}={}: a size must be non-negative", name, size);
  for (Value& v : g.values)
    for (Dim& d : v.type.shape)
      if (!d.is_static())
        if (auto it = sizes.find(d.symbol); it != sizes.end()) d = Dim::fixed(it->second);
}

}  // namespace kiln
