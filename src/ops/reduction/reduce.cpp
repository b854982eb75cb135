// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd in their opset-18 form: axes is optional
// input 1; keepdims (default 1); noop_with_empty_axes (default 0): empty axes reduce everything, or
// with noop_with_empty_axes = 1 return the input unchanged. Arithmetic choices: reduce_math.h.
//
// Fast path: size-1 dims are dropped and neighbouring dims of the same kind (reduced / kept) merged,
// so each reduced group is a [outer, len, inner] problem. Groups are reduced one at a time (largest
// first) into an accumulator-typed buffer; the last step writes the output. Each step keeps the inner
// loop contiguous: a last-axis group reduces whole rows (vector row kernels), any other group adds
// rows of `inner` into an accumulator row. When there are fewer (outer, chunk) tasks than threads, the
// reduced axis itself is split and the partial results combined.
#include <cstring>

#include "ops/reduction/f32_kernels.h"
#include "ops/reduction/reduce_math.h"
#include "ops/reduction/reduction_common.h"

namespace kiln {
namespace {

// Which axes a node reduces (`reduced[d]`), or `identity` (noop_with_empty_axes with no axes).
struct ReduceAxes {
  std::vector<bool> reduced;
  bool identity = false;
};

ReduceAxes resolve_axes(const Node& node, const std::vector<int64_t>& axes, int64_t rank) {
  ReduceAxes r;
  if (axes.empty()) {
    if (node.attr_int("noop_with_empty_axes", 0) != 0) r.identity = true;
    r.reduced.assign(static_cast<size_t>(rank), !r.identity);
    return r;
  }
  r.reduced.assign(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      user_error("node '{}' ({}): axis {} is out of range for rank {}", node.name, op_name(node.op), a, rank);
    size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (r.reduced[d]) user_error("node '{}' ({}): axis {} is listed twice", node.name, op_name(node.op), a);
    r.reduced[d] = true;
  }
  return r;
}

std::vector<int64_t> axes_values(const Node& node, const Tensor* axes) {
  if (!axes) return {};
  if (!is_integer(axes->dtype()) || axes->rank() > 1)
    user_error("node '{}' ({}): axes must be a 1-D integer tensor, got {}{}", node.name, op_name(node.op),
               dtype_name(axes->dtype()), axes->shape_string());
  return axes->to_int64_vector();
}

std::vector<TensorType> infer_reduce(InferContext& ctx) {
  const Node& node = ctx.node();
  const TensorType& x = ctx.in(0);
  if (x.dtype == DType::boolean && node.op != OpKind::ReduceMax && node.op != OpKind::ReduceMin)
    ctx.fail("input must be numeric, not bool (bool takes ReduceMax and ReduceMin only)");
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const int64_t rank = x.rank();
  TensorType y{x.dtype, {}};
  std::vector<int64_t> axes;
  if (ctx.has(1) && !ctx.value(1)) {
    // Axes computed at run time: only their count may be known.
    const TensorType& at = ctx.in(1);
    if (at.rank() != 1) ctx.fail("axes must be 1-D, got {}", shape_string(at.shape));
    bool none = at.shape[0].is_static() && at.shape[0].value == 0;
    if (!none) {
      if (keepdims) {
        for (const Dim& d : x.shape) y.shape.push_back(d.is_static() && d.value == 1 ? d : ctx.fresh_dim());
      } else {
        if (!at.shape[0].is_static())
          ctx.fail("with keepdims=0 the number of axes must be known before run time");
        int64_t k = at.shape[0].value;
        if (k > rank) ctx.fail("{} axes for an input of rank {}", k, rank);
        for (int64_t i = 0; i < rank - k; ++i) y.shape.push_back(ctx.fresh_dim());
      }
      return {y};
    }
  } else if (ctx.has(1)) {
    axes = axes_values(node, ctx.value(1));
  }
  ReduceAxes ra = resolve_axes(node, axes, rank);
  if (ra.identity) return {x};
  for (int64_t d = 0; d < rank; ++d) {
    if (!ra.reduced[static_cast<size_t>(d)]) y.shape.push_back(x.shape[static_cast<size_t>(d)]);
    else if (keepdims) y.shape.push_back(Dim::fixed(1));
  }
  return {y};
}

// Splits of the reduced axis so that a step with few (outer, chunk) tasks still uses every thread.
int64_t axis_parts(int64_t base_tasks, int64_t len, int64_t cols) {
  int64_t threads = omp_get_max_threads();
  if (threads <= 1 || base_tasks >= threads) return 1;
  int64_t by_threads = (threads + base_tasks - 1) / base_tasks;
  int64_t by_work = len * cols / 16384;  // at least ~16K elements per part
  return std::max<int64_t>(1, std::min({by_threads, by_work, len}));
}

// Reduces one contiguous row of n elements.
template <ReduceKind K, class T, class In>
acc_t<T> reduce_row(const In* x, int64_t n) {
  using A = acc_t<T>;
  if constexpr (std::is_same_v<T, float> && K != ReduceKind::Prod) {
    const F32Kernels& k = f32_kernels();
    if constexpr (K == ReduceKind::Max) return k.row_max(x, n);
    else if constexpr (K == ReduceKind::Min) return k.row_min(x, n);
    else return k.row_sum(x, n);
  }
  A acc = reduce_init<K, T, A>();
  for (int64_t i = 0; i < n; ++i) acc = reduce_step<K, A>(acc, static_cast<A>(x[i]));
  return acc;
}

// acc[0, cnt) = reduction over `rows` rows (`stride` apart) of cnt contiguous elements.
template <ReduceKind K, class T, class In>
void reduce_block(const In* x, int64_t rows, int64_t stride, int64_t cnt, acc_t<T>* acc) {
  using A = acc_t<T>;
  constexpr bool kSum = K == ReduceKind::Sum || K == ReduceKind::Mean;
  if (stride == 1) {
    acc[0] = reduce_row<K, T>(x, rows);
    return;
  }
  std::fill_n(acc, cnt, reduce_init<K, T, A>());
  // Float sums add blocks of 64 rows apart, then the blocks: rounding error grows like
  // rows/64 + 64 rather than rows.
  constexpr int64_t kBlockRows = kSum && std::is_floating_point_v<A> ? 64 : std::numeric_limits<int64_t>::max();
  A block[kColumnChunk];
  if constexpr (std::is_same_v<T, float> && K != ReduceKind::Prod) {
    if (cnt >= 16) {  // narrower rows: the inlined loop below beats a call per row
      const F32Kernels& k = f32_kernels();
      if constexpr (!kSum) {
        for (int64_t r = 0; r < rows; ++r) (K == ReduceKind::Max ? k.col_max : k.col_min)(acc, x + r * stride, cnt);
      } else {
        for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
          std::fill_n(block, cnt, 0.0f);
          for (int64_t r = r0; r < std::min(rows, r0 + kBlockRows); ++r) k.col_add(block, x + r * stride, cnt);
          k.col_add(acc, block, cnt);
        }
      }
      return;
    }
  }
  for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
    int64_t r1 = rows - r0 > kBlockRows ? r0 + kBlockRows : rows;
    A* into = kBlockRows < rows ? block : acc;
    if (into == block) std::fill_n(block, cnt, reduce_init<K, T, A>());
    for (int64_t r = r0; r < r1; ++r) {
      const In* row = x + r * stride;
      for (int64_t j = 0; j < cnt; ++j) into[j] = reduce_step<K, A>(into[j], static_cast<A>(row[j]));
    }
    if (into == block)
      for (int64_t j = 0; j < cnt; ++j) acc[j] = reduce_step<K, A>(acc[j], block[j]);
  }
}

// One [outer, len, inner] -> [outer, inner] step. `last`: finalize (Mean divides by `count`, the
// number of elements reduced over all steps) and write the output type.
template <ReduceKind K, class T, class In, class Out>
void reduce_step_run(const In* x, Out* y, int64_t outer, int64_t len, int64_t inner, bool last, int64_t count) {
  using A = acc_t<T>;
  auto finish = [&](A a) -> Out {
    return last ? static_cast<Out>(reduce_finalize<K, T, A>(a, count)) : static_cast<Out>(a);
  };
  const int64_t chunks = (inner + kColumnChunk - 1) / kColumnChunk, cols = std::min(inner, kColumnChunk);
  const int64_t parts = axis_parts(outer * chunks, len, cols);
  if (parts == 1) {
    for_outer_and_chunks(outer, inner, len * cols, [&](int64_t o, int64_t j0, int64_t cnt) {
      A acc[kColumnChunk];
      reduce_block<K, T>(x + o * len * inner + j0, len, inner, cnt, acc);
      for (int64_t j = 0; j < cnt; ++j) y[o * inner + j0 + j] = finish(acc[j]);
    });
    return;
  }
  const int64_t per_part = (len + parts - 1) / parts, n_out = outer * inner;
  std::vector<A> partial(static_cast<size_t>(parts * n_out));
  parallel_for(outer * chunks * parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t p = t % parts, task = t / parts, o = task / chunks, j0 = (task % chunks) * kColumnChunk;
      int64_t cnt = std::min(kColumnChunk, inner - j0);
      int64_t k0 = std::min(len, p * per_part), k1 = std::min(len, k0 + per_part);
      reduce_block<K, T>(x + (o * len + k0) * inner + j0, k1 - k0, inner, cnt,
                         partial.data() + p * n_out + o * inner + j0);
    }
  });
  parallel_for(n_out, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      A acc = partial[static_cast<size_t>(i)];
      for (int64_t p = 1; p < parts; ++p) acc = reduce_step<K, A>(acc, partial[static_cast<size_t>(p * n_out + i)]);
      y[i] = finish(acc);
    }
  });
}

template <ReduceKind K, class T>
void reduce_fast(const Tensor& x, const std::vector<bool>& reduced, Tensor& y) {
  using A = acc_t<T>;
  struct Group {
    int64_t size;
    bool reduced;
  };
  std::vector<Group> groups;
  int64_t count = 1;
  for (int d = 0; d < x.rank(); ++d) {
    int64_t size = x.dim(d);
    bool red = reduced[static_cast<size_t>(d)];
    if (red) count *= size;
    if (size == 1) continue;  // reducing or keeping a size-1 dim moves no data
    if (!groups.empty() && groups.back().reduced == red) groups.back().size *= size;
    else groups.push_back({size, red});
  }
  T* yd = y.data<T>();
  if (x.numel() == 0) {  // a zero-size reduced axis (the output is not empty)
    std::fill_n(yd, y.numel(), reduce_finalize<K, T, A>(reduce_init<K, T, A>(), count));
    return;
  }
  auto has_reduced = [&] {
    return std::any_of(groups.begin(), groups.end(), [](const Group& g) { return g.reduced; });
  };
  if (!has_reduced()) {
    std::memcpy(yd, x.data<T>(), x.nbytes());
    return;
  }
  std::vector<A> buffers[2];
  const void* cur = x.raw();
  bool cur_is_input = true;
  for (int which = 0;; which ^= 1) {
    size_t gi = 0;
    for (size_t i = 0; i < groups.size(); ++i)
      if (groups[i].reduced && (!groups[gi].reduced || groups[i].size > groups[gi].size)) gi = i;
    int64_t outer = 1, inner = 1, len = groups[gi].size;
    for (size_t i = 0; i < groups.size(); ++i) (i < gi ? outer : inner) *= i == gi ? 1 : groups[i].size;
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(gi));
    if (gi > 0 && gi < groups.size() && groups[gi - 1].reduced == groups[gi].reduced) {
      groups[gi - 1].size *= groups[gi].size;
      groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(gi));
    }
    const bool last = !has_reduced();
    auto run = [&](const auto* in, auto* out) {
      reduce_step_run<K, T>(in, out, outer, len, inner, last, count);
    };
    if (last) {
      if (cur_is_input) run(static_cast<const T*>(cur), yd);
      else run(static_cast<const A*>(cur), yd);
      return;
    }
    std::vector<A>& next = buffers[which];
    next.resize(static_cast<size_t>(outer * inner));
    if (cur_is_input) run(static_cast<const T*>(cur), next.data());
    else run(static_cast<const A*>(cur), next.data());
    cur = next.data();
    cur_is_input = false;
  }
}

// The fp64 oracle: one pass over the input in order, accumulating into the output element each
// input element maps to (double for floats, int64 for integers).
template <ReduceKind K, class T>
void reduce_reference(const Tensor& x, const std::vector<bool>& reduced, Tensor& y) {
  using A = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  const int rank = x.rank();
  std::vector<int64_t> out_stride(static_cast<size_t>(rank), 0);
  int64_t stride = 1, count = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (reduced[static_cast<size_t>(d)]) {
      count *= x.dim(d);
    } else {
      out_stride[static_cast<size_t>(d)] = stride;
      stride *= x.dim(d);
    }
  }
  std::vector<A> acc(static_cast<size_t>(y.numel()), reduce_init<K, T, A>());
  const T* xd = x.data<T>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rest = i, o = 0;
    for (int d = rank - 1; d >= 0; --d) {
      o += (rest % x.dim(d)) * out_stride[static_cast<size_t>(d)];
      rest /= x.dim(d);
    }
    acc[static_cast<size_t>(o)] = reduce_step<K, A>(acc[static_cast<size_t>(o)], static_cast<A>(xd[i]));
  }
  T* yd = y.data<T>();
  for (int64_t o = 0; o < y.numel(); ++o) yd[o] = reduce_finalize<K, T, A>(acc[static_cast<size_t>(o)], count);
}

template <ReduceKind K>
void reduce_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                   const KernelContext& ctx) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  ReduceAxes ra = resolve_axes(node, axes_values(node, in.size() > 1 ? in[1] : nullptr), x.rank());
  if (ra.identity) {
    if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  if (y.numel() == 0) return;
  // bool (ReduceMax: any, ReduceMin: all) as its bytes, 0 and 1; an empty ReduceMin's 255 becomes true.
  const bool boolean = x.dtype() == DType::boolean;
  dispatch_numeric(boolean ? DType::u8 : x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (ctx.reference) reduce_reference<K, T>(x, ra.reduced, y);
    else reduce_fast<K, T>(x, ra.reduced, y);
  });
  if (boolean) {
    auto* yd = static_cast<uint8_t*>(y.raw());
    for (int64_t i = 0; i < y.numel(); ++i) yd[i] = yd[i] != 0;
  }
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  auto def = [](KernelFn k) { return OpDef{.infer = infer_reduce, .kernel = k, .min_inputs = 1, .max_inputs = 2}; };
  r.add(OpKind::ReduceSum, def(reduce_kernel<ReduceKind::Sum>));
  r.add(OpKind::ReduceMean, def(reduce_kernel<ReduceKind::Mean>));
  r.add(OpKind::ReduceMax, def(reduce_kernel<ReduceKind::Max>));
  r.add(OpKind::ReduceMin, def(reduce_kernel<ReduceKind::Min>));
  r.add(OpKind::ReduceProd, def(reduce_kernel<ReduceKind::Prod>));
}

}  // namespace kiln
