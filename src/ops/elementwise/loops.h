// Elementwise loop drivers: unary (same shape, contiguous), binary and ternary (broadcasting through
// BroadcastPlan). The innermost loops are plain for-loops over a functor so the compiler vectorises
// them; the f32 ones are compiled three times (AVX-512, AVX2, baseline) and picked at load time for
// the running CPU (target_clones). Operands repeated along a row (stride 0) are hoisted into a scalar
// so that the loop stays vectorisable even though the output might alias it.
#pragma once
#include <array>
#include <type_traits>

#include "ops/elementwise/broadcast_loop.h"

namespace kiln::elementwise {

template <class T>
inline constexpr bool kClone = std::is_same_v<T, float>;

// ---- unary: y[i] = op(x[i]) ----
template <class TI, class TO, class Op>
inline __attribute__((always_inline)) void unary_loop(const TI* x, TO* y, int64_t n, const Op& op) {
  for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
}
template <class TI, class TO, class Op>
__attribute__((target_clones("avx512f", "avx2", "default"))) void unary_loop_cloned(const TI* x, TO* y, int64_t n,
                                                                                     const Op& op) {
  unary_loop(x, y, n, op);
}

// Runs op over every element of `x` into `y` (same element count), split across threads.
template <class TI, class TO, class Op>
void map_unary(const Tensor& x, Tensor& y, const Op& op, int64_t grain) {
  const TI* px = x.data<TI>();
  TO* py = y.data<TO>();
  parallel_for(x.numel(), grain, [&](int64_t b, int64_t e) {
    if constexpr (kClone<TI>) unary_loop_cloned(px + b, py + b, e - b, op);
    else unary_loop(px + b, py + b, e - b, op);
  });
}

// ---- binary: o[i] = op(a[i or 0], b[i or 0]) ----
template <bool CA, bool CB, class TA, class TB, class TO, class Op>
inline __attribute__((always_inline)) void binary_loop(int64_t n, const TA* a, const TB* b, TO* o, const Op& op) {
  if constexpr (CA && CB) {
    for (int64_t i = 0; i < n; ++i) o[i] = op(a[i], b[i]);
  } else if constexpr (CA) {
    const TB bv = *b;
    for (int64_t i = 0; i < n; ++i) o[i] = op(a[i], bv);
  } else if constexpr (CB) {
    const TA av = *a;
    for (int64_t i = 0; i < n; ++i) o[i] = op(av, b[i]);
  } else {
    const TO v = op(*a, *b);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}
template <bool CA, bool CB, class TA, class TB, class TO, class Op>
__attribute__((target_clones("avx512f", "avx2", "default"))) void binary_loop_cloned(int64_t n, const TA* a,
                                                                                      const TB* b, TO* o,
                                                                                      const Op& op) {
  binary_loop<CA, CB>(n, a, b, o, op);
}

template <bool CA, bool CB, class TA, class TB, class TO, class Op>
void run_binary_plan(const BroadcastPlan<2>& plan, const TA* a, const TB* b, TO* o, const Op& op, int64_t grain) {
  plan.run(grain, [&](int64_t len, int64_t oo, const std::array<int64_t, 2>& io) {
    if constexpr (kClone<TA>) binary_loop_cloned<CA, CB>(len, a + io[0], b + io[1], o + oo, op);
    else binary_loop<CA, CB>(len, a + io[0], b + io[1], o + oo, op);
  });
}

// out = op(a, b) with a and b broadcast to out's shape. `out` may be `a` itself (same shape).
template <class TA, class TB, class TO, class Op>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, const Op& op, int64_t grain) {
  if (out.numel() == 0) return;
  BroadcastPlan<2> plan(out.shape(), {&a.shape(), &b.shape()});
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = out.data<TO>();
  bool ca = plan.inner_contiguous(0), cb = plan.inner_contiguous(1);
  if (ca && cb) run_binary_plan<true, true>(plan, pa, pb, po, op, grain);
  else if (ca) run_binary_plan<true, false>(plan, pa, pb, po, op, grain);
  else if (cb) run_binary_plan<false, true>(plan, pa, pb, po, op, grain);
  else run_binary_plan<false, false>(plan, pa, pb, po, op, grain);
}

// ---- ternary (Where): o[i] = op(c[i or 0], a[i or 0], b[i or 0]) ----
template <bool CC, bool CA, bool CB, class TC, class TA, class TB, class TO, class Op>
inline __attribute__((always_inline)) void ternary_loop(int64_t n, const TC* c, const TA* a, const TB* b, TO* o,
                                                        const Op& op) {
  // Stride-0 operands are read once; the compiler then specialises each combination.
  const TC cv = *c;
  const TA av = *a;
  const TB bv = *b;
  for (int64_t i = 0; i < n; ++i) o[i] = op(CC ? c[i] : cv, CA ? a[i] : av, CB ? b[i] : bv);
}
template <bool CC, bool CA, bool CB, class TC, class TA, class TB, class TO, class Op>
__attribute__((target_clones("avx512f", "avx2", "default"))) void ternary_loop_cloned(int64_t n, const TC* c,
                                                                                       const TA* a, const TB* b,
                                                                                       TO* o, const Op& op) {
  ternary_loop<CC, CA, CB>(n, c, a, b, o, op);
}

template <bool CC, bool CA, bool CB, class TC, class TA, class TB, class TO, class Op>
void run_ternary_plan(const BroadcastPlan<3>& plan, const TC* c, const TA* a, const TB* b, TO* o, const Op& op,
                      int64_t grain) {
  plan.run(grain, [&](int64_t len, int64_t oo, const std::array<int64_t, 3>& io) {
    if constexpr (kClone<TA>) ternary_loop_cloned<CC, CA, CB>(len, c + io[0], a + io[1], b + io[2], o + oo, op);
    else ternary_loop<CC, CA, CB>(len, c + io[0], a + io[1], b + io[2], o + oo, op);
  });
}

template <class TC, class TA, class TB, class TO, class Op>
void map_ternary(const Tensor& c, const Tensor& a, const Tensor& b, Tensor& out, const Op& op, int64_t grain) {
  if (out.numel() == 0) return;
  BroadcastPlan<3> plan(out.shape(), {&c.shape(), &a.shape(), &b.shape()});
  const TC* pc = c.data<TC>();
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = out.data<TO>();
  int pattern = (plan.inner_contiguous(0) ? 4 : 0) | (plan.inner_contiguous(1) ? 2 : 0) |
                (plan.inner_contiguous(2) ? 1 : 0);
  switch (pattern) {
    case 7: return run_ternary_plan<true, true, true>(plan, pc, pa, pb, po, op, grain);
    case 6: return run_ternary_plan<true, true, false>(plan, pc, pa, pb, po, op, grain);
    case 5: return run_ternary_plan<true, false, true>(plan, pc, pa, pb, po, op, grain);
    case 4: return run_ternary_plan<true, false, false>(plan, pc, pa, pb, po, op, grain);
    case 3: return run_ternary_plan<false, true, true>(plan, pc, pa, pb, po, op, grain);
    case 2: return run_ternary_plan<false, true, false>(plan, pc, pa, pb, po, op, grain);
    case 1: return run_ternary_plan<false, false, true>(plan, pc, pa, pb, po, op, grain);
    default: return run_ternary_plan<false, false, false>(plan, pc, pa, pb, po, op, grain);
  }
}

}  // namespace kiln::elementwise
