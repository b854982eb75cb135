#include "ops/common.h"

namespace kiln {

int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    ctx.fail("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    user_error("node '{}' ({}): axis {} is out of range for rank {}", node.name, op_name(node.op), axis, rank);
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const InferContext& ctx, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    auto is_one = [](const Dim* d) { return d->is_static() && d->value == 1; };
    if (is_one(da)) out[i] = *db;
    else if (is_one(db)) out[i] = *da;
    else if (da->is_static() && db->is_static()) {
      if (da->value != db->value)
        ctx.fail("cannot broadcast shapes {} and {}", shape_string(a), shape_string(b));
      out[i] = *da;
    } else if (da->is_static()) out[i] = *da;   // the symbol must equal it (or be 1)
    else if (db->is_static()) out[i] = *db;
    else out[i] = *da;  // two symbols: assumed equal, checked at run time
  }
  return out;
}

std::vector<int64_t> broadcast_dims(const Node& node, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      user_error("node '{}' ({}): cannot broadcast dimension {} against {}", node.name, op_name(node.op), da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> cs = contiguous_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : cs[i];
  return s;
}

}  // namespace kiln
