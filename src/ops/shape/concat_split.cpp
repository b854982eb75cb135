// Concat and Split: the axis dim is summed / cut; the other dims must agree.
#include <algorithm>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

// The sum of `dims` as one Dim: static when all are, the one symbol when the rest add up to 0.
Dim sum_dim(InferContext& ctx, const std::vector<const Dim*>& dims) {
  int64_t fixed = 0;
  const Dim* symbol = nullptr;
  int symbols = 0;
  for (const Dim* d : dims) {
    if (d->is_static()) fixed = checked_add(fixed, d->value, node_what(ctx.node()));
    else { ++symbols; symbol = d; }
  }
  if (symbols == 0) return Dim::fixed(fixed);
  if (symbols == 1 && fixed == 0) return *symbol;
  return ctx.fresh_dim();
}

std::vector<TensorType> infer_concat(InferContext& ctx) {
  size_t n = ctx.num_inputs();
  if (n == 0) ctx.fail("needs at least one input");
  const TensorType& first = ctx.in(0);
  int64_t rank = first.rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  if (!ctx.node().has_attr("axis")) ctx.fail("the axis attribute is required");
  int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank);
  Shape out = first.shape;
  std::vector<const Dim*> axis_dims;
  for (size_t i = 0; i < n; ++i) {
    const TensorType& t = ctx.in(i);
    if (t.dtype != first.dtype) ctx.fail("input {} is {} but input 0 is {}", i, dtype_name(t.dtype), dtype_name(first.dtype));
    if (t.rank() != rank) ctx.fail("input {} has rank {} but input 0 has rank {}", i, t.rank(), rank);
    for (int64_t k = 0; k < rank; ++k) {
      const Dim& d = t.shape[static_cast<size_t>(k)];
      Dim& o = out[static_cast<size_t>(k)];
      if (k == axis) continue;
      if (d.is_static() && o.is_static() && d.value != o.value)
        ctx.fail("input {} {} does not match input 0 {} outside axis {}", i, shape_string(t.shape),
                 shape_string(first.shape), axis);
      if (d.is_static()) o = d;  // a static size pins the symbol
    }
    axis_dims.push_back(&t.shape[static_cast<size_t>(axis)]);
  }
  out[static_cast<size_t>(axis)] = sum_dim(ctx, axis_dims);
  return {TensorType{first.dtype, out}};
}

void kernel_concat(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  int64_t axis = normalize_axis(node, node.attr_int("axis", 0), y.rank());
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= y.dim(static_cast<int>(k));
  size_t out_row = y.nbytes() / static_cast<size_t>(outer);
  // Byte offset of each input's block inside an output row.
  std::vector<size_t> block(in.size()), offset(in.size());
  size_t acc = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    block[i] = in[i]->nbytes() / static_cast<size_t>(outer);
    offset[i] = acc;
    acc += block[i];
  }
  auto* dst = static_cast<char*>(y.raw());
  if (outer < 2 * omp_get_max_threads()) {
    // Few rows (axis 0 or near it): cut every block into pieces so that all threads copy.
    struct Piece {
      char* to;
      const char* from;
      size_t bytes;
    };
    constexpr size_t kPiece = size_t{1} << 16;
    std::vector<Piece> pieces;
    for (int64_t r = 0; r < outer; ++r)
      for (size_t i = 0; i < in.size(); ++i)
        for (size_t at = 0; at < block[i]; at += kPiece)
          pieces.push_back({dst + static_cast<size_t>(r) * out_row + offset[i] + at,
                            static_cast<const char*>(in[i]->raw()) + static_cast<size_t>(r) * block[i] + at,
                            std::min(kPiece, block[i] - at)});
    parallel_for(static_cast<int64_t>(pieces.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const Piece& p = pieces[static_cast<size_t>(k)];
        std::memcpy(p.to, p.from, p.bytes);
      }
    });
    return;
  }
  int64_t min_rows = std::max<int64_t>(1, static_cast<int64_t>((size_t{1} << 16) / std::max<size_t>(out_row, 1)));
  parallel_for(outer, min_rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      for (size_t i = 0; i < in.size(); ++i)
        if (block[i])
          std::memcpy(dst + static_cast<size_t>(r) * out_row + offset[i],
                      static_cast<const char*>(in[i]->raw()) + static_cast<size_t>(r) * block[i], block[i]);
  });
}

// ---- Split -----------------------------------------------------------------------------------------

std::vector<TensorType> infer_split(InferContext& ctx) {
  const Node& node = ctx.node();
  const TensorType& data = ctx.in(0);
  if (data.rank() == 0) ctx.fail("cannot split a scalar");
  size_t axis = static_cast<size_t>(normalize_axis(ctx, node.attr_int("axis", 0), data.rank()));
  size_t n_out = node.outputs.size();
  if (n_out == 0) ctx.fail("has no outputs");
  const Dim& dim = data.shape[axis];
  std::vector<Dim> sizes;
  if (ctx.has(1)) {
    if (node.has_attr("num_outputs")) ctx.fail("takes either the split input or num_outputs, not both");
    require_integer_input(ctx, 1, "split");
    if (const Tensor* split_value = ctx.value(1)) {
      std::vector<int64_t> split = read_ints(node, *split_value, "split");
      if (split.size() != n_out) ctx.fail("split has {} entries for {} outputs", split.size(), n_out);
      int64_t sum = 0;
      for (int64_t s : split) {
        if (s < 0) ctx.fail("split [{}] has a negative entry", fmt::join(split, ","));
        sum = checked_add(sum, s, node_what(node));
        sizes.push_back(Dim::fixed(s));
      }
      if (dim.is_static() && sum != dim.value)
        ctx.fail("split [{}] sums to {} but axis {} has size {}", fmt::join(split, ","), sum, axis, dim.value);
    } else {
      for (size_t k = 0; k < n_out; ++k) sizes.push_back(n_out == 1 ? dim : ctx.fresh_dim());
    }
  } else {
    int64_t n = node.attr_int("num_outputs", static_cast<int64_t>(n_out));
    if (n != static_cast<int64_t>(n_out)) ctx.fail("num_outputs is {} but the node has {} outputs", n, n_out);
    if (dim.is_static()) {
      // Opset 18: equal chunks of ceil(dim / n); the last one (or ones, when dim is small) smaller.
      int64_t chunk = (dim.value + n - 1) / n, left = dim.value;
      for (size_t k = 0; k < n_out; ++k) {
        int64_t s = std::min(chunk, left);
        sizes.push_back(Dim::fixed(s));
        left -= s;
      }
    } else {
      for (size_t k = 0; k < n_out; ++k) sizes.push_back(n_out == 1 ? dim : ctx.fresh_dim());
    }
  }
  std::vector<TensorType> out;
  for (const Dim& s : sizes) {
    TensorType t = data;
    t.shape[axis] = s;
    out.push_back(std::move(t));
  }
  return out;
}

void kernel_split(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  int64_t axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  int64_t outer = 1, inner = 1, dim = x.dim(static_cast<int>(axis));
  for (int64_t k = 0; k < x.rank(); ++k) {
    if (k < axis) outer *= x.dim(static_cast<int>(k));
    if (k > axis) inner *= x.dim(static_cast<int>(k));
  }
  size_t esize = dtype_size(x.dtype());
  // Sizes from inference on the concrete inputs: an omitted output still takes its share of the axis.
  std::vector<TensorType> types = concrete_infer(infer_split, node, in);
  int64_t start = 0;
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t size = types[k].shape[static_cast<size_t>(axis)].value;
    if (node.outputs[k] == kNoValue) {
      start += size;
      continue;
    }
    std::vector<int64_t> dims{outer, size * inner}, strides{dim * inner, 1};
    strided_copy(esize, dims, strides, static_cast<const char*>(x.raw()) + static_cast<size_t>(start * inner) * esize,
                 out[k].raw());
    start += size;
  }
}

}  // namespace

void register_concat_split_ops(OpRegistry& r) {
  OpDef concat;
  concat.infer = infer_concat;
  concat.kernel = kernel_concat;
  concat.handles_half = true;
  concat.min_inputs = 1;
  concat.max_inputs = -1;
  r.add(OpKind::Concat, concat);
  OpDef split;
  split.infer = infer_split;
  split.kernel = kernel_split;
  split.handles_half = true;
  split.min_inputs = 1;
  split.max_inputs = 2;
  r.add(OpKind::Split, split);
}

}  // namespace kiln::shape_ops
