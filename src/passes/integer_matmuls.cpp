// QDQ products as integer products: ONNX Runtime's quantize_static writes each quantized MatMul as
// MatMul(DequantizeLinear(a, sa, za), DequantizeLinear(w, sw)) with an 8-bit activation a (one scale and
// zero point) and a constant i8 weight w (zero point 0, symmetric; one scale, or one per column). The
// product is exact in integers: sa * sw[n] * sum_k (a - za)[m, k] * w[k, n], the form ONNX Runtime runs
// (MatMulIntegerToFloat). Rewritten as Mul(Cast<f32>(MatMulInteger(a, w, za)), sa * sw), the backend
// runs an 8-bit product with i32 sums (oneDNN's VNNI kernels on the CPU) on the weight's 8-bit bytes,
// which must not have been folded into f32 yet: the pass runs before inference and folding (it reads only
// constants and the element types Casts name), on the DequantizeLinear arithmetic the importer writes
// (onnx/import_rewrites_quantize.cpp):
//   CastLike(Mul(Sub(Cast<f32>(q), Cast<f32>(zero point)), Cast<f32>(scale)), scale)
// with Reshapes around per-axis parameters. The result differs from the float product by its rounding
// only (the f32 sums of the dequantized operands against the exact sum scaled once); scales that are not
// finite, or whose product is not, leave the MatMul as it is.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "kiln/graph.h"
#include "ops/linalg/matmul_integer.h"
#include "passes/cast_node.h"
#include "passes/passes.h"
#include "passes/splice_nodes.h"

namespace kiln {
namespace {

const Node* producer(const Graph& g, ValueId v) {
  const NodeId p = g.value(v).producer;
  return p < 0 ? nullptr : &g.nodes[size_t(p)];
}

// The element type of v where it is known before inference: a constant's, a graph input's, a Cast's
// target, a CastLike's `like`, a Reshape's data.
std::optional<DType> known_dtype(const Graph& g, ValueId v) {
  const Value& value = g.value(v);
  if (value.constant) return value.constant->dtype();
  const Node* p = producer(g, v);
  if (!p) return value.type.dtype;  // a graph input: declared
  if (p->op == OpKind::Cast) return dtype_from_name(p->attr_string("to", ""));
  if (p->op == OpKind::CastLike && p->inputs.size() == 2) return known_dtype(g, p->inputs[1]);
  if (p->op == OpKind::Reshape && !p->inputs.empty()) return known_dtype(g, p->inputs[0]);
  return std::nullopt;
}

// A Cast or CastLike to f32 from f32, or from a float or 8/16-bit integer into f32 / f64: it keeps
// every value of its input.
bool exact_conversion(const Graph& g, const Node& n) {
  if ((n.op != OpKind::Cast && n.op != OpKind::CastLike) || n.inputs.empty() || n.outputs.size() != 1) return false;
  const std::optional<DType> from = known_dtype(g, n.inputs[0]), to = known_dtype(g, n.outputs[0]);
  if (!from || !to || (*to != DType::f32 && *to != DType::f64)) return false;
  return *from == DType::f32 || *from == DType::u8 || *from == DType::i8 || *from == DType::u16 || *from == DType::i16;
}

// A parameter computed from one small constant by exact conversions and Reshapes: its values (in the
// constant's order, which a Reshape keeps) and the shape it ends with.
struct Parameter {
  std::vector<double> values;
  std::vector<int64_t> shape;
};

std::optional<std::vector<int64_t>> reshape_target(const Graph& g, const Node& reshape, int64_t count) {
  if (reshape.inputs.size() != 2 || !g.value(reshape.inputs[1]).constant || reshape.attr_int("allowzero", 0) != 0)
    return std::nullopt;
  const Tensor& t = *g.value(reshape.inputs[1]).constant;
  std::vector<int64_t> shape(size_t(t.numel()));
  int64_t known = 1, unknown = -1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    shape[size_t(i)] = static_cast<int64_t>(t.as_double(i));
    if (shape[size_t(i)] == -1 && unknown < 0) unknown = i;
    else if (shape[size_t(i)] >= 1) known *= shape[size_t(i)];
    else return std::nullopt;  // 0 (copy a dim) or a second -1: not needed for a parameter
  }
  if (unknown >= 0 && known > 0 && count % known == 0) shape[size_t(unknown)] = count / known;
  return known * (unknown >= 0 ? shape[size_t(unknown)] : 1) == count ? std::optional(shape) : std::nullopt;
}

std::optional<Parameter> parameter(const Graph& g, ValueId v) {
  const Node* outer_reshape = nullptr;  // the last Reshape gives the shape
  for (;;) {
    if (const auto& c = g.value(v).constant) {
      // A scalar or a vector (one value a column at most): a weight, whose values would be read here for
      // nothing, is neither.
      const std::vector<int64_t>& dims = c->shape();
      if (std::count_if(dims.begin(), dims.end(), [](int64_t d) { return d != 1; }) > 1) return std::nullopt;
      Parameter p;
      for (int64_t i = 0; i < c->numel(); ++i) p.values.push_back(c->as_double(i));
      if (!outer_reshape) {
        p.shape = c->shape();
      } else if (auto shape = reshape_target(g, *outer_reshape, c->numel())) {
        p.shape = *shape;
      } else {
        return std::nullopt;
      }
      return p;
    }
    const Node* n = producer(g, v);
    if (!n || n->inputs.empty()) return std::nullopt;
    if (n->op == OpKind::Reshape) {
      if (!outer_reshape) outer_reshape = n;
    } else if (!exact_conversion(g, *n)) {
      return std::nullopt;
    }
    v = n->inputs[0];
  }
}

bool all_ones(const std::vector<int64_t>& shape, size_t max_rank) {
  return shape.size() <= max_rank && std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d == 1; });
}

struct Dequantized {
  ValueId q = kNoValue;       // the 8-bit tensor
  DType type = DType::u8;     // its element type
  std::vector<double> scale;  // one value, or one per column of a constant [K, N] q
  double zero_point = 0;      // one value (all equal)
};

// `v` as the importer's DequantizeLinear of an 8-bit tensor with constant parameters: one scale and zero
// point (a scalar or [1]), or for a constant [K, N] q one of each per column ([N] or [1, N]).
std::optional<Dequantized> dequantized(const Graph& g, ValueId v) {
  const Node* n = producer(g, v);
  // Conversions to f32 of the product below, which is f32 (the Mul of two f32 Casts): no-ops.
  while (n && (n->op == OpKind::Cast || n->op == OpKind::CastLike) && !n->inputs.empty() &&
         known_dtype(g, n->outputs.at(0)) == DType::f32)
    n = producer(g, n->inputs[0]);
  if (!n || n->op != OpKind::Mul || n->inputs.size() != 2) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    // The parameters as the importer writes them: f32 where the Mul and the Sub read them.
    std::optional<Parameter> scale = parameter(g, n->inputs[1 - side]), zero_point;
    if (!scale || known_dtype(g, n->inputs[1 - side]) != DType::f32) continue;
    const Node* shifted = producer(g, n->inputs[side]);
    if (shifted && shifted->op == OpKind::Sub && shifted->inputs.size() == 2) {
      if (!(zero_point = parameter(g, shifted->inputs[1])) || known_dtype(g, shifted->inputs[1]) != DType::f32) continue;
      shifted = producer(g, shifted->inputs[0]);
    }
    if (!shifted || shifted->op != OpKind::Cast || !exact_conversion(g, *shifted) || known_dtype(g, shifted->outputs[0]) != DType::f32)
      continue;
    Dequantized d;
    d.q = shifted->inputs[0];
    const std::optional<DType> qt = known_dtype(g, d.q);
    if (!qt || !matmul_integer_operand(*qt)) continue;
    d.type = *qt;
    d.scale = scale->values;
    const auto& w = g.value(d.q).constant;
    const int64_t columns = w && w->rank() == 2 ? w->dim(1) : -1;
    auto fits = [&](const Parameter& p) {
      if (p.values.size() == 1) return all_ones(p.shape, w ? size_t(w->rank()) : 1);
      return columns >= 1 && int64_t(p.values.size()) == columns && !p.shape.empty() && p.shape.back() == columns &&
             all_ones({p.shape.begin(), p.shape.end() - 1}, 1);
    };
    if (!fits(*scale) || (zero_point && !fits(*zero_point))) return std::nullopt;
    if (zero_point) {
      for (double z : zero_point->values)
        if (z != zero_point->values[0]) return std::nullopt;
      d.zero_point = zero_point->values[0];
    }
    return d;
  }
  return std::nullopt;
}

struct Rewrite {
  NodeId matmul = -1;
  Dequantized a, w;
};

bool rewritable(const Graph& g, const Node& n, Rewrite& r) {
  if (n.op != OpKind::MatMul || n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0] == kNoValue) return false;
  auto a = dequantized(g, n.inputs[0]);
  auto w = dequantized(g, n.inputs[1]);
  if (!a || !w || a->scale.size() != 1) return false;
  const auto& weight = g.value(w->q).constant;
  if (!weight || w->type != DType::i8 || weight->rank() != 2 || w->zero_point != 0) return false;
  if (weight->dim(0) > kMaxExactIntegerMatmulK) return false;
  const double lo = a->type == DType::u8 ? 0 : -128, hi = a->type == DType::u8 ? 255 : 127;
  if (a->zero_point < lo || a->zero_point > hi || a->zero_point != std::floor(a->zero_point)) return false;
  // The scales' product a normal f32: one that overflows or underflows (to 0 or a subnormal) would lose
  // what the float product of the dequantized operands keeps.
  for (double s : w->scale)
    if (!std::isnormal(float(double(float(a->scale[0])) * double(float(s))))) return false;
  r = {NodeId(&n - g.nodes.data()), *a, *w};
  return true;
}

}  // namespace

int integer_matmuls(Graph& g, const Options& options) {
  (void)options;
  std::vector<Rewrite> found;
  for (const Node& n : g.nodes) {
    Rewrite r;
    if (rewritable(g, n, r)) found.push_back(r);
  }
  if (found.empty()) return 0;
  std::vector<std::vector<Node>> placed(g.nodes.size());
  std::vector<char> dropped(g.nodes.size(), 0);
  for (const Rewrite& r : found) {
    const Node mm = g.nodes[size_t(r.matmul)];
    const std::string name = g.value(mm.outputs[0]).name;  // value names are unique, node names need not be
    std::vector<ValueId> inputs = {r.a.q, r.w.q};
    if (r.a.zero_point != 0) {
      inputs.push_back(g.add_constant(name + "/a_zero_point", Tensor::scalar<double>(r.a.type, r.a.zero_point)));
    }
    // The scales' product rounded once to f32, as ONNX Runtime's multiplier: a scalar, or [N].
    Tensor scales = r.w.scale.size() == 1 ? Tensor::empty(DType::f32, {}) : Tensor::empty(DType::f32, {int64_t(r.w.scale.size())});
    for (size_t i = 0; i < r.w.scale.size(); ++i)
      scales.data<float>()[i] = static_cast<float>(double(float(r.a.scale[0])) * double(float(r.w.scale[i])));
    const ValueId scale = g.add_constant(name + "/scales", std::move(scales));
    const ValueId sums = g.add_value(name + "/sums", TensorType{DType::i32, {}});  // shapes: inference, next
    const ValueId widened = g.add_value(name + "/sums_f32", TensorType{DType::f32, {}});
    std::vector<Node>& nodes = placed[size_t(r.matmul)];
    nodes.push_back(Node{OpKind::MatMulInteger, name + "/integer", std::move(inputs), {sums}, {}, -1});
    nodes.push_back(cast_node(sums, widened, DType::f32, name + "/to_f32"));
    nodes.push_back(Node{OpKind::Mul, name + "/scale", {widened, scale}, {mm.outputs[0]}, {}, -1});
    dropped[size_t(r.matmul)] = 1;
  }
  splice_nodes(g, placed, dropped);
  return static_cast<int>(found.size());
}

}  // namespace kiln
