// DepthToSpace and SpaceToDepth (modes DCR and CRD) read as Reshape, Transpose, Reshape, with the
// shapes computed from the input's (folded to constants where its shape is static); OneHot as an Equal
// of the indices against a Range of the classes, choosing between its two values; Scatter as
// ScatterElements; MaxUnpool as a ScatterElements into zeros; AffineGrid as a MatMul of the normalised
// coordinates with theta.
#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "onnx/import_rewrites.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

struct Dims {
  ValueId n, c, h, w;  // 1-D i64 tensors of one element each
};

Dims dims_of(OnnxGraphReader& b, const NodeForm& n, ValueId x) {
  if (auto rank = b.known_rank(x); rank && *rank != 4) user_error("{}: the input must have rank 4, has {}", n.desc(), *rank);
  ValueId shape = add(b, n, OpKind::Shape, {x}, "shape");
  auto dim = [&](int64_t i) { return add(b, n, OpKind::Gather, {shape, b.constant_i64(n.name + "_dim", {i})}, "dim"); };
  return {dim(0), dim(1), dim(2), dim(3)};
}

ValueId concat(OnnxGraphReader& b, const NodeForm& n, std::vector<ValueId> parts) {
  AttrMap axis;
  axis["axis"] = Attribute{int64_t{0}};
  return add(b, n, OpKind::Concat, std::move(parts), "shape_out", std::move(axis));
}

int64_t blocksize(const NodeForm& n) {
  if (!n.attrs.count("blocksize")) user_error("{}: attribute 'blocksize' is required", n.desc());
  int64_t bs = n.int_attr("blocksize", 0);
  if (bs < 1) user_error("{}: blocksize must be at least 1, got {}", n.desc(), bs);
  return bs;
}

std::string mode_attr(const NodeForm& n) {
  std::string mode = n.string_attr("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") user_error("{}: mode must be DCR or CRD", n.desc());
  return mode;
}

ValueId transposed(OnnxGraphReader& b, const NodeForm& n, ValueId x, std::vector<int64_t> perm) {
  AttrMap a;
  a["perm"] = Attribute{std::move(perm)};
  return add(b, n, OpKind::Transpose, {x}, "transposed", std::move(a));
}

// DCR: [N, C, H, W] -> [N, b, b, C/b^2, H, W] -> (0, 3, 4, 1, 5, 2) -> [N, C/b^2, H b, W b];
// CRD: -> [N, C/b^2, b, b, H, W] -> (0, 1, 4, 2, 5, 3) -> the same.
void depth_to_space(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  int64_t bs = blocksize(n);
  std::string mode = mode_attr(n);
  ValueId x = n.inputs[0];
  Dims d = dims_of(b, n, x);
  ValueId block = b.constant_i64(n.name + "_block", {bs});
  ValueId c2 = add(b, n, OpKind::Div, {d.c, b.constant_i64(n.name + "_block2", {bs * bs})}, "depth");
  ValueId split = mode == "DCR" ? concat(b, n, {d.n, block, block, c2, d.h, d.w})
                                : concat(b, n, {d.n, c2, block, block, d.h, d.w});
  ValueId t = transposed(b, n, add(b, n, OpKind::Reshape, {x, split}, "split"),
                         mode == "DCR" ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3});
  ValueId out = concat(b, n, {d.n, c2, add(b, n, OpKind::Mul, {d.h, block}, "height"), add(b, n, OpKind::Mul, {d.w, block}, "width")});
  add(b, n, OpKind::Reshape, {t, out}, "out", {}, n.outputs[0]);
}

// [N, C, H, W] -> [N, C, H/b, b, W/b, b] -> DCR (0, 3, 5, 1, 2, 4) or CRD (0, 1, 3, 5, 2, 4)
// -> [N, C b^2, H/b, W/b]
void space_to_depth(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  int64_t bs = blocksize(n);
  std::string mode = mode_attr(n);
  ValueId x = n.inputs[0];
  Dims d = dims_of(b, n, x);
  ValueId block = b.constant_i64(n.name + "_block", {bs});
  ValueId h = add(b, n, OpKind::Div, {d.h, block}, "height"), w = add(b, n, OpKind::Div, {d.w, block}, "width");
  ValueId t = transposed(b, n, add(b, n, OpKind::Reshape, {x, concat(b, n, {d.n, d.c, h, block, w, block})}, "split"),
                         mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 5, 2, 4});
  ValueId depth = add(b, n, OpKind::Mul, {d.c, b.constant_i64(n.name + "_block2", {bs * bs})}, "depth");
  add(b, n, OpKind::Reshape, {t, concat(b, n, {d.n, depth, h, w})}, "out", {}, n.outputs[0]);
}

// OneHot(indices, depth, values; axis): values[1] where the class along the new axis is the index
// (negative ones count from depth; others outside [0, depth) match nothing), values[0] elsewhere.
// Indices and depth of any numeric type are cast to i64 first (a float truncates, as ONNX says).
void one_hot(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1) || !n.has_input(2)) user_error("{}: inputs depth and values are required", n.desc());
  std::optional<int> rank = b.known_rank(n.inputs[0]);
  if (!rank) unsupported("{}: the indices' rank must be declared", n.desc());
  const int64_t out_rank = *rank + 1, axis = n.int_attr("axis", -1);
  if (axis < -out_rank || axis >= out_rank)
    user_error("{}: axis {} is out of range for an output of rank {}", n.desc(), axis, out_rank);
  const int64_t a = axis < 0 ? axis + out_rank : axis;
  auto scalar = [&](int64_t v) { return b.graph().add_constant(b.unique_name(n.name + "_i"), Tensor::scalar(DType::i64, v)); };
  ValueId idx = cast_to(b, n, n.inputs[0], DType::i64);
  ValueId scalar_depth = add(b, n, OpKind::Squeeze,
                             {add(b, n, OpKind::Reshape, {n.inputs[1], b.constant_i64(n.name + "_one", {1})}, "depth1"),
                              b.constant_i64(n.name + "_axis0", {0})},
                             "depth0");
  ValueId depth = cast_to(b, n, scalar_depth, DType::i64);
  ValueId from_end = add(b, n, OpKind::Add, {idx, depth}, "from_end");
  ValueId wrapped = add(b, n, OpKind::Where, {add(b, n, OpKind::Less, {idx, scalar(0)}, "negative"), from_end, idx}, "wrapped");
  std::vector<int64_t> class_shape(size_t(out_rank), 1);
  class_shape[size_t(a)] = -1;
  ValueId classes = add(b, n, OpKind::Reshape,
                        {add(b, n, OpKind::Range, {scalar(0), depth, scalar(1)}, "classes"),
                         b.constant_i64(n.name + "_class_shape", class_shape)},
                        "classes_along_axis");
  ValueId hit = add(b, n, OpKind::Equal,
                    {add(b, n, OpKind::Unsqueeze, {wrapped, b.constant_i64(n.name + "_axis", {a})}, "indices_along_axis"),
                     classes},
                    "hit");
  ValueId off = add(b, n, OpKind::Gather, {n.inputs[2], scalar(0)}, "off");
  ValueId on = add(b, n, OpKind::Gather, {n.inputs[2], scalar(1)}, "on");
  add(b, n, OpKind::Where, {hit, on, off}, "out", {}, n.outputs[0]);
}

// Scatter (opset 9, deprecated in 11) is ScatterElements without a reduction.
void scatter(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (n.inputs.size() != 3) user_error("{}: takes data, indices and updates", n.desc());
  add(b, n, OpKind::ScatterElements, {n.inputs[0], n.inputs[1], n.inputs[2]}, "out",
      one_attr("axis", Attribute{n.int_attr("axis", 0)}), n.outputs[0]);
}

// A list-of-integers attribute, or `def` where it is absent.
std::vector<int64_t> ints_attr(const NodeForm& n, const char* name, std::vector<int64_t> def) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return def;
  const auto* list = std::get_if<std::vector<int64_t>>(&it->second.value);
  if (!list) user_error("{}: attribute '{}' must be a list of integers", n.desc(), name);
  return *list;
}

// MaxUnpool: zeros of the unpooled shape, (in - 1) stride + kernel - pads over X's spatial dims (static),
// with the elements at I (MaxPool's indices into that tensor, flattened) set to X's, as a ScatterElements
// into the flattened zeros; an output_shape (input 2) pads the result with zeros at the end of each axis,
// as ONNX's reference and test data do (the indices keep the unpooled shape's meaning).
void max_unpool(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1)) user_error("{}: input 1 (I, the indices) is missing", n.desc());
  ValueId x = n.inputs[0];
  std::optional<DType> t = b.known_dtype(x);
  if (!t) unsupported("{}: the input's element type must be declared", n.desc());
  std::optional<int> rank = b.known_rank(x);
  if (!rank) unsupported("{}: the input's rank must be declared", n.desc());
  if (*rank < 3) user_error("{}: the input must have rank 3 or more, has {}", n.desc(), *rank);
  const size_t spatial = size_t(*rank - 2);
  const std::vector<int64_t> kernel = ints_attr(n, "kernel_shape", {});
  const std::vector<int64_t> strides = ints_attr(n, "strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads = ints_attr(n, "pads", std::vector<int64_t>(2 * spatial, 0));
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial)
    user_error("{}: kernel_shape, strides and pads must give {} spatial axes", n.desc(), spatial);
  std::vector<int64_t> unpooled;
  for (size_t i = 0; i < size_t(*rank); ++i) {
    const Dim& d = b.graph().value(x).type.shape[i];
    if (!d.is_static()) unsupported("{}: the input's dims must be static", n.desc());
    const int64_t j = int64_t(i) - 2;
    unpooled.push_back(j < 0 ? d.value : (d.value - 1) * strides[size_t(j)] + kernel[size_t(j)] - pads[size_t(j)] - pads[spatial + size_t(j)]);
    if (unpooled.back() < 0) user_error("{}: output dim {} would be {}", n.desc(), i, unpooled.back());
  }
  ValueId shape = b.constant_i64(n.name + "_shape", unpooled);
  Tensor zero = Tensor::empty(*t, {1});
  std::memset(zero.raw(), 0, dtype_size(*t));
  ValueId zeros = add(b, n, OpKind::ConstantOfShape, {shape}, "zeros", one_attr("value", Attribute{std::move(zero)}));
  ValueId flat = b.constant_i64(n.name + "_flat", {-1});
  ValueId scattered = add(b, n, OpKind::ScatterElements,
                          {add(b, n, OpKind::Reshape, {zeros, flat}, "zeros_flat"),
                           add(b, n, OpKind::Reshape, {n.inputs[1], flat}, "indices_flat"),
                           add(b, n, OpKind::Reshape, {x, flat}, "values_flat")},
                          "scattered", one_attr("axis", Attribute{int64_t{0}}));
  if (!n.has_input(2)) {
    add(b, n, OpKind::Reshape, {scattered, shape}, "out", {}, n.outputs[0]);
    return;
  }
  ValueId y = add(b, n, OpKind::Reshape, {scattered, shape}, "unpooled");
  ValueId after = add(b, n, OpKind::Sub, {cast_to(b, n, n.inputs[2], DType::i64), shape}, "pads_after");
  ValueId all_pads = concat(b, n, {b.constant_i64(n.name + "_pads_before", std::vector<int64_t>(size_t(*rank), 0)), after});
  add(b, n, OpKind::Pad, {y, all_pads}, "out", {}, n.outputs[0]);
}

// AffineGrid: the normalised coordinates of every output position, (x, y, 1) over [H, W] (2-D) or
// (x, y, z, 1) over [D, H, W] (3-D), x along the width, times theta^T per batch: [N, H*W, 3] x [N, 3, 2],
// reshaped to [N, H, W, 2]. A coordinate i of an axis of length L is -1 + 2i / (L - 1) with align_corners
// (-1 where L = 1, as linspace gives), else -1 + (2i + 1) / L. The sizes come from `size` at run time.
void affine_grid(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1)) user_error("{}: input 1 (size) is missing", n.desc());
  ValueId theta = n.inputs[0];
  std::optional<int> rank = b.known_rank(theta);
  if (!rank || *rank != 3) unsupported("{}: theta must be declared of rank 3", n.desc());
  const Dim& rows = b.graph().value(theta).type.shape[1];
  if (!rows.is_static() || (rows.value != 2 && rows.value != 3))
    unsupported("{}: theta must be [N, 2, 3] or [N, 3, 4] with static sizes", n.desc());
  const int64_t dims = rows.value;  // spatial axes
  const bool align = n.int_attr("align_corners", 0) != 0;
  ValueId size = cast_to(b, n, n.inputs[1], DType::i64);
  auto size_at = [&](int64_t i) { return add(b, n, OpKind::Gather, {size, b.constant_i64(n.name + "_at", {i})}, "dim"); };
  auto f32 = [&](ValueId v) {
    AttrMap to;
    to["to"] = Attribute{std::string(dtype_name(DType::f32))};
    return add(b, n, OpKind::Cast, {v}, "f32", std::move(to));
  };
  auto scalar = [&](double v) { return b.graph().add_constant(b.unique_name(n.name + "_c"), Tensor::scalar(DType::f32, float(v))); };
  // The spatial lengths, outermost first (D, H, W or H, W), and each axis's coordinates as f32 [L].
  std::vector<ValueId> lengths, coords;
  for (int64_t a = 0; a < dims; ++a) lengths.push_back(size_at(2 + a));
  for (ValueId len : lengths) {
    ValueId scalar_len = add(b, n, OpKind::Squeeze, {len, b.constant_i64(n.name + "_axis0", {0})}, "length");
    ValueId i = f32(add(b, n, OpKind::Range, {b.graph().add_constant(b.unique_name(n.name + "_zero"), Tensor::scalar(DType::i64, int64_t{0})),
                                               scalar_len,
                                               b.graph().add_constant(b.unique_name(n.name + "_one"), Tensor::scalar(DType::i64, int64_t{1}))},
                        "index"));
    ValueId lf = f32(scalar_len);
    ValueId c;
    if (align) {  // -1 + i * 2 / max(L - 1, 1)
      ValueId steps = add(b, n, OpKind::Max, {add(b, n, OpKind::Sub, {lf, scalar(1)}, "steps"), scalar(1)}, "steps_1");
      c = add(b, n, OpKind::Add, {add(b, n, OpKind::Mul, {i, add(b, n, OpKind::Div, {scalar(2), steps}, "step")}, "scaled"), scalar(-1)}, "coord");
    } else {  // -1 + (2 i + 1) / L
      ValueId odd = add(b, n, OpKind::Add, {add(b, n, OpKind::Mul, {i, scalar(2)}, "twice"), scalar(1)}, "odd");
      c = add(b, n, OpKind::Add, {add(b, n, OpKind::Div, {odd, lf}, "ratio"), scalar(-1)}, "coord");
    }
    coords.push_back(c);
  }
  // Each coordinate broadcast over the grid [L0, ..., 1] as its own axis, then stacked x first.
  ValueId grid_shape = concat(b, n, lengths);
  std::vector<ValueId> planes;
  for (int64_t a = dims - 1; a >= 0; --a) {  // x (the last axis), y, z
    std::vector<int64_t> shape(size_t(dims), 1);
    shape[size_t(a)] = -1;
    ValueId along = add(b, n, OpKind::Reshape, {coords[size_t(a)], b.constant_i64(n.name + "_along", shape)}, "along");
    planes.push_back(add(b, n, OpKind::Expand, {along, grid_shape}, "plane"));
  }
  planes.push_back(add(b, n, OpKind::Expand, {scalar(1), grid_shape}, "ones"));
  ValueId last = b.constant_i64(n.name + "_last", {-1});
  for (ValueId& p : planes) p = add(b, n, OpKind::Unsqueeze, {p, last}, "component");
  AttrMap axis;
  axis["axis"] = Attribute{int64_t{-1}};
  ValueId base = add(b, n, OpKind::Concat, std::move(planes), "base", std::move(axis));
  base = add(b, n, OpKind::Reshape, {base, b.constant_i64(n.name + "_rows", {1, -1, dims + 1})}, "base_rows");
  base = add(b, n, OpKind::CastLike, {base, theta}, "base_typed");
  AttrMap perm;
  perm["perm"] = Attribute{std::vector<int64_t>{0, 2, 1}};
  ValueId theta_t = add(b, n, OpKind::Transpose, {theta}, "theta_t", std::move(perm));
  ValueId grid = add(b, n, OpKind::MatMul, {base, theta_t}, "grid_rows");
  std::vector<ValueId> out_shape{size_at(0)};
  for (ValueId len : lengths) out_shape.push_back(len);
  out_shape.push_back(b.constant_i64(n.name + "_components", {dims}));
  add(b, n, OpKind::Reshape, {grid, concat(b, n, out_shape)}, "out", {}, n.outputs[0]);
}

}  // namespace

std::span<const RewriteRow> shape_rewrites() {
  static constexpr RewriteRow kRows[] = {
      {"AffineGrid", affine_grid},
      {"DepthToSpace", depth_to_space},
      {"MaxUnpool", max_unpool},
      {"OneHot", one_hot},
      {"Scatter", scatter},
      {"SpaceToDepth", space_to_depth},
  };
  return kRows;
}

}  // namespace kiln::rewrites
