#include "loops/index_layout.h"

#include "support/error.h"

namespace kiln::loops {

std::vector<Expr> sizes_of(const Shape& shape, int64_t sym_min_value) {
  std::vector<Expr> out;
  out.reserve(shape.size());
  for (const Dim& d : shape) out.push_back(from_dim(d, sym_min_value));
  return out;
}

std::vector<Expr> row_major_strides(const std::vector<Expr>& sizes) {
  std::vector<Expr> strides(sizes.size());
  Expr running(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running = running * sizes[i];
  }
  return strides;
}

Expr linear_index(const std::vector<Expr>& idx, const std::vector<Expr>& strides) {
  KILN_INTERNAL_CHECK(idx.size() == strides.size(), "linear_index: {} indices for {} strides", idx.size(),
                      strides.size());
  std::vector<Expr> terms;
  terms.reserve(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) terms.push_back(idx[i] * strides[i]);
  return add(terms);
}

std::vector<Expr> broadcast_strides(const std::vector<Expr>& in_sizes, const std::vector<Expr>& out_sizes) {
  KILN_INTERNAL_CHECK(in_sizes.size() <= out_sizes.size(), "broadcast from rank {} to lower rank {}",
                      in_sizes.size(), out_sizes.size());
  std::vector<Expr> in_strides = row_major_strides(in_sizes);
  size_t lead = out_sizes.size() - in_sizes.size();
  std::vector<Expr> strides(out_sizes.size(), Expr(0));
  for (size_t i = 0; i < in_sizes.size(); ++i) {
    const Expr& in = in_sizes[i];
    const Expr& out = out_sizes[lead + i];
    if (in.is_const(1)) continue;  // a real zero: every output position reads element 0
    KILN_INTERNAL_CHECK(!(in.is_const() && out.is_const()) || in == out,
                        "broadcast of size {} to size {}", to_string(in), to_string(out));
    strides[lead + i] = in_strides[i];
  }
  return strides;
}

Expr broadcast_index(const std::vector<Expr>& idx, const std::vector<Expr>& in_sizes,
                     const std::vector<Expr>& out_sizes) {
  return linear_index(idx, broadcast_strides(in_sizes, out_sizes));
}

std::vector<Expr> delinearize(const Expr& flat, const std::vector<Expr>& sizes) {
  std::vector<Expr> strides = row_major_strides(sizes);
  std::vector<Expr> idx(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    Expr q = floordiv(flat, strides[i]);
    idx[i] = simplify(i == 0 ? q : mod(q, sizes[i]));
  }
  return idx;
}

}  // namespace kiln::loops
