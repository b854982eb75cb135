// The integer types i16, u16, u32 and u64 through the elementwise ops, Cast and the bitwise ops: values
// past 2^63 (which int64 cannot hold), wrap-around, and the eager kernels against the reference run.
#include "elementwise_test_util.h"

namespace kiln::testing_elementwise {
namespace {

constexpr uint64_t kHigh = 0xfedcba9876543210ull;  // past 2^63: reads wrong through int64

std::vector<uint64_t> u64_values(const Tensor& t) {
  std::vector<uint64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.data<uint64_t>()[i];
  return v;
}

// Runs the node eagerly and as the reference; both must agree to the bit (integer results).
Tensor run_both(const Node& n, std::initializer_list<const Tensor*> in) {
  Tensor eager = run(n, in), reference = run(n, in, true);
  EXPECT_EQ(eager.dtype(), reference.dtype());
  EXPECT_EQ(eager.nbytes(), reference.nbytes());
  if (eager.nbytes() == reference.nbytes()) {
    EXPECT_EQ(std::memcmp(eager.raw(), reference.raw(), eager.nbytes()), 0) << op_name(n.op);
  }
  return eager;
}

TEST(WideIntegers, U64OrdersDividesAndWrapsPast2To63) {
  Tensor a = typed<uint64_t>(DType::u64, {3}, {kHigh, 5, 0});
  Tensor b = typed<uint64_t>(DType::u64, {3}, {7, kHigh, 1});
  EXPECT_EQ(u64_values(run_both(make_node(OpKind::Max, 2), {&a, &b})), (std::vector<uint64_t>{kHigh, kHigh, 1}));
  EXPECT_EQ(u64_values(run_both(make_node(OpKind::Min, 2), {&a, &b})), (std::vector<uint64_t>{7, 5, 0}));
  Tensor less = run_both(make_node(OpKind::Less, 2), {&a, &b});
  EXPECT_TRUE(same_values(values(less), {0, 1, 1}));
  EXPECT_EQ(u64_values(run_both(make_node(OpKind::Div, 2), {&a, &b})), (std::vector<uint64_t>{kHigh / 7, 0, 0}));
  EXPECT_EQ(u64_values(run_both(make_node(OpKind::Mod, 2), {&a, &b})), (std::vector<uint64_t>{kHigh % 7, 5, 0}));
  // Sums and products wrap modulo 2^64.
  EXPECT_EQ(u64_values(run_both(make_node(OpKind::Add, 2), {&a, &b})),
            (std::vector<uint64_t>{kHigh + 7, kHigh + 5, 1}));
  EXPECT_EQ(u64_values(run_both(make_node(OpKind::Mul, 2), {&a, &b})),
            (std::vector<uint64_t>{kHigh * 7, kHigh * 5, 0}));
  EXPECT_EQ(u64_values(run_both(make_node(OpKind::Sub, 2), {&b, &a})),
            (std::vector<uint64_t>{7 - kHigh, kHigh - 5, 1}));
  // Unsigned types have no Neg or Abs of a sign.
  EXPECT_THROW(run(make_node(OpKind::Neg, 1), {&a}), UserError);
}

TEST(WideIntegers, NarrowTypesWrapAndKeepTheirType) {
  Tensor a = typed<int64_t>(DType::u16, {2}, {65535, 300});
  Tensor b = typed<int64_t>(DType::u16, {2}, {65535, 300});
  Tensor p = run_both(make_node(OpKind::Mul, 2), {&a, &b});  // 65535^2 would overflow a promoted int
  EXPECT_EQ(p.dtype(), DType::u16);
  EXPECT_TRUE(same_values(values(p), {1, static_cast<double>((300 * 300) % 65536)}));
  Tensor s = typed<int64_t>(DType::i16, {3}, {32767, -32768, -7});
  Tensor one = typed<int64_t>(DType::i16, {1}, {1});
  Tensor sum = run_both(make_node(OpKind::Add, 2), {&s, &one});
  EXPECT_EQ(sum.dtype(), DType::i16);
  EXPECT_TRUE(same_values(values(sum), {-32768, -32767, -6}));
  Tensor two = typed<int64_t>(DType::i16, {1}, {2});
  // Mod with fmod=0 takes the divisor's sign: -7 mod 2 = 1.
  EXPECT_TRUE(same_values(values(run_both(make_node(OpKind::Mod, 2), {&s, &two})), {1, 0, 1}));
  Tensor u = typed<int64_t>(DType::u32, {2}, {4294967295ll, 2});
  Tensor u1 = typed<int64_t>(DType::u32, {1}, {1});
  EXPECT_TRUE(same_values(values(run_both(make_node(OpKind::Add, 2), {&u, &u1})), {0, 3}));
}

TEST(WideIntegers, CastsToAndFromTheNewTypes) {
  auto cast = [](const Tensor& x, std::string to) {
    return run_both(make_node(OpKind::Cast, 1, {{"to", Attribute{std::move(to)}}}), {&x});
  };
  Tensor high = typed<uint64_t>(DType::u64, {2}, {kHigh, 3});
  Tensor d = cast(high, "f64");
  EXPECT_EQ(d.data<double>()[0], static_cast<double>(kHigh));  // not a negative int64's value
  EXPECT_EQ(d.data<double>()[1], 3.0);
  // Integer to integer wraps (two's complement); u64 -> i64 keeps the bits.
  Tensor as_i64 = cast(high, "i64");
  EXPECT_EQ(static_cast<uint64_t>(as_i64.data<int64_t>()[0]), kHigh);
  Tensor as_u16 = cast(high, "u16");
  EXPECT_EQ(as_u16.data<uint16_t>()[0], 0x3210);
  Tensor neg = typed<int64_t>(DType::i32, {1}, {-1});
  EXPECT_EQ(cast(neg, "u32").data<uint32_t>()[0], 4294967295u);
  EXPECT_EQ(cast(neg, "u64").data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(cast(neg, "i16").data<int16_t>()[0], -1);
  // Floats saturate into the type (NaN gives 0).
  Tensor f = f32({4}, {1e20, -5, 70000.5, kNaN});
  EXPECT_TRUE(same_values(values(cast(f, "u16")), {65535, 0, 65535, 0}));
  EXPECT_TRUE(same_values(values(cast(f, "i16")), {32767, -5, 32767, 0}));
  Tensor u32 = cast(f32({1}, {4e9}), "u32");
  EXPECT_EQ(u32.data<uint32_t>()[0], 4000000000u);
}

TEST(WideIntegers, BitwiseOpsOnEveryIntegerType) {
  for (DType t : {DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::u32, DType::i64, DType::u64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor a = typed<int64_t>(t, {2, 2}, {0x5a, 0x0f, 0x70, 0});
    Tensor b = typed<int64_t>(t, {2}, {0x3c, 0x01});  // broadcast over rows
    EXPECT_TRUE(same_values(values(run_both(make_node(OpKind::BitwiseAnd, 2), {&a, &b})), {0x18, 0x01, 0x30, 0}));
    EXPECT_TRUE(same_values(values(run_both(make_node(OpKind::BitwiseOr, 2), {&a, &b})), {0x7e, 0x0f, 0x7c, 0x01}));
    EXPECT_TRUE(same_values(values(run_both(make_node(OpKind::BitwiseXor, 2), {&a, &b})), {0x66, 0x0e, 0x4c, 0x01}));
    Tensor n = run_both(make_node(OpKind::BitwiseNot, 1), {&a});
    EXPECT_EQ(n.dtype(), t);
    const double all_ones = is_unsigned(t) ? std::ldexp(1.0, 8 * static_cast<int>(dtype_size(t))) - 1 : -1;
    if (t != DType::u64) EXPECT_EQ(n.as_double(3), all_ones);  // ~0
    else EXPECT_EQ(n.data<uint64_t>()[3], ~uint64_t{0});
  }
  // Floats and bool are not bitwise operands; mixed types are refused.
  Tensor f = f32({1}, {1}), bb = boolean({1}, {1});
  EXPECT_THROW(run(make_node(OpKind::BitwiseAnd, 2), {&f, &f}), UserError);
  EXPECT_THROW(run(make_node(OpKind::BitwiseNot, 1), {&bb}), UserError);
  Tensor i32 = typed<int64_t>(DType::i32, {1}, {1}), u32 = typed<int64_t>(DType::u32, {1}, {1});
  EXPECT_THROW(run(make_node(OpKind::BitwiseOr, 2), {&i32, &u32}), UserError);
}

TEST(WideIntegers, BitShiftOfU16AndU64) {
  Tensor x = typed<uint64_t>(DType::u64, {3}, {kHigh, 1, 1});
  Tensor s = typed<uint64_t>(DType::u64, {3}, {60, 63, 64});
  Tensor right = run(make_node(OpKind::BitShift, 2, {{"direction", Attribute{std::string("RIGHT")}}}), {&x, &s});
  EXPECT_EQ(u64_values(right), (std::vector<uint64_t>{0xf, 0, 0}));
  Tensor left = run(make_node(OpKind::BitShift, 2, {{"direction", Attribute{std::string("LEFT")}}}), {&x, &s});
  EXPECT_EQ(u64_values(left), (std::vector<uint64_t>{0, uint64_t{1} << 63, 0}));
  Tensor h = typed<int64_t>(DType::u16, {2}, {0x8001, 3});
  Tensor hs = typed<int64_t>(DType::u16, {2}, {1, 15});
  Tensor hl = run(make_node(OpKind::BitShift, 2, {{"direction", Attribute{std::string("LEFT")}}}), {&h, &hs});
  EXPECT_TRUE(same_values(values(hl), {2, 0x8000}));
}

}  // namespace
}  // namespace kiln::testing_elementwise
