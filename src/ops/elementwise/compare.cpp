// Equal Less Greater LessOrEqual GreaterOrEqual (bool results; any comparison with NaN is false,
// except that NaN is never Equal to anything) and the bool logic ops And Or Xor.
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
}

}  // namespace kiln::elementwise
