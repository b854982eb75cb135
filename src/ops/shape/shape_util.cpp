#include <cmath>
#include <limits>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {

std::string node_what(const Node& node) { return fmt::format("node '{}' ({})", node.name, op_name(node.op)); }

int64_t dims_product(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t k = b; k < e; ++k) p *= d[k];
  return p;
}

int64_t wrapped_index(const Node& node, int64_t v, int64_t dim, int64_t axis) {
  if (v < -dim || v >= dim) node_fail(node, "index {} is out of range for axis {} of size {}", v, axis, dim);
  return v < 0 ? v + dim : v;
}

std::vector<int64_t> read_ints(const Node& node, const Tensor& t, std::string_view what) {
  if (!is_integer(t.dtype())) node_fail(node, "{} must be an integer tensor, got {}", what, dtype_name(t.dtype()));
  return t.to_int64_vector();
}

void require_integer_input(const InferContext& ctx, size_t i, std::string_view what) {
  DType t = ctx.in(i).dtype;
  if (!is_integer(t)) ctx.fail("{} must be an integer tensor, got {}", what, dtype_name(t));
}

int64_t static_length_1d(const InferContext& ctx, size_t i, std::string_view what, bool allow_scalar) {
  const TensorType& t = ctx.in(i);
  if (t.rank() == 0 && allow_scalar) return 1;
  if (t.rank() != 1) ctx.fail("{} must be 1-D, got {}", what, type_string(t));
  return t.shape[0].is_static() ? t.shape[0].value : -1;
}

void check_rank(const InferContext& ctx, int64_t rank) {
  if (rank > ctx.max_rank()) ctx.fail("output rank {} exceeds max_rank ({})", rank, ctx.max_rank());
}

Dim product_dim(InferContext& ctx, const Shape& s, size_t b, size_t e) {
  int64_t fixed = 1, hint = 1;
  const Dim* symbol = nullptr;
  int symbols = 0;
  bool hints_known = true;
  for (size_t i = b; i < e; ++i) {
    const Dim& d = s[i];
    if (d.is_static()) {
      fixed = checked_mul(fixed, d.value, node_what(ctx.node()));
      if (hints_known) hint = checked_mul(hint, d.value, node_what(ctx.node()));
    } else {
      ++symbols;
      symbol = &d;
      if (d.hint < 0 || __builtin_mul_overflow(hint, d.hint, &hint)) hints_known = false;
    }
  }
  if (symbols == 0 || fixed == 0) return Dim::fixed(fixed);  // anything times 0 is 0
  if (symbols == 1 && fixed == 1) return *symbol;
  return ctx.fresh_dim(hints_known ? hint : -1);
}

std::vector<TensorType> concrete_infer(InferFn infer, const Node& node, std::span<const Tensor* const> in) {
  std::vector<TensorType> types(in.size());
  std::vector<const TensorType*> type_ptrs(in.size(), nullptr);
  std::vector<const Tensor*> values(in.begin(), in.end());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) {
      types[i] = TensorType{in[i]->dtype(), shape_of(in[i]->shape())};
      type_ptrs[i] = &types[i];
    }
  int fresh = 0;
  // The rank limit was enforced when the node was inferred; here only the shape matters.
  InferContext ctx(node, std::move(type_ptrs), std::move(values), &fresh, std::numeric_limits<int64_t>::max());
  return infer(ctx);
}

std::vector<int64_t> concrete_output_dims(InferFn infer, const Node& node, std::span<const Tensor* const> in,
                                          size_t k) {
  std::vector<TensorType> out = concrete_infer(infer, node, in);
  KILN_INTERNAL_CHECK(k < out.size() && is_static(out[k].shape), "{}: run-time output shape is not concrete",
                      node_what(node));
  return static_dims(out[k].shape);
}

namespace {
template <class To>
To saturate(double v) {
  if (std::isnan(v)) return To{0};
  if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  if (v <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
  return static_cast<To>(v);
}
}  // namespace

void store_scalar(DType dtype, const Tensor& value, void* dst) {
  KILN_INTERNAL_CHECK(value.numel() >= 1, "store_scalar: empty value");
  if (value.dtype() == dtype) {
    std::memcpy(dst, value.raw(), dtype_size(dtype));
    return;
  }
  bool exact_int = !is_float(value.dtype());
  // An integer narrows modulo 2^bits (u64's high values too); a float saturates.
  int64_t iv = !exact_int                      ? 0
               : value.dtype() == DType::u64 ? static_cast<int64_t>(value.data<uint64_t>()[0])
                                               : value.as_int64(0);
  double dv = value.as_double(0);
  switch (dtype) {
    case DType::f32: { float f = static_cast<float>(dv); std::memcpy(dst, &f, 4); break; }
    case DType::f64: std::memcpy(dst, &dv, 8); break;
    case DType::f16: { uint16_t h = float_to_half(static_cast<float>(dv)); std::memcpy(dst, &h, 2); break; }
    case DType::bf16: { uint16_t h = float_to_bf16(static_cast<float>(dv)); std::memcpy(dst, &h, 2); break; }
    case DType::i64: { int64_t v = exact_int ? iv : saturate<int64_t>(dv); std::memcpy(dst, &v, 8); break; }
    case DType::i32: { int32_t v = exact_int ? static_cast<int32_t>(iv) : saturate<int32_t>(dv); std::memcpy(dst, &v, 4); break; }
    case DType::i8: { int8_t v = exact_int ? static_cast<int8_t>(iv) : saturate<int8_t>(dv); std::memcpy(dst, &v, 1); break; }
    case DType::u8: { uint8_t v = exact_int ? static_cast<uint8_t>(iv) : saturate<uint8_t>(dv); std::memcpy(dst, &v, 1); break; }
    case DType::i16: { int16_t v = exact_int ? static_cast<int16_t>(iv) : saturate<int16_t>(dv); std::memcpy(dst, &v, 2); break; }
    case DType::u16: { uint16_t v = exact_int ? static_cast<uint16_t>(iv) : saturate<uint16_t>(dv); std::memcpy(dst, &v, 2); break; }
    case DType::u32: { uint32_t v = exact_int ? static_cast<uint32_t>(iv) : saturate<uint32_t>(dv); std::memcpy(dst, &v, 4); break; }
    case DType::u64: { uint64_t v = exact_int ? static_cast<uint64_t>(iv) : saturate<uint64_t>(dv); std::memcpy(dst, &v, 8); break; }
    case DType::boolean: { bool v = dv != 0.0; std::memcpy(dst, &v, 1); break; }
  }
}

}  // namespace kiln::shape_ops
