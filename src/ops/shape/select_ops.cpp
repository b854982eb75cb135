// GatherND, Compress, NonZero, ReverseSequence and BitShift. Indices and lengths are checked before
// any copy (negative indices wrapped); an out-of-range one is a user error naming the node. Compress
// and NonZero have data-dependent sizes: exact when the input's value is known (always at run time),
// a fresh symbolic dim otherwise.
#include <fmt/ranges.h>

#include <type_traits>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

// ---- GatherND ----------------------------------------------------------------------------------------

std::vector<TensorType> infer_gather_nd(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  const TensorType& indices = ctx.in(1);
  require_integer_input(ctx, 1, "indices");
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (indices.rank() < 1) ctx.fail("indices must have rank 1 or more");
  if (b < 0 || b >= std::min(data.rank(), indices.rank()))
    ctx.fail("batch_dims {} must be below the ranks of data {} and indices {}", b, data.rank(), indices.rank());
  const Dim& k = indices.shape.back();
  if (!k.is_static()) ctx.unsupported("the last dim of indices must be known");
  if (k.value < 1 || b + k.value > data.rank())
    ctx.fail("indices' last dim {} and batch_dims {} exceed data's rank {}", k.value, b, data.rank());
  Shape out(indices.shape.begin(), indices.shape.end() - 1);
  out.insert(out.end(), data.shape.begin() + b + k.value, data.shape.end());
  check_rank(ctx, static_cast<int64_t>(out.size()));
  return {TensorType{data.dtype, out}};
}

void kernel_gather_nd(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor &data = *in[0], &indices = *in[1];
  const std::vector<int64_t>& ds = data.shape();
  const std::vector<int64_t>& is = indices.shape();
  const size_t b = static_cast<size_t>(node.attr_int("batch_dims", 0)), k = static_cast<size_t>(is.back());
  for (size_t i = 0; i < b; ++i)
    if (ds[i] != is[i]) node_fail(node, "batch dim {} is {} in data and {} in indices", i, ds[i], is[i]);
  const int64_t batches = dims_product(ds, 0, b), slice = dims_product(ds, b + k, ds.size());
  const int64_t per_batch = dims_product(is, b, is.size() - 1), batch_stride = dims_product(ds, b, ds.size());
  const std::vector<int64_t> strides = contiguous_strides(ds);
  std::vector<int64_t> idx = read_ints(node, indices, "indices");
  std::vector<int64_t> offsets(static_cast<size_t>(batches * per_batch));
  for (size_t t = 0; t < offsets.size(); ++t) {
    int64_t at = static_cast<int64_t>(t) / std::max<int64_t>(1, per_batch) * batch_stride;
    for (size_t j = 0; j < k; ++j)
      at += wrapped_index(node, idx[t * k + j], ds[b + j], int64_t(b + j)) * strides[b + j];
    offsets[t] = at;
  }
  const size_t esize = dtype_size(data.dtype());
  const char* src = static_cast<const char*>(data.raw());
  char* dst = static_cast<char*>(out[0].raw());
  for (size_t t = 0; t < offsets.size(); ++t)
    std::memcpy(dst + t * size_t(slice) * esize, src + size_t(offsets[t]) * esize, size_t(slice) * esize);
}

// ---- Compress ----------------------------------------------------------------------------------------

std::vector<int64_t> condition_of(const Node& node, const Tensor& condition) {
  if (condition.dtype() != DType::boolean) node_fail(node, "condition must be bool, it is {}", dtype_name(condition.dtype()));
  return condition.to_int64_vector();
}

int64_t kept(const Node& node, const Tensor& condition, int64_t length) {
  std::vector<int64_t> c = condition_of(node, condition);
  if (condition.rank() != 1) node_fail(node, "condition must be 1-D, it is {}", condition.shape_string());
  if (static_cast<int64_t>(c.size()) > length)
    node_fail(node, "condition has {} values, the axis has {} elements", c.size(), length);
  int64_t n = 0;
  for (int64_t v : c) n += v != 0;
  return n;
}

std::vector<TensorType> infer_compress(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  if (ctx.in(1).dtype != DType::boolean) ctx.fail("condition must be bool, it is {}", dtype_name(ctx.in(1).dtype));
  const bool has_axis = ctx.node().attrs.count("axis") != 0;
  Shape out;
  Dim length = Dim::fixed(1);
  size_t axis = 0;
  if (has_axis) {
    if (x.rank() == 0) ctx.fail("an axis of a scalar");
    axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", 0), x.rank()));
    out = x.shape;
    length = x.shape[axis];
  } else {
    length = product_dim(ctx, x.shape, 0, x.shape.size());
    out = {length};
  }
  const Tensor* c = ctx.value(1);
  out[axis] = c && length.is_static() ? Dim::fixed(kept(ctx.node(), *c, length.value)) : ctx.fresh_dim();
  return {TensorType{x.dtype, out}};
}

void kernel_compress(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  std::vector<int64_t> c = condition_of(node, *in[1]);
  const bool has_axis = node.attrs.count("axis") != 0;
  const std::vector<int64_t>& d = x.shape();
  const size_t axis = has_axis ? static_cast<size_t>(normalize_axis(node, node.attr_int("axis", 0), x.rank())) : 0;
  const int64_t length = has_axis ? d[axis] : x.numel();
  kept(node, *in[1], length);
  const int64_t outer = has_axis ? dims_product(d, 0, axis) : 1, inner = has_axis ? dims_product(d, axis + 1, d.size()) : 1;
  const size_t esize = dtype_size(x.dtype()), row = size_t(inner) * esize;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out[0].raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < c.size(); ++j)
      if (c[j]) {
        std::memcpy(dst, src + (size_t(o * length) + j) * row, row);
        dst += row;
      }
}

// ---- NonZero -----------------------------------------------------------------------------------------

int64_t count_nonzero(const Tensor& x) {
  int64_t n = 0;
  for (int64_t i = 0; i < x.numel(); ++i) n += x.as_double(i) != 0;
  return n;
}

std::vector<TensorType> infer_nonzero(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const Dim count = ctx.value(0) ? Dim::fixed(count_nonzero(*ctx.value(0))) : ctx.fresh_dim();
  return {TensorType{DType::i64, {Dim::fixed(std::max<int64_t>(1, x.rank())), count}}};
}

// [rank, nonzeros]: each column the index of one nonzero element, in row-major order (a scalar reads
// as one element of a 1-D tensor, as numpy's nonzero has it).
void kernel_nonzero(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  const std::vector<int64_t> d = x.rank() == 0 ? std::vector<int64_t>{1} : x.shape();
  const int64_t n = out[0].dim(1);
  int64_t* dst = out[0].data<int64_t>();
  std::vector<int64_t> index(d.size(), 0);
  int64_t col = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.as_double(i) != 0) {
      for (size_t k = 0; k < d.size(); ++k) dst[int64_t(k) * n + col] = index[k];
      ++col;
    }
    for (size_t k = d.size(); k-- > 0;) {
      if (++index[k] < d[k]) break;
      index[k] = 0;
    }
  }
}

// ---- ReverseSequence ---------------------------------------------------------------------------------

std::vector<TensorType> infer_reverse_sequence(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  require_integer_input(ctx, 1, "sequence_lens");
  if (x.rank() < 2) ctx.fail("the input must have rank 2 or more, it has {}", x.rank());
  const int64_t batch = ctx.node().attr_int("batch_axis", 1), time = ctx.node().attr_int("time_axis", 0);
  if ((batch != 0 && batch != 1) || (time != 0 && time != 1) || batch == time)
    ctx.fail("batch_axis {} and time_axis {} must be 0 and 1 in some order", batch, time);
  return {x};
}

void kernel_reverse_sequence(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                             const KernelContext&) {
  const Tensor& x = *in[0];
  const int64_t batch_axis = node.attr_int("batch_axis", 1);
  const std::vector<int64_t>& d = x.shape();
  const int64_t batches = d[size_t(batch_axis)], steps = d[size_t(1 - batch_axis)];
  std::vector<int64_t> lens = read_ints(node, *in[1], "sequence_lens");
  if (static_cast<int64_t>(lens.size()) != batches)
    node_fail(node, "sequence_lens has {} values for a batch of {}", lens.size(), batches);
  for (int64_t l : lens)
    if (l < 0 || l > steps) node_fail(node, "sequence length {} is outside [0, {}]", l, steps);
  const size_t esize = dtype_size(x.dtype()), row = size_t(dims_product(d, 2, d.size())) * esize;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out[0].raw());
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t from = t < lens[size_t(b)] ? lens[size_t(b)] - 1 - t : t;
      auto at = [&](int64_t step) { return size_t(batch_axis == 0 ? b * steps + step : step * batches + b) * row; };
      std::memcpy(dst + at(t), src + at(from), row);
    }
}

// ---- BitShift ----------------------------------------------------------------------------------------

std::vector<TensorType> infer_bitshift(InferContext& ctx) {
  const TensorType &x = ctx.in(0), &y = ctx.in(1);
  if (!is_integer(x.dtype) || x.dtype != y.dtype)
    ctx.fail("X and Y must have one integer type, they are {} and {}", dtype_name(x.dtype), dtype_name(y.dtype));
  const std::string dir = ctx.node().attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") ctx.fail("direction '{}' is not LEFT or RIGHT", dir);
  return {TensorType{x.dtype, broadcast_shapes(ctx, x.shape, y.shape)}};
}

// The shift amount is read as unsigned (a negative one is a very large shift); a shift of the width
// or more gives 0, or for a right shift of a negative signed value, -1 (the sign fills every bit).
template <class T>
T shifted(T x, T y, bool left) {
  using U = std::make_unsigned_t<T>;
  const U amount = static_cast<U>(y);
  constexpr U width = sizeof(T) * 8;
  if (left) return amount >= width ? T(0) : static_cast<T>(static_cast<U>(static_cast<U>(x) << amount));
  if (amount >= width) return std::is_signed_v<T> && x < 0 ? T(-1) : T(0);
  return static_cast<T>(x >> amount);  // arithmetic for signed types (C++20)
}

void kernel_bitshift(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor &x = *in[0], &y = *in[1];
  Tensor& z = out[0];
  const bool left = node.attr_string("direction", "") == "LEFT";
  const std::vector<int64_t> sx = broadcast_strides(x.shape(), z.shape()), sy = broadcast_strides(y.shape(), z.shape());
  const std::vector<int64_t>& d = z.shape();
  auto run = [&](auto t) {
    using T = decltype(t);
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    T* c = z.data<T>();
    std::vector<int64_t> index(d.size(), 0);
    int64_t ia = 0, ib = 0;
    for (int64_t i = 0; i < z.numel(); ++i) {
      c[i] = shifted(a[ia], b[ib], left);
      for (size_t k = d.size(); k-- > 0;) {
        ia += sx[k], ib += sy[k];
        if (++index[k] < d[k]) break;
        ia -= sx[k] * d[k], ib -= sy[k] * d[k];
        index[k] = 0;
      }
    }
  };
  switch (x.dtype()) {
    case DType::u8: run(uint8_t{}); break;
    case DType::u16: run(uint16_t{}); break;
    case DType::u32: run(uint32_t{}); break;
    case DType::u64: run(uint64_t{}); break;
    case DType::i8: run(int8_t{}); break;
    case DType::i16: run(int16_t{}); break;
    case DType::i32: run(int32_t{}); break;
    case DType::i64: run(int64_t{}); break;
    default: node_fail(node, "BitShift of {} is not supported", dtype_name(x.dtype()));
  }
}

}  // namespace

void register_select_ops(OpRegistry& r) {
  OpDef def;
  def.handles_half = true;  // they move bytes
  def.min_inputs = def.max_inputs = 2;
  def.infer = infer_gather_nd;
  def.kernel = kernel_gather_nd;
  r.add(OpKind::GatherND, def);
  def.infer = infer_compress;
  def.kernel = kernel_compress;
  r.add(OpKind::Compress, def);
  def.infer = infer_reverse_sequence;
  def.kernel = kernel_reverse_sequence;
  r.add(OpKind::ReverseSequence, def);
  def.handles_half = false;
  def.infer = infer_bitshift;
  def.kernel = kernel_bitshift;
  r.add(OpKind::BitShift, def);
  def.min_inputs = def.max_inputs = 1;
  def.infer = infer_nonzero;
  def.kernel = kernel_nonzero;
  r.add(OpKind::NonZero, def);
}

}  // namespace kiln::shape_ops
