// Not IsNaN IsInf: bool results; BitwiseNot of an integer.
#include <limits>

#include "ops/elementwise/unary.h"

namespace kiln::elementwise {
namespace {

template <class T>
struct NotOp {
  static constexpr bool valid = std::is_same_v<T, bool>;
  using out_type = bool;
  explicit NotOp(const Node&) {}
  bool operator()(T x) const { return !x; }
};

template <class T>
struct BitwiseNotOp {
  static constexpr bool valid = std::is_integral_v<T> && !std::is_same_v<T, bool>;
  using out_type = T;
  explicit BitwiseNotOp(const Node&) {}
  T operator()(T x) const { return static_cast<T>(~x); }
};

template <class T>
struct IsNaNOp {
  static constexpr bool valid = kIsFloat<T>;
  using out_type = bool;
  explicit IsNaNOp(const Node&) {}
  bool operator()(T x) const { return x != x; }  // vectorises, unlike std::isnan
};

template <class T>
struct IsInfOp {
  static constexpr bool valid = kIsFloat<T>;
  using out_type = bool;
  bool negative, positive;
  explicit IsInfOp(const Node& n)
      : negative(n.attr_int("detect_negative", 1) != 0), positive(n.attr_int("detect_positive", 1) != 0) {}
  bool operator()(T x) const {
    constexpr T inf = std::numeric_limits<T>::infinity();
    return (positive && x == inf) || (negative && x == -inf);
  }
};

}  // namespace

void register_unary_logic_ops(OpRegistry& r) {
  add_unary<NotOp, TypeClass::boolean, kCheapGrain, true>(r, OpKind::Not);
  add_unary<BitwiseNotOp, TypeClass::integer, kCheapGrain>(r, OpKind::BitwiseNot);
  add_unary<IsNaNOp, TypeClass::floating, kCheapGrain, true>(r, OpKind::IsNaN);
  add_unary<IsInfOp, TypeClass::floating, kCheapGrain, true>(r, OpKind::IsInf);
}

}  // namespace kiln::elementwise
