// Shape inference of the elementwise ops at compile time: symbolic dims, unknown values, dtype rules.
#include "elementwise_test_util.h"
#include "ops/registry.h"

namespace kiln::testing_elementwise {
namespace {

TensorType type(DType t, Shape s) { return TensorType{t, std::move(s)}; }
Dim sym(const char* name) { return Dim::sym(name); }
Dim fix(int64_t v) { return Dim::fixed(v); }

std::vector<TensorType> infer(const Node& node, const std::vector<const TensorType*>& in) {
  int fresh = 0;
  InferContext ctx(node, in, std::vector<const Tensor*>(in.size(), nullptr), &fresh, 16);
  const OpDef* def = op_registry().find(node.op);
  EXPECT_NE(def, nullptr) << op_name(node.op);
  return def->infer(ctx);
}

TEST(Infer, EveryOpIsRegistered) {
  for (OpKind op : {OpKind::Abs, OpKind::Neg, OpKind::Sqrt, OpKind::Reciprocal, OpKind::Exp, OpKind::Log, OpKind::Erf,
                    OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::LeakyRelu, OpKind::HardSigmoid,
                    OpKind::HardSwish, OpKind::Clip, OpKind::Not, OpKind::IsNaN, OpKind::IsInf, OpKind::Cast,
                    OpKind::Floor, OpKind::Ceil, OpKind::Sin, OpKind::Cos, OpKind::Softplus, OpKind::Elu, OpKind::Add,
                    OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Pow, OpKind::Min, OpKind::Max, OpKind::Sum,
                    OpKind::Mean, OpKind::Mod, OpKind::Equal, OpKind::Less, OpKind::Greater, OpKind::LessOrEqual,
                    OpKind::GreaterOrEqual, OpKind::And, OpKind::Or, OpKind::Xor, OpKind::Where}) {
    const OpDef* def = op_registry().find(op);
    ASSERT_NE(def, nullptr) << op_name(op);
    EXPECT_EQ(def->handles_half, op == OpKind::Cast) << op_name(op);
  }
}

TEST(Infer, SymbolicBroadcast) {
  TensorType a = type(DType::f32, {sym("batch"), fix(1), fix(128)});
  TensorType b = type(DType::f32, {fix(12), fix(1)});
  auto out = infer(make_node(OpKind::Add, 2), {&a, &b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(shape_string(out[0].shape), "[batch,12,128]");
  EXPECT_EQ(out[0].dtype, DType::f32);
  // Comparison: bool result, same broadcast.
  auto cmp = infer(make_node(OpKind::Less, 2), {&a, &b});
  EXPECT_EQ(cmp[0].dtype, DType::boolean);
  EXPECT_EQ(shape_string(cmp[0].shape), "[batch,12,128]");
  // Where: three-way, with a symbolic mask.
  TensorType cond = type(DType::boolean, {fix(1), fix(1), sym("seq"), sym("seq")});
  TensorType x = type(DType::f32, {sym("batch"), fix(12), sym("seq"), sym("seq")});
  TensorType y = type(DType::f32, {});
  auto w = infer(make_node(OpKind::Where, 3), {&cond, &x, &y});
  EXPECT_EQ(shape_string(w[0].shape), "[batch,12,seq,seq]");
  // Variadic.
  auto s = infer(make_node(OpKind::Sum, 3), {&a, &b, &y});
  EXPECT_EQ(shape_string(s[0].shape), "[batch,12,128]");
  // Static mismatch is the user's error even next to symbols.
  TensorType c = type(DType::f32, {fix(3), fix(5)});
  EXPECT_THROW(infer(make_node(OpKind::Mul, 2), {&a, &c}), UserError);
}

TEST(Infer, DtypesOfResults) {
  TensorType h = type(DType::f16, {sym("n")});
  // f16 at compile time: float ops accept it and keep it (the executor widens at run time).
  EXPECT_EQ(infer(make_node(OpKind::Erf, 1), {&h})[0].dtype, DType::f16);
  EXPECT_EQ(infer(make_node(OpKind::IsNaN, 1), {&h})[0].dtype, DType::boolean);
  auto cast = infer(make_node(OpKind::Cast, 1, {{"to", Attribute{std::string("i64")}}}), {&h});
  EXPECT_EQ(cast[0].dtype, DType::i64);
  EXPECT_EQ(shape_string(cast[0].shape), "[n]");
  EXPECT_EQ(infer(make_node(OpKind::Cast, 1, {{"to", Attribute{std::string("bf16")}}}), {&h})[0].dtype, DType::bf16);
  // Pow keeps the base's dtype whatever the exponent's.
  TensorType i = type(DType::i32, {fix(4)});
  TensorType f = type(DType::f32, {});
  EXPECT_EQ(infer(make_node(OpKind::Pow, 2), {&i, &f})[0].dtype, DType::i32);
  EXPECT_EQ(infer(make_node(OpKind::Pow, 2), {&f, &i})[0].dtype, DType::f32);
  EXPECT_EQ(infer(make_node(OpKind::Pow, 2), {&f, &i})[0].shape.size(), 1u);
  // Wrong dtypes.
  TensorType b = type(DType::boolean, {fix(2)});
  EXPECT_THROW(infer(make_node(OpKind::Add, 2), {&b, &b}), UserError);
  EXPECT_THROW(infer(make_node(OpKind::Where, 3), {&f, &f, &f}), UserError);
  EXPECT_THROW(infer(make_node(OpKind::Pow, 2), {&f, &b}), UserError);
  EXPECT_THROW(infer(make_node(OpKind::Add, 2), {&i, &f}), UserError);
  // Clip with symbolic bounds shape cannot be proven scalar.
  TensorType lo = type(DType::f32, {sym("k")});
  EXPECT_THROW(infer(make_node(OpKind::Clip, 2), {&f, &lo}), UserError);
}

}  // namespace
}  // namespace kiln::testing_elementwise
