#include <cmath>

#include "reduction_test_util.h"

namespace kiln::test {
namespace {

Node arg_node(OpKind op, int64_t axis, int64_t keepdims = 1, int64_t last = 0) {
  Node n = make_node(op, 1);
  set_int(n, "axis", axis);
  set_int(n, "keepdims", keepdims);
  set_int(n, "select_last_index", last);
  return n;
}

Tensor run_arg(OpKind op, const Tensor& x, int64_t axis, int64_t keepdims = 1, int64_t last = 0) {
  return run_eager(arg_node(op, axis, keepdims, last), {&x})[0];
}

TEST(ArgMinMax, HandChecked) {
  Tensor x = f32({2, 2}, {2, 1, 3, 10});  // ONNX's argmax example
  Tensor y = run_arg(OpKind::ArgMax, x, 0);
  EXPECT_EQ(y.dtype(), DType::i64);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 1}));
  y = run_arg(OpKind::ArgMax, x, 1, 0);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values(y), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, x, -1)), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMin, x, 0)), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMin, x, -1, 0)), (std::vector<double>{1, 0}));
  // Default axis is 0.
  Node n = make_node(OpKind::ArgMax, 1);
  EXPECT_EQ(values(run_eager(n, {&x})[0]), (std::vector<double>{1, 1}));
  // A 3-D middle axis.
  Tensor z = f32({2, 3, 2}, {0, 5, 9, 1, 2, 7, 4, 4, 4, 8, 3, 3});
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, z, 1, 0)), (std::vector<double>{1, 2, 0, 1}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, z, 1, 0, 1)), (std::vector<double>{1, 2, 1, 1}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMin, z, 1, 0)), (std::vector<double>{0, 1, 2, 2}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMin, z, 1, 0, 1)), (std::vector<double>{0, 1, 2, 2}));
}

TEST(ArgMinMax, SelectLastIndexTies) {
  Tensor x = f32({2, 2}, {2, 2, 3, 10});  // ONNX's select_last_index example
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, x, 1, 1, 0)), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, x, 1, 1, 1)), (std::vector<double>{1, 1}));
  Tensor t = i64({5}, {4, 1, 4, 1, 0});
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, t, 0, 0, 0)), (std::vector<double>{0}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, t, 0, 0, 1)), (std::vector<double>{2}));
  Tensor u = i64({5}, {4, 1, 4, 1, 7});
  EXPECT_EQ(values(run_arg(OpKind::ArgMin, u, 0, 0, 0)), (std::vector<double>{1}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMin, u, 0, 0, 1)), (std::vector<double>{3}));
}

TEST(ArgMinMax, NanAndInf) {
  // numpy: NaN wins for both argmax and argmin; first NaN (last with select_last_index).
  Tensor x = f32({6}, {1, NAN, INFINITY, NAN, -INFINITY, 0});
  for (OpKind op : {OpKind::ArgMax, OpKind::ArgMin}) {
    EXPECT_EQ(values(run_arg(op, x, 0, 0, 0)), (std::vector<double>{1})) << op_name(op);
    EXPECT_EQ(values(run_arg(op, x, 0, 0, 1)), (std::vector<double>{3})) << op_name(op);
  }
  Tensor y = f32({4}, {1, INFINITY, -INFINITY, INFINITY});
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, y, 0, 0)), (std::vector<double>{1}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, y, 0, 0, 1)), (std::vector<double>{3}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMin, y, 0, 0)), (std::vector<double>{2}));
  // Column path (axis 0 of [3, 2]): a NaN in the first row stays chosen.
  Tensor c = f32({3, 2}, {NAN, 1, 5, NAN, 7, 2});
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, c, 0, 0)), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(run_arg(OpKind::ArgMin, c, 0, 0)), (std::vector<double>{0, 1}));
}

TEST(ArgMinMax, SizeOneZeroSizeAndErrors) {
  Tensor x = f32({3, 1}, {5, NAN, -1});
  EXPECT_EQ(values(run_arg(OpKind::ArgMax, x, 1, 0)), (std::vector<double>{0, 0, 0}));
  Tensor z = Tensor::empty(DType::f32, {0, 4});
  Tensor y = run_arg(OpKind::ArgMax, z, 1, 1);  // empty output: nothing to do
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{0, 1}));
  EXPECT_THROW(run_arg(OpKind::ArgMax, z, 0), UserError);  // no index along an empty axis
  Tensor s = f32({}, {1});
  EXPECT_THROW(run_arg(OpKind::ArgMax, s, 0), UserError);
  Tensor v = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_THROW(run_arg(OpKind::ArgMin, v, 2), UserError);
}

// numpy's answer for one column: the first (last) NaN if any, else the first (last) extreme.
int64_t expected_index(const std::vector<double>& col, bool max, bool last) {
  int64_t nan_at = -1, at = 0;
  for (size_t i = 0; i < col.size(); ++i)
    if (std::isnan(col[i]) && (nan_at < 0 || last)) nan_at = static_cast<int64_t>(i);
  if (nan_at >= 0) return nan_at;
  for (size_t i = 1; i < col.size(); ++i) {
    double v = col[i], b = col[static_cast<size_t>(at)];
    if (max ? (v > b || (last && v == b)) : (v < b || (last && v == b))) at = static_cast<int64_t>(i);
  }
  return at;
}

// f32 eager vs the reference path and vs expected_index: exact equality. Values drawn from a small
// set, so that ties are frequent, plus NaN / inf.
TEST(ArgMinMax, Differential) {
  std::mt19937 rng(5);
  int64_t checked = 0;
  for (auto shape : {std::vector<int64_t>{33}, std::vector<int64_t>{7, 1000}, std::vector<int64_t>{3, 17, 1100},
                     std::vector<int64_t>{4, 1, 9}}) {
    Tensor x = random_f32(shape, rng, -3, 3, 0.002);
    for (int64_t i = 0; i < x.numel(); ++i) {
      float& v = x.data<float>()[i];
      if (std::isfinite(v)) v = std::round(v);
    }
    for (int64_t axis = -static_cast<int64_t>(shape.size()); axis < static_cast<int64_t>(shape.size()); ++axis)
      for (OpKind op : {OpKind::ArgMax, OpKind::ArgMin})
        for (int64_t last : {0, 1}) {
          Node n = arg_node(op, axis, axis % 2 == 0, last);
          Tensor got = run_eager(n, {&x})[0], ref = run_reference(n, {&x})[0];
          EXPECT_EQ(values(got), values(ref)) << op_name(op) << x.shape_string() << " axis " << axis;
          int64_t a = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis, outer = 1, inner = 1;
          for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
            if (d != a) (d < a ? outer : inner) *= shape[static_cast<size_t>(d)];
          int64_t len = shape[static_cast<size_t>(a)];
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < inner; ++j) {
              std::vector<double> col;
              for (int64_t i = 0; i < len; ++i) col.push_back(x.as_double((o * len + i) * inner + j));
              ASSERT_EQ(got.as_int64(o * inner + j), expected_index(col, op == OpKind::ArgMax, last != 0))
                  << op_name(op) << x.shape_string() << " axis " << axis << " at " << o << "," << j;
            }
          checked += got.numel();
        }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace kiln::test
