// Tensor layouts as index expressions: row-major strides over symbolic sizes, broadcast reads and
// the decomposition of a flat index into per-dimension indices.
#pragma once
#include <vector>

#include "kiln/graph.h"
#include "loops/index_expr.h"

namespace kiln::loops {

// One Expr per dimension (constants, or size symbols with the dims' hints).
std::vector<Expr> sizes_of(const Shape& shape, int64_t sym_min_value = 0);

// Row-major strides: stride[i] = prod(sizes[i+1:]). A dimension of size 1 keeps its true stride
// (it is not 0), so a store whose index runs past 0 in that dimension stays distinct.
std::vector<Expr> row_major_strides(const std::vector<Expr>& sizes);

// sum(idx[i] * strides[i]), canonical (not simplified).
Expr linear_index(const std::vector<Expr>& idx, const std::vector<Expr>& strides);

// Strides for reading a tensor of in_sizes broadcast (numpy rules, right-aligned) to out_sizes:
// 0 on the leading dimensions the input lacks and on those where its size is the constant 1,
// the row-major stride elsewhere. A symbolic input size is never taken to be 1 (whatever its hint);
// shape inference must resolve such a dimension first. Known constant mismatches are errors.
std::vector<Expr> broadcast_strides(const std::vector<Expr>& in_sizes, const std::vector<Expr>& out_sizes);
// The input's flat index for the output index idx (one entry per output dimension).
Expr broadcast_index(const std::vector<Expr>& idx, const std::vector<Expr>& in_sizes,
                     const std::vector<Expr>& out_sizes);

// Per-dimension indices of a flat row-major index into a tensor of the given sizes, simplified with
// flat's range: idx[0] = flat // stride[0], idx[i] = (flat // stride[i]) % sizes[i] (the outermost
// needs no modulo as flat < numel). linear_index(delinearize(f, s), row_major_strides(s)) simplifies
// back to f.
std::vector<Expr> delinearize(const Expr& flat, const std::vector<Expr>& sizes);

}  // namespace kiln::loops
