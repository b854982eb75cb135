// Unique: the distinct elements of X (flattened), or its distinct slices along `axis`, sorted
// ascending (sorted=1, slices lexicographically) or in the order of their first occurrence, with the
// index of each one's first occurrence, the inverse map and the counts (numpy.unique's four results).
// NaN equals NaN and sorts last (numpy's equal_nan). The sizes depend on the values: exact when X is
// known (always at run time), else a fresh dim.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

// X as rows of a [count, width] matrix: the slices along the axis (one element each without it).
struct Rows {
  int64_t outer = 1, count = 1, inner = 1;
  int64_t width() const { return outer * inner; }
  int64_t at(int64_t row, int64_t col) const { return ((col / inner) * count + row) * inner + col % inner; }
};

Rows rows_of(const std::vector<int64_t>& shape, std::optional<int64_t> axis) {
  Rows r;
  if (!axis) {
    r.count = 1;
    for (int64_t d : shape) r.count *= d;
    return r;
  }
  for (size_t k = 0; k < shape.size(); ++k) {
    if (int64_t(k) < *axis) r.outer *= shape[k];
    if (int64_t(k) == *axis) r.count = shape[k];
    if (int64_t(k) > *axis) r.inner *= shape[k];
  }
  return r;
}

template <class T>
bool nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}
template <class T>
int compare(T a, T b) {  // NaN == NaN, after every number
  if (nan(a) || nan(b)) return nan(a) == nan(b) ? 0 : nan(a) ? 1 : -1;
  return a < b ? -1 : b < a ? 1 : 0;
}

// The groups of equal rows: for each group its first row, in output order; and each row's group.
struct Groups {
  std::vector<int64_t> first, count, of_row;
};

template <class T>
Groups group_rows(const T* x, const Rows& r, bool sorted) {
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t c = 0; c < r.width(); ++c)
      if (int d = compare(x[r.at(a, c)], x[r.at(b, c)])) return d;
    return 0;
  };
  std::vector<int64_t> order(size_t(r.count));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  Groups g;
  g.of_row.assign(size_t(r.count), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
      g.first.push_back(order[i]);  // stable: the lowest row of its group
      g.count.push_back(0);
    }
    g.of_row[size_t(order[i])] = int64_t(g.first.size()) - 1;
    ++g.count.back();
  }
  if (!sorted) {  // renumber the groups by first occurrence
    std::vector<int64_t> by_first(g.first.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return g.first[size_t(a)] < g.first[size_t(b)]; });
    std::vector<int64_t> rank(by_first.size());
    for (size_t i = 0; i < by_first.size(); ++i) rank[size_t(by_first[i])] = int64_t(i);
    Groups s;
    s.first.resize(g.first.size()), s.count.resize(g.first.size()), s.of_row.resize(g.of_row.size());
    for (size_t i = 0; i < g.first.size(); ++i) {
      s.first[size_t(rank[i])] = g.first[i];
      s.count[size_t(rank[i])] = g.count[i];
    }
    for (size_t k = 0; k < g.of_row.size(); ++k) s.of_row[k] = rank[size_t(g.of_row[k])];
    return s;
  }
  return g;
}

std::optional<int64_t> unique_axis(const Node& node, int64_t rank) {
  if (!node.has_attr("axis")) return std::nullopt;
  return normalize_axis(node, node.attr_int("axis", 0), std::max<int64_t>(rank, 1));
}

Groups groups_of(const Node& node, const Tensor& x) {
  const std::optional<int64_t> axis = unique_axis(node, x.rank());
  const Rows r = rows_of(x.rank() == 0 ? std::vector<int64_t>{1} : x.shape(), axis);
  const bool sorted = node.attr_int("sorted", 1) != 0;
  return dispatch_all(x.dtype(), [&](auto t) { return group_rows(x.data<decltype(t)>(), r, sorted); });
}

std::vector<TensorType> infer_unique(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const std::optional<int64_t> axis = unique_axis(ctx.node(), x.rank());
  const Dim groups = ctx.value(0) ? Dim::fixed(int64_t(groups_of(ctx.node(), *ctx.value(0)).first.size())) : ctx.fresh_dim();
  TensorType y = x;
  Dim rows = Dim::fixed(1);
  if (axis) {
    if (x.rank() == 0) ctx.fail("axis is given for a scalar input");
    rows = x.shape[size_t(*axis)];
    y.shape[size_t(*axis)] = groups;
  } else {
    if (is_static(x.shape)) {
      int64_t n = 1;
      for (const Dim& d : x.shape) n *= d.value;
      rows = Dim::fixed(n);
    } else {
      rows = ctx.fresh_dim();
    }
    y.shape = {groups};
  }
  return {y, TensorType{DType::i64, {groups}}, TensorType{DType::i64, {rows}}, TensorType{DType::i64, {groups}}};
}

void kernel_unique(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  const std::optional<int64_t> axis = unique_axis(node, x.rank());
  const Rows r = rows_of(x.rank() == 0 ? std::vector<int64_t>{1} : x.shape(), axis);
  const Groups g = groups_of(node, x);
  const Rows yr{r.outer, int64_t(g.first.size()), r.inner};
  if (out.size() > 0 && out[0].raw()) {
    const size_t es = dtype_size(x.dtype());
    const auto* src = static_cast<const unsigned char*>(x.raw());
    auto* dst = static_cast<unsigned char*>(out[0].raw());
    for (int64_t k = 0; k < yr.count; ++k)
      for (int64_t c = 0; c < r.width(); ++c)
        std::memcpy(dst + size_t(yr.at(k, c)) * es, src + size_t(r.at(g.first[size_t(k)], c)) * es, es);
  }
  const std::vector<int64_t>* lists[] = {&g.first, &g.of_row, &g.count};
  for (size_t i = 1; i < out.size() && i < 4; ++i)
    if (out[i].raw()) std::copy(lists[i - 1]->begin(), lists[i - 1]->end(), out[i].data<int64_t>());
}

}  // namespace

void register_unique_op(OpRegistry& r) {
  OpDef def;
  def.infer = infer_unique;
  def.kernel = kernel_unique;
  def.min_inputs = def.max_inputs = 1;
  r.add(OpKind::Unique, def);
}

}  // namespace kiln::shape_ops
