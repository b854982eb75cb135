// CastLike(x, like) as Cast(x, to = like's element type) once types are inferred: the fusion passes and
// the CUDA backend know Cast (a pointwise node), CastLike only as an eager node of its own. Importer
// rewrites (ONNX function bodies, Attention) write CastLike wherever a type was not known at import.
#include "kiln/graph.h"
#include "passes/passes.h"

namespace kiln {

int cast_like_as_cast(Graph& g) {
  int rewritten = 0;
  for (Node& n : g.nodes) {
    if (n.op != OpKind::CastLike || n.inputs.size() != 2 || n.inputs[0] == kNoValue || n.inputs[1] == kNoValue)
      continue;
    const DType to = g.value(n.inputs[1]).type.dtype;
    n.op = OpKind::Cast;
    n.inputs.resize(1);  // its other attributes (saturate) mean the same to Cast
    n.attrs["to"] = Attribute{std::string(dtype_name(to))};
    ++rewritten;
  }
  return rewritten;
}

}  // namespace kiln
