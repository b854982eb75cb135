// CumSum, CumProd, TopK, ScatterElements, ScatterND (and GatherND, Compress, NonZero, ReverseSequence, BitShift): against plain fp64 loops on random inputs (NaN and +-Inf
// mixed in, size-1 dims), eager f32 and the fp64 reference path, and their errors.
#include <algorithm>
#include <climits>
#include <numeric>

#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

// The fp64 cumulative sum (or product) of x along `axis` (exclusive, reverse as the attributes say).
std::vector<double> cumulative_fp64(const Tensor& x, int64_t axis, bool exclusive, bool reverse, bool product) {
  const std::vector<int64_t>& d = x.shape();
  int64_t inner = 1, outer = 1;
  for (size_t k = 0; k < d.size(); ++k) {
    if (int64_t(k) < axis) outer *= d[k];
    if (int64_t(k) > axis) inner *= d[k];
  }
  const int64_t n = d[size_t(axis)];
  std::vector<double> want(static_cast<size_t>(x.numel()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = product ? 1 : 0;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = (o * n + (reverse ? n - 1 - j : j)) * inner + i;
        if (exclusive) want[size_t(at)] = acc;
        acc = product ? acc * x.as_double(at) : acc + x.as_double(at);
        if (!exclusive) want[size_t(at)] = acc;
      }
    }
  return want;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << i;
    }
  }
}

TEST(CumSum, EveryAxisAndAttributeAgainstFp64WithNaNAndInf) {
  std::mt19937 rng(3);
  for (const bool product : {false, true})
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{7}, {3, 1, 5}, {1, 4, 2}}) {
    Tensor x = random_f32(shape, rng);
    for (int64_t axis = -int64_t(shape.size()); axis < int64_t(shape.size()); ++axis)
      for (int exclusive : {0, 1})
        for (int reverse : {0, 1}) {
          SCOPED_TRACE(fmt::format("{} axis {} exclusive {} reverse {}", product ? "CumProd" : "CumSum", axis,
                                   exclusive, reverse));
          Node n = make_node(product ? OpKind::CumProd : OpKind::CumSum, 2);
          set_attr(n, "exclusive", int64_t{exclusive});
          set_attr(n, "reverse", int64_t{reverse});
          Tensor a = Tensor::scalar(DType::i32, int32_t(axis));
          const int64_t ax = axis < 0 ? axis + int64_t(shape.size()) : axis;
          std::vector<double> want = cumulative_fp64(x, ax, exclusive, reverse, product);
          expect_close(values(run1(n, {&x, &a})), want, 1e-5);
          Tensor x64 = convert_tensor(x, DType::f64);  // the fp64 oracle's own path
          expect_close(values(run(n, {&x64, &a}, /*reference=*/true).at(0)), want, 1e-12);
        }
  }
}

TEST(CumSum, IntegersWrapAndErrorsNameTheNode) {
  Node n = make_node(OpKind::CumSum, 2);
  Tensor x = Tensor::from_vector(DType::i32, {3}, std::vector<double>{double(INT32_MAX), 1, 2});
  Tensor axis = i64v({0});
  EXPECT_EQ(ints(run1(n, {&x, &axis})), (std::vector<int64_t>{INT32_MAX, INT32_MIN, INT32_MIN + 2}));
  Tensor bad_axis = i64v({1});
  EXPECT_THROW(run1(n, {&x, &bad_axis}), UserError);
  Tensor two_axes = i64v({0, 0});
  EXPECT_THROW(run1(n, {&x, &two_axes}), UserError);
  Tensor float_axis = f32({1}, {0});
  EXPECT_THROW(run1(n, {&x, &float_axis}), UserError);
  // CumProd wraps too, and keeps u64's high values; types outside ONNX's list are refused.
  Node p = make_node(OpKind::CumProd, 2);
  Tensor big = Tensor::from_vector(DType::i32, {3}, std::vector<int64_t>{65536, 65536, 3});
  EXPECT_EQ(ints(run1(p, {&big, &axis})), (std::vector<int64_t>{65536, 0, 0}));
  Tensor u = Tensor::from_vector(DType::u64, {2}, std::vector<uint64_t>{uint64_t{1} << 62, 3});
  Tensor up = run1(p, {&u, &axis});
  EXPECT_EQ(up.data<uint64_t>()[1], uint64_t{3} << 62);
  Tensor i16 = Tensor::from_vector(DType::i16, {2}, std::vector<int64_t>{1, 2});
  EXPECT_THROW(run1(p, {&i16, &axis}), UserError);
}

TEST(TopK, LargestAndSmallestKeepTheLowerIndexOfEqualValuesAndPutNaNFirst) {
  Tensor x = f32({2, 5}, {3, 1, 3, NAN, -INFINITY, 2, 2, 2, 1, 9});
  Tensor k = i64v({3});
  Node n = make_node(OpKind::TopK, 2, 2);
  std::vector<Tensor> out = run(n, {&x, &k});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3}));
  std::vector<double> v = values(out[0]);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(std::vector<double>(v.begin() + 1, v.end()), (std::vector<double>{3, 3, 9, 2, 2}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{3, 0, 2, 4, 0, 1}));
  set_attr(n, "largest", int64_t{0});
  out = run(n, {&x, &k});
  EXPECT_EQ(values(out[0]), (std::vector<double>{-INFINITY, 1, 3, 1, 2, 2}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{4, 1, 0, 3, 0, 1}));
  // Along axis 0, K = 0, and K past the axis.
  Node n0 = make_node(OpKind::TopK, 2, 2);
  set_attr(n0, "axis", int64_t{0});
  Tensor one = i64v({1});
  EXPECT_EQ(ints(run(n0, {&x, &one})[1]), (std::vector<int64_t>{0, 1, 0, 0, 1}));
  Tensor zero = i64v({0});
  EXPECT_EQ(run(n, {&x, &zero})[0].shape(), (std::vector<int64_t>{2, 0}));
  Tensor six = i64v({6});
  EXPECT_THROW(run(n, {&x, &six}), UserError);
}

TEST(TopK, RandomRowsAgainstASortAndTheReferencePath) {
  std::mt19937 rng(5);
  Tensor x = random_f32({4, 33}, rng);
  Tensor k = i64v({7});
  Node n = make_node(OpKind::TopK, 2, 2);
  std::vector<Tensor> got = run(n, {&x, &k}), ref = run(n, {&x, &k}, /*reference=*/true);
  EXPECT_EQ(ints(got[1]), ints(ref[1]));
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<int64_t> order(33);
    std::iota(order.begin(), order.end(), int64_t{0});
    auto key = [&](int64_t i) { double v = x.as_double(r * 33 + i); return std::isnan(v) ? INFINITY * 2 : v; };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      double va = x.as_double(r * 33 + a), vb = x.as_double(r * 33 + b);
      if (std::isnan(va) || std::isnan(vb)) return !std::isnan(vb) && std::isnan(va);
      return key(a) > key(b);
    });
    for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(ints(got[1])[size_t(r * 7 + j)], order[size_t(j)]) << r << " " << j;
  }
}

TEST(ScatterElements, ReductionsDuplicatesNegativeIndicesAndBounds) {
  Tensor data = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor idx = i64({2, 2}, {2, -1, 0, 0});
  Tensor upd = f32({2, 2}, {10, 20, NAN, 30});
  Node n = make_node(OpKind::ScatterElements, 3);
  set_attr(n, "axis", int64_t{1});
  std::vector<double> got = values(run1(n, {&data, &idx, &upd}));
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(got[2], 20);  // two writes to [0, 2]: the last wins
  EXPECT_EQ(got[3], 30);  // NaN then 30 at [1, 0]
  set_attr(n, "reduction", std::string("max"));
  got = values(run1(n, {&data, &idx, &upd}));
  EXPECT_EQ(got[2], 20);
  EXPECT_TRUE(std::isnan(got[3]));  // a NaN update propagates through max
  set_attr(n, "reduction", std::string("add"));
  EXPECT_EQ(values(run1(n, {&data, &idx, &upd}))[2], 33);
  set_attr(n, "reduction", std::string("mean"));
  EXPECT_THROW(run1(n, {&data, &idx, &upd}), UserError);
  Node plain = make_node(OpKind::ScatterElements, 3);
  Tensor oob = i64({1, 1}, {2});
  Tensor one = f32({1, 1}, {0});
  EXPECT_THROW(run1(plain, {&data, &oob, &one}), UserError);
  Tensor wide = i64({1, 4}, {0, 0, 0, 0});
  Tensor wide_upd = f32({1, 4}, {0, 0, 0, 0});
  EXPECT_THROW(run1(plain, {&data, &wide, &wide_upd}), UserError);
}

TEST(ScatterND, SlicesElementsReductionsAndErrors) {
  Tensor data = iota(DType::f32, {3, 2});
  Node n = make_node(OpKind::ScatterND, 3);
  Tensor rows = i64({2, 1}, {2, -3});
  Tensor row_upd = f32({2, 2}, {10, 11, 12, 13});
  EXPECT_EQ(values(run1(n, {&data, &rows, &row_upd})), (std::vector<double>{12, 13, 2, 3, 10, 11}));
  Tensor cells = i64({2, 2}, {1, 1, 1, 1});
  Tensor cell_upd = f32({2}, {5, 7});
  set_attr(n, "reduction", std::string("mul"));
  EXPECT_EQ(values(run1(n, {&data, &cells, &cell_upd}))[3], 3 * 5 * 7);
  set_attr(n, "reduction", std::string("min"));
  EXPECT_EQ(values(run1(n, {&data, &cells, &cell_upd}))[3], 3);
  Node plain = make_node(OpKind::ScatterND, 3);
  Tensor oob = i64({1, 2}, {0, 2});
  Tensor one = f32({1}, {0});
  EXPECT_THROW(run1(plain, {&data, &oob, &one}), UserError);
  Tensor wrong_updates = f32({2, 3}, {0, 0, 0, 0, 0, 0});
  EXPECT_THROW(run1(plain, {&data, &rows, &wrong_updates}), UserError);
  Tensor too_deep = i64({1, 3}, {0, 0, 0});
  EXPECT_THROW(run1(plain, {&data, &too_deep, &one}), UserError);
}

}  // namespace
}  // namespace kiln::shape_test

namespace kiln::shape_test {
namespace {

TEST(GatherND, SlicesBatchDimsNegativeIndicesAndBounds) {
  Tensor data = iota(DType::f32, {2, 3, 2});
  Node n = make_node(OpKind::GatherND, 2);
  Tensor idx = i64({2, 2}, {1, -1, 0, 0});  // [1, 2, :] and [0, 0, :]
  Tensor y = run1(n, {&data, &idx});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{10, 11, 0, 1}));
  set_attr(n, "batch_dims", int64_t{1});
  Tensor per_batch = i64({2, 1, 2}, {2, 1, 0, 0});  // batch 0: [2, 1], batch 1: [0, 0]
  Tensor z = run1(n, {&data, &per_batch});
  EXPECT_EQ(z.shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values(z), (std::vector<double>{5, 6}));
  Node plain = make_node(OpKind::GatherND, 2);
  Tensor oob = i64({1, 1}, {2});
  EXPECT_THROW(run1(plain, {&data, &oob}), UserError);
  Tensor too_deep = i64({1, 4}, {0, 0, 0, 0});
  EXPECT_THROW(run1(plain, {&data, &too_deep}), UserError);
}

TEST(Compress, AxisFlattenedShortConditionAndErrors) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, NAN, 6});
  Tensor cond = Tensor::from_vector(DType::boolean, {2}, std::vector<double>{0, 1});
  Node n = make_node(OpKind::Compress, 2);
  set_attr(n, "axis", int64_t{0});
  EXPECT_EQ(values(run1(n, {&x, &cond})), (std::vector<double>{3, 4}));  // row 2 not in the condition: dropped
  Node flat = make_node(OpKind::Compress, 2);
  Tensor every_other = Tensor::from_vector(DType::boolean, {6}, std::vector<double>{1, 0, 1, 0, 1, 0});
  std::vector<double> got = values(run1(flat, {&x, &every_other}));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 3);
  EXPECT_TRUE(std::isnan(got[2]));
  Tensor too_long = Tensor::from_vector(DType::boolean, {4}, std::vector<double>{1, 1, 1, 1});
  EXPECT_THROW(run1(n, {&x, &too_long}), UserError);
  Tensor not_bool = i64v({1, 0});
  EXPECT_THROW(run1(n, {&x, &not_bool}), UserError);
}

TEST(NonZero, IndicesInRowMajorOrderAndAScalar) {
  Tensor x = f32({2, 3}, {0, NAN, 0, -0.0, 2, 1});
  std::vector<Tensor> out = run(make_node(OpKind::NonZero, 1), {&x});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3}));  // NaN is nonzero, -0 is zero
  EXPECT_EQ(ints(out[0]), (std::vector<int64_t>{0, 1, 1, 1, 1, 2}));
  Tensor s = Tensor::scalar(DType::i32, int32_t{5});
  EXPECT_EQ(run(make_node(OpKind::NonZero, 1), {&s})[0].shape(), (std::vector<int64_t>{1, 1}));
}

TEST(ReverseSequence, BothLayoutsAndLengthChecks) {
  Tensor x = iota(DType::f32, {3, 2});  // time 3, batch 2 (time_axis 0)
  Tensor lens = i64v({3, 1});
  Node n = make_node(OpKind::ReverseSequence, 2);
  EXPECT_EQ(values(run1(n, {&x, &lens})), (std::vector<double>{4, 1, 2, 3, 0, 5}));
  Node b0 = make_node(OpKind::ReverseSequence, 2);
  set_attr(b0, "batch_axis", int64_t{0});
  set_attr(b0, "time_axis", int64_t{1});
  Tensor lens3 = i64v({2, 0, 1});
  EXPECT_EQ(values(run1(b0, {&x, &lens3})), (std::vector<double>{1, 0, 2, 3, 4, 5}));
  Tensor too_long = i64v({4, 1});
  EXPECT_THROW(run1(n, {&x, &too_long}), UserError);
  Tensor wrong_count = i64v({1});
  EXPECT_THROW(run1(n, {&x, &wrong_count}), UserError);
}

TEST(BitShift, WidthNegativeShiftsSignAndBroadcast) {
  Node left = make_node(OpKind::BitShift, 2);
  set_attr(left, "direction", std::string("LEFT"));
  Node right = make_node(OpKind::BitShift, 2);
  set_attr(right, "direction", std::string("RIGHT"));
  Tensor x = Tensor::from_vector(DType::i32, {4}, std::vector<double>{-8, 1073741824, 5, -1});
  Tensor y = Tensor::from_vector(DType::i32, {4}, std::vector<double>{1, 1, 32, -1});
  EXPECT_EQ(ints(run1(left, {&x, &y})), (std::vector<int64_t>{-16, INT32_MIN, 0, 0}));
  EXPECT_EQ(ints(run1(right, {&x, &y})), (std::vector<int64_t>{-4, 536870912, 0, -1}));
  Tensor u = Tensor::from_vector(DType::u8, {2, 1}, std::vector<double>{255, 16});
  Tensor s = Tensor::from_vector(DType::u8, {3}, std::vector<double>{1, 4, 8});
  EXPECT_EQ(ints(run1(left, {&u, &s})), (std::vector<int64_t>{254, 240, 0, 32, 0, 0}));
  Tensor f = f32({1}, {1});
  EXPECT_THROW(run1(left, {&f, &f}), UserError);
}

}  // namespace
}  // namespace kiln::shape_test
