// The graph shapes the pointwise cases share (pointwise_cases.cpp defines them), for the case lists of
// pointwise_cases.cpp and pointwise_half_cases.cpp.
#pragma once
#include <initializer_list>
#include <string>

#include "pointwise_cases.h"

namespace kiln::backend::cuda::testing::builders {

Shape dims(std::initializer_list<Dim> d);
inline const Dim kN = Dim::sym("n");
inline const Dim kM = Dim::sym("m");

// op(x) * 1 over x[n]: the Mul (exact) makes a group of two, which the pass fuses (a lone node stays eager).
PointwiseCase unary(std::string name, OpKind op, DType t, Tolerance tol);
// op(a, b) * 1 with a[n, 1] and b[24]: both operands broadcast to [n, 24], and the special values meet
// each other (b starts with the first 12, a with as many as fit in its first half) and random ones.
PointwiseCase binary(std::string name, OpKind op, DType t, Tolerance tol);
// Cast(x, via) then Cast(to): x[n] of dtype `from`.
PointwiseCase cast_chain(std::string name, DType from, DType via, DType to);

}  // namespace kiln::backend::cuda::testing::builders
