// Pad (modes constant / reflect / edge / wrap; negative pads crop) and Trilu (keep the upper or lower
// triangle of the last two dims, zero elsewhere).
#include <algorithm>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

enum class PadMode { constant, reflect, edge, wrap };

PadMode pad_mode(const Node& node) {
  std::string m = node.attr_string("mode", "constant");
  if (m == "constant") return PadMode::constant;
  if (m == "reflect") return PadMode::reflect;
  if (m == "edge") return PadMode::edge;
  if (m == "wrap") return PadMode::wrap;
  node_fail(node, "unknown mode '{}'", m);
}

// Begin and end pads for every axis of a rank-`rank` input.
struct PadAmounts {
  std::vector<int64_t> begin, end;
};

PadAmounts read_pads(const Node& node, int64_t rank, const Tensor& pads_value, const Tensor* axes_value) {
  std::vector<int64_t> pads = read_ints(node, pads_value, "pads");
  std::vector<int64_t> axes;
  if (axes_value) {
    for (int64_t a : read_ints(node, *axes_value, "axes")) {
      int64_t n = normalize_axis(node, a, rank);
      if (std::find(axes.begin(), axes.end(), n) != axes.end()) node_fail(node, "axis {} appears more than once", a);
      axes.push_back(n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    node_fail(node, "pads has {} entries for {} axes (needs {})", pads.size(), axes.size(), 2 * axes.size());
  PadAmounts p{std::vector<int64_t>(static_cast<size_t>(rank), 0), std::vector<int64_t>(static_cast<size_t>(rank), 0)};
  for (size_t i = 0; i < axes.size(); ++i) {
    p.begin[static_cast<size_t>(axes[i])] = pads[i];
    p.end[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  return p;
}

// Output size of one padded axis of static size `dim`.
int64_t padded_dim(const Node& node, PadMode mode, int64_t dim, int64_t begin, int64_t end, size_t axis) {
  std::string what = node_what(node);
  int64_t out = checked_add(checked_add(dim, begin, what), end, what);
  if (out < 0) node_fail(node, "pads {} and {} leave axis {} of size {} with size {}", begin, end, axis, dim, out);
  if (mode != PadMode::constant && dim == 0 && out > 0)
    node_fail(node, "cannot pad the empty axis {} in a non-constant mode", axis);
  return out;
}

std::vector<TensorType> infer_pad(InferContext& ctx) {
  const Node& node = ctx.node();
  const TensorType& data = ctx.in(0);
  PadMode mode = pad_mode(node);
  require_integer_input(ctx, 1, "pads");
  if (ctx.has(3)) require_integer_input(ctx, 3, "axes");
  if (ctx.has(2) && ctx.in(2).dtype != data.dtype)
    ctx.fail("constant_value is {} but data is {}", dtype_name(ctx.in(2).dtype), dtype_name(data.dtype));
  int64_t rank = data.rank();
  Shape out = data.shape;
  const Tensor* pads = ctx.value(1);
  const Tensor* axes = ctx.has(3) ? ctx.value(3) : nullptr;
  if (pads && (!ctx.has(3) || axes)) {
    PadAmounts p = read_pads(node, rank, *pads, axes);
    for (size_t k = 0; k < out.size(); ++k) {
      Dim& d = out[k];
      if (d.is_static()) d = Dim::fixed(padded_dim(node, mode, d.value, p.begin[k], p.end[k], k));
      else if (p.begin[k] != 0 || p.end[k] != 0) d = ctx.fresh_dim();
    }
    return {TensorType{data.dtype, out}};
  }
  if (ctx.has(3) && axes) {  // pads unknown: only the listed axes change
    for (int64_t a : read_ints(node, *axes, "axes")) out[static_cast<size_t>(normalize_axis(ctx, a, rank))] = ctx.fresh_dim();
  } else {
    for (Dim& d : out) d = ctx.fresh_dim();
  }
  return {TensorType{data.dtype, out}};
}

// For each output position of one axis, the input position it reads, or -1 for the constant.
std::vector<int64_t> pad_index_map(PadMode mode, int64_t dim, int64_t begin, int64_t out_dim) {
  std::vector<int64_t> map(static_cast<size_t>(out_dim));
  for (int64_t o = 0; o < out_dim; ++o) {
    int64_t i = o - begin, r = -1;
    switch (mode) {
      case PadMode::constant: r = i >= 0 && i < dim ? i : -1; break;
      case PadMode::edge: r = std::clamp<int64_t>(i, 0, dim - 1); break;
      case PadMode::wrap: r = ((i % dim) + dim) % dim; break;
      case PadMode::reflect: {  // numpy's reflect, repeated for pads wider than the axis
        if (dim == 1) { r = 0; break; }
        int64_t period = 2 * (dim - 1), m = ((i % period) + period) % period;
        r = m < dim ? m : period - m;
        break;
      }
    }
    map[static_cast<size_t>(o)] = r;
  }
  return map;
}

void kernel_pad(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  PadMode mode = pad_mode(node);
  const Tensor* axes = in.size() > 3 ? in[3] : nullptr;
  PadAmounts p = read_pads(node, x.rank(), *in[1], axes);
  size_t rank = static_cast<size_t>(x.rank()), esize = dtype_size(x.dtype());
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t od = padded_dim(node, mode, x.shape()[k], p.begin[k], p.end[k], k);
    KILN_INTERNAL_CHECK(od == y.shape()[k], "{}: padded size {} != allocated {}", node_what(node), od, y.shape()[k]);
    maps[k] = pad_index_map(mode, x.shape()[k], p.begin[k], od);
  }
  uint64_t fill_bits = 0;  // the constant as raw bytes (zero when absent)
  const Tensor* cv = in.size() > 2 ? in[2] : nullptr;
  if (mode == PadMode::constant && cv && cv->numel() > 0) store_scalar(x.dtype(), *cv, &fill_bits);
  if (rank == 0) {
    std::memcpy(y.raw(), x.raw(), esize);
    return;
  }
  std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  const std::vector<int64_t>& od = y.shape();
  int64_t inner = od[rank - 1], rows = y.numel() / inner;
  const std::vector<int64_t>& inner_map = maps[rank - 1];
  // Output columns [lo, hi) of a row read the input row in order, in every mode: one memcpy.
  int64_t inner_begin = p.begin[rank - 1];
  int64_t lo = std::clamp<int64_t>(inner_begin, 0, inner);
  int64_t hi = std::clamp<int64_t>(inner_begin + x.shape()[rank - 1], 0, inner);
  dispatch_bytes(esize, [&](auto u) {
    using U = decltype(u);
    U fill;
    std::memcpy(&fill, &fill_bits, sizeof(U));
    const U* src = static_cast<const U*>(x.raw());
    U* dst = static_cast<U*>(y.raw());
    parallel_for(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        U* q = dst + row * inner;
        int64_t rest = row, off = 0;
        bool constant_row = false;
        for (size_t k = rank - 1; k-- > 0;) {
          int64_t i = maps[k][static_cast<size_t>(rest % od[k])];
          rest /= od[k];
          if (i < 0) constant_row = true;
          else off += i * in_strides[k];
        }
        if (constant_row) {
          std::fill(q, q + inner, fill);
          continue;
        }
        const U* s = src + off;
        auto mapped = [&](int64_t j) {
          int64_t i = inner_map[static_cast<size_t>(j)];
          q[j] = i < 0 ? fill : s[i];
        };
        for (int64_t j = 0; j < lo; ++j) mapped(j);
        if (hi > lo) std::memcpy(q + lo, s + (lo - inner_begin), static_cast<size_t>(hi - lo) * sizeof(U));
        for (int64_t j = std::max(lo, hi); j < inner; ++j) mapped(j);
      }
    });
  });
}

// ---- Trilu -----------------------------------------------------------------------------------------

std::vector<TensorType> infer_trilu(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  if (data.rank() < 2) ctx.fail("needs rank >= 2, got {}", type_string(data));
  if (ctx.has(1)) {
    require_integer_input(ctx, 1, "k");
    if (const Tensor* k = ctx.value(1); k && k->numel() != 1) ctx.fail("k must be a scalar, got {}", k->shape_string());
  }
  return {data};
}

void kernel_trilu(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (x.numel() == 0) return;
  bool upper = node.attr_int("upper", 1) != 0;
  int64_t n = x.dim(-2), m = x.dim(-1);
  int64_t k = in.size() > 1 && in[1] ? read_ints(node, *in[1], "k").at(0) : 0;
  k = std::clamp<int64_t>(k, -(n + 1), m + 1);  // beyond the matrix all k behave alike (no overflow below)
  size_t esize = dtype_size(x.dtype());
  int64_t rows = x.numel() / m;
  const auto* src = static_cast<const char*>(x.raw());
  auto* dst = static_cast<char*>(y.raw());
  parallel_for(rows, std::max<int64_t>(1, 16384 / m), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t i = r % n;
      // Kept columns [lo, hi): upper keeps j >= i + k, lower keeps j <= i + k.
      int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, m) : 0;
      int64_t hi = upper ? m : std::clamp<int64_t>(i + k + 1, 0, m);
      size_t row = static_cast<size_t>(r * m) * esize;
      size_t l = static_cast<size_t>(lo) * esize, h = static_cast<size_t>(std::max(lo, hi)) * esize;
      size_t end = static_cast<size_t>(m) * esize;
      std::memset(dst + row, 0, l);
      std::memcpy(dst + row + l, src + row + l, h - l);
      std::memset(dst + row + h, 0, end - h);
    }
  });
}

}  // namespace

void register_pad_trilu_ops(OpRegistry& r) {
  OpDef pad;
  pad.infer = infer_pad;
  pad.kernel = kernel_pad;
  pad.handles_half = true;
  pad.min_inputs = 2;
  pad.max_inputs = 4;
  r.add(OpKind::Pad, pad);
  OpDef trilu;
  trilu.infer = infer_trilu;
  trilu.kernel = kernel_trilu;
  trilu.handles_half = true;
  trilu.min_inputs = 1;
  trilu.max_inputs = 2;
  r.add(OpKind::Trilu, trilu);
}

}  // namespace kiln::shape_ops
