// Ops that create tensors rather than move them: Shape, Size, Constant, ConstantOfShape, Range.
#include <algorithm>
#include <cmath>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

// ---- Shape / Size ----------------------------------------------------------------------------------

// The [start, end) range of dims that Shape (opset 15) reports, clamped to [0, rank].
std::pair<int64_t, int64_t> shape_range(const Node& node, int64_t rank) {
  auto clamp_axis = [rank](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
  int64_t start = clamp_axis(node.attr_int("start", 0)), end = clamp_axis(node.attr_int("end", rank));
  return {start, std::max(start, end)};
}

// The output is i64[len]; its value (even of a static input) is left to the constant folder.
std::vector<TensorType> infer_shape(InferContext& ctx) {
  auto [start, end] = shape_range(ctx.node(), ctx.in(0).rank());
  return {TensorType{DType::i64, {Dim::fixed(end - start)}}};
}

void kernel_shape(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  auto [start, end] = shape_range(node, in[0]->rank());
  for (int64_t i = start; i < end; ++i) out[0].data<int64_t>()[i - start] = in[0]->shape()[static_cast<size_t>(i)];
}

std::vector<TensorType> infer_size(InferContext& ctx) {
  (void)ctx.in(0);
  return {TensorType{DType::i64, {}}};
}

void kernel_size(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  out[0].data<int64_t>()[0] = in[0]->numel();
}

// ---- Constant --------------------------------------------------------------------------------------

// The tensor a Constant node holds (exactly one value* attribute).
Tensor constant_value(const Node& node) {
  static constexpr std::string_view kUnsupported[] = {"sparse_value", "value_string", "value_strings"};
  for (std::string_view a : kUnsupported)
    if (node.has_attr(a)) node_fail(node, "attribute '{}' is not supported", a);
  int present = node.has_attr("value") + node.has_attr("value_float") + node.has_attr("value_floats") +
                node.has_attr("value_int") + node.has_attr("value_ints");
  if (present != 1) node_fail(node, "needs exactly one value attribute, has {}", present);
  if (const Tensor* t = node.attr_tensor("value")) return *t;
  if (node.has_attr("value_float")) return Tensor::scalar(DType::f32, node.attr_float("value_float", 0));
  if (node.has_attr("value_int")) return Tensor::scalar(DType::i64, node.attr_int("value_int", 0));
  if (node.has_attr("value_floats")) {
    std::vector<double> v = node.attr_floats("value_floats");
    return Tensor::from_vector(DType::f32, {static_cast<int64_t>(v.size())}, v);
  }
  std::vector<int64_t> v = node.attr_ints("value_ints");
  return Tensor::from_vector(DType::i64, {static_cast<int64_t>(v.size())}, v);
}

std::vector<TensorType> infer_constant(InferContext& ctx) {
  const Node& node = ctx.node();
  if (const Tensor* t = node.attr_tensor("value"); t && !node.has_attr("value_float") && !node.has_attr("value_int") &&
                                                  !node.has_attr("value_floats") && !node.has_attr("value_ints"))
    return {TensorType{t->dtype(), shape_of(t->shape())}};  // no copy of a large tensor just for its type
  Tensor t = constant_value(node);
  return {TensorType{t.dtype(), shape_of(t.shape())}};
}

void kernel_constant(const Node& node, std::span<const Tensor* const>, std::span<Tensor> out, const KernelContext&) {
  // A copy, so that a consumer writing in place can never change the node's attribute.
  out[0] = constant_value(node).clone();
}

// ---- ConstantOfShape -------------------------------------------------------------------------------

// The fill value: attribute `value` (one element), default f32 0.
Tensor fill_value(const Node& node) {
  const Tensor* v = node.attr_tensor("value");
  if (!v) return Tensor::scalar(DType::f32, 0.0f);
  if (v->numel() != 1) node_fail(node, "value must hold one element, has {}", v->numel());
  return *v;
}

std::vector<TensorType> infer_constant_of_shape(InferContext& ctx) {
  const Node& node = ctx.node();
  DType dtype = fill_value(node).dtype();
  require_integer_input(ctx, 0, "the shape input");
  Shape out;
  if (const Tensor* shape_value = ctx.value(0)) {
    if (shape_value->rank() != 1) ctx.fail("the shape input must be 1-D, got {}", shape_value->shape_string());
    std::vector<int64_t> dims = read_ints(node, *shape_value, "the shape input");
    check_rank(ctx, static_cast<int64_t>(dims.size()));
    checked_numel(dims, node_what(node));  // negative dims and overflow are user errors
    return {TensorType{dtype, shape_of(dims)}};
  }
  int64_t n = static_length_1d(ctx, 0, "the shape input");
  if (n < 0) ctx.fail("the shape input has an unknown length, so the output rank is unknown");
  check_rank(ctx, n);
  for (int64_t i = 0; i < n; ++i) out.push_back(ctx.fresh_dim());
  return {TensorType{dtype, out}};
}

void kernel_constant_of_shape(const Node& node, std::span<const Tensor* const>, std::span<Tensor> out,
                              const KernelContext&) {
  Tensor& y = out[0];
  Tensor v = fill_value(node);
  dispatch_bytes(dtype_size(y.dtype()), [&](auto u) {
    using U = decltype(u);
    U bits;
    std::memcpy(&bits, v.raw(), sizeof(U));
    U* dst = y.data<U>();
    parallel_for(y.numel(), 1 << 16, [&](int64_t b, int64_t e) { std::fill(dst + b, dst + e, bits); });
  });
}

// ---- Range -----------------------------------------------------------------------------------------

// Far beyond any real tensor, small enough that later size arithmetic cannot overflow.
constexpr int64_t kMaxRangeCount = int64_t{1} << 48;

// max(ceil((limit - start) / delta), 0), computed without overflow; a zero or non-finite delta and an
// absurd count are user errors.
int64_t range_count(const Node& node, const Tensor& start, const Tensor& limit, const Tensor& delta) {
  for (const Tensor* t : {&start, &limit, &delta})
    if (t->numel() != 1) node_fail(node, "start, limit and delta must be scalars, got {}", t->shape_string());
  double count;
  if (is_integer(start.dtype())) {
    __int128 s = start.as_int64(0), l = limit.as_int64(0), d = delta.as_int64(0);
    if (d == 0) node_fail(node, "delta must not be 0");
    __int128 span = l - s;
    __int128 c = (span > 0) == (d > 0) && span != 0 ? (span + d - (d > 0 ? 1 : -1)) / d : 0;
    count = static_cast<double>(c);
  } else {
    double s = start.as_double(0), l = limit.as_double(0), d = delta.as_double(0);
    if (d == 0.0) node_fail(node, "delta must not be 0");
    count = std::ceil((l - s) / d);
    if (std::isnan(count)) node_fail(node, "start {}, limit {}, delta {} give no element count", s, l, d);
  }
  if (count > static_cast<double>(kMaxRangeCount))
    node_fail(node, "would produce {} elements", count);
  return count > 0 ? static_cast<int64_t>(count) : 0;
}

std::vector<TensorType> infer_range(InferContext& ctx) {
  DType t = ctx.in(0).dtype;
  // f16 / bf16 (Range-27) run in f32, as its default stash_type 1 says (the executor widens them).
  if (t != DType::f32 && t != DType::f64 && t != DType::i32 && t != DType::i64 && !is_half(t))
    ctx.fail("type {} is not supported (f32, f64, f16, bf16, i32, i64)", dtype_name(t));
  if (is_half(t) && ctx.node().attr_int("stash_type", 1) != 1)
    ctx.fail("stash_type {} (arithmetic in {}) is not supported", ctx.node().attr_int("stash_type", 1), dtype_name(t));
  for (size_t i = 0; i < 3; ++i) {
    const TensorType& in = ctx.in(i);
    if (in.dtype != t) ctx.fail("input {} is {} but start is {}", i, dtype_name(in.dtype), dtype_name(t));
    if (in.rank() > 1 || (in.rank() == 1 && !(in.shape[0] == Dim::fixed(1))))
      ctx.fail("input {} must be a scalar, got {}", i, type_string(in));
  }
  if (ctx.value(0) && ctx.value(1) && ctx.value(2))
    return {TensorType{t, {Dim::fixed(range_count(ctx.node(), *ctx.value(0), *ctx.value(1), *ctx.value(2)))}}};
  return {TensorType{t, {ctx.fresh_dim()}}};
}

void kernel_range(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  Tensor& y = out[0];
  int64_t n = y.numel();
  KILN_INTERNAL_CHECK(n == range_count(node, *in[0], *in[1], *in[2]), "{}: range size", node_what(node));
  dispatch_numeric(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = y.data<T>();
    if constexpr (std::is_floating_point_v<T>) {
      // start + i * delta in double: no drift from repeated addition.
      double s = in[0]->as_double(0), d = in[2]->as_double(0);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(s + static_cast<double>(i) * d);
    } else {
      // Every value lies between start and limit; i * delta alone may not fit, so wrap in unsigned.
      uint64_t s = static_cast<uint64_t>(in[0]->as_int64(0)), d = static_cast<uint64_t>(in[2]->as_int64(0));
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<int64_t>(s + static_cast<uint64_t>(i) * d));
    }
  });
}

}  // namespace

void register_generator_ops(OpRegistry& r) {
  auto def = [](InferFn infer, KernelFn kernel, int min_in, int max_in, bool half, bool makes_outputs) {
    OpDef d;
    d.infer = infer;
    d.kernel = kernel;
    d.min_inputs = min_in;
    d.max_inputs = max_in;
    d.handles_half = half;
    d.kernel_makes_outputs = makes_outputs;
    return d;
  };
  r.add(OpKind::Shape, def(infer_shape, kernel_shape, 1, 1, true, false));
  r.add(OpKind::Size, def(infer_size, kernel_size, 1, 1, true, false));
  r.add(OpKind::Constant, def(infer_constant, kernel_constant, 0, 0, true, true));
  r.add(OpKind::ConstantOfShape, def(infer_constant_of_shape, kernel_constant_of_shape, 1, 1, true, false));
  r.add(OpKind::Range, def(infer_range, kernel_range, 3, 3, false, false));
}

}  // namespace kiln::shape_ops
