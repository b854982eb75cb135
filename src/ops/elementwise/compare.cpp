// Equal Less Greater LessOrEqual GreaterOrEqual (bool results; any comparison with NaN is false,
// except that NaN is never Equal to anything), the bool logic ops And Or Xor and the integer ones
// BitwiseAnd BitwiseOr BitwiseXor.
#include "ops/elementwise/binary.h"

namespace kiln::elementwise {
namespace {

template <class T>
inline constexpr bool kArithmetic = !std::is_same_v<T, bool>;
template <class T>
inline constexpr bool kBool = std::is_same_v<T, bool>;

#define KILN_COMPARE_OP(Name, ValidExpr, expr) \
  template <class T>                           \
  struct Name {                                \
    static constexpr bool valid = ValidExpr;   \
    using out_type = bool;                     \
    explicit Name(const Node&) {}              \
    bool operator()(T a, T b) const { return expr; } \
  };
KILN_COMPARE_OP(EqualOp, true, a == b)
KILN_COMPARE_OP(LessOp, kArithmetic<T>, a < b)
KILN_COMPARE_OP(GreaterOp, kArithmetic<T>, a > b)
KILN_COMPARE_OP(LessOrEqualOp, kArithmetic<T>, a <= b)
KILN_COMPARE_OP(GreaterOrEqualOp, kArithmetic<T>, a >= b)
KILN_COMPARE_OP(AndOp, kBool<T>, a && b)
KILN_COMPARE_OP(OrOp, kBool<T>, a || b)
KILN_COMPARE_OP(XorOp, kBool<T>, a != b)
#undef KILN_COMPARE_OP

// BitwiseAnd / Or / Xor: integers of one type, the result in that type.
#define KILN_BITWISE_OP(Name, op)                                      \
  template <class T>                                                   \
  struct Name {                                                        \
    static constexpr bool valid = std::is_integral_v<T> && !kBool<T>;  \
    using out_type = T;                                                \
    explicit Name(const Node&) {}                                      \
    T operator()(T a, T b) const { return static_cast<T>(a op b); }    \
  };
KILN_BITWISE_OP(BitwiseAndOp, &)
KILN_BITWISE_OP(BitwiseOrOp, |)
KILN_BITWISE_OP(BitwiseXorOp, ^)
#undef KILN_BITWISE_OP

}  // namespace

void register_compare_ops(OpRegistry& r) {
  add_binary<EqualOp, TypeClass::any, true>(r, OpKind::Equal);
  add_binary<LessOp, TypeClass::numeric, true>(r, OpKind::Less);
  add_binary<GreaterOp, TypeClass::numeric, true>(r, OpKind::Greater);
  add_binary<LessOrEqualOp, TypeClass::numeric, true>(r, OpKind::LessOrEqual);
  add_binary<GreaterOrEqualOp, TypeClass::numeric, true>(r, OpKind::GreaterOrEqual);
  add_binary<AndOp, TypeClass::boolean, true>(r, OpKind::And);
  add_binary<OrOp, TypeClass::boolean, true>(r, OpKind::Or);
  add_binary<XorOp, TypeClass::boolean, true>(r, OpKind::Xor);
  add_binary<BitwiseAndOp, TypeClass::integer>(r, OpKind::BitwiseAnd);
  add_binary<BitwiseOrOp, TypeClass::integer>(r, OpKind::BitwiseOr);
  add_binary<BitwiseXorOp, TypeClass::integer>(r, OpKind::BitwiseXor);
}

}  // namespace kiln::elementwise
