#include <omp.h>

#include <cmath>
#include <limits>

#include "reduction_test_util.h"

namespace kiln::test {
namespace {

// A Reduce* node; `with_axes` adds input 1.
Node reduce_node(OpKind op, bool with_axes, int64_t keepdims = 1, int64_t noop = 0) {
  Node n = make_node(op, with_axes ? 2 : 1);
  set_int(n, "keepdims", keepdims);
  if (noop) set_int(n, "noop_with_empty_axes", noop);
  return n;
}

Tensor run_reduce(OpKind op, const Tensor& x, const std::vector<int64_t>* axes, int64_t keepdims = 1,
                  int64_t noop = 0) {
  Tensor a = axes ? i64({static_cast<int64_t>(axes->size())}, *axes) : Tensor();
  Node n = reduce_node(op, axes != nullptr, keepdims, noop);
  return run_eager(n, axes ? std::vector<const Tensor*>{&x, &a} : std::vector<const Tensor*>{&x})[0];
}

const double kInf = std::numeric_limits<double>::infinity();

TEST(Reduce, SumAxesAndKeepdims) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<int64_t> a0{0}, a1{1}, am1{-1}, am2{-2}, both{0, 1}, none{};
  Tensor y = run_reduce(OpKind::ReduceSum, x, &a0);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{5, 7, 9}));
  y = run_reduce(OpKind::ReduceSum, x, &a1, 0);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values(y), (std::vector<double>{6, 15}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceSum, x, &am1)), (std::vector<double>{6, 15}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceSum, x, &am2)), (std::vector<double>{5, 7, 9}));
  y = run_reduce(OpKind::ReduceSum, x, &both, 0);
  EXPECT_EQ(y.rank(), 0);
  EXPECT_EQ(values(y), (std::vector<double>{21}));
  // No axes input, or an empty one: everything.
  y = run_reduce(OpKind::ReduceSum, x, nullptr);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(values(y), (std::vector<double>{21}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceSum, x, &none, 0)), (std::vector<double>{21}));
  // noop_with_empty_axes: the input unchanged (even with keepdims = 0).
  y = run_reduce(OpKind::ReduceSum, x, &none, 0, 1);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(values(y), values(x));
  y = run_reduce(OpKind::ReduceMean, x, nullptr, 1, 1);
  EXPECT_EQ(values(y), values(x));
  // ...but with axes given, noop_with_empty_axes changes nothing.
  EXPECT_EQ(values(run_reduce(OpKind::ReduceSum, x, &a1, 1, 1)), (std::vector<double>{6, 15}));
}

TEST(Reduce, EachOpHandChecked) {
  Tensor x = f32({2, 2, 2}, {1, -2, 3, 4, 0.5, 6, -7, 8});
  std::vector<int64_t> a1{1}, a02{0, 2};
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMean, x, &a1)), (std::vector<double>{2, 1, -3.25, 7}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMax, x, &a1)), (std::vector<double>{3, 4, 0.5, 8}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMin, x, &a1)), (std::vector<double>{1, -2, -7, 6}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceProd, x, &a1)), (std::vector<double>{3, -8, -3.5, 48}));
  // Non-adjacent axes: {1, -2, 0.5, 6} and {3, 4, -7, 8}.
  EXPECT_EQ(values(run_reduce(OpKind::ReduceSum, x, &a02, 0)), (std::vector<double>{5.5, 8}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMean, x, &a02, 0)), (std::vector<double>{1.375, 2}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMax, x, &a02, 0)), (std::vector<double>{6, 8}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMin, x, &a02, 0)), (std::vector<double>{-2, -7}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceProd, x, &a02, 0)), (std::vector<double>{-6, -672}));
}

TEST(Reduce, Integers) {
  Tensor x = i64({2, 3}, {1, -2, 3, 4, 5, -6});
  std::vector<int64_t> a1{1}, a0{0};
  Tensor y = run_reduce(OpKind::ReduceSum, x, &a1);
  EXPECT_EQ(y.dtype(), DType::i64);
  EXPECT_EQ(values(y), (std::vector<double>{2, 3}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMax, x, &a0)), (std::vector<double>{4, 5, 3}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMin, x, &a0)), (std::vector<double>{1, -2, -6}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceProd, x, &a1)), (std::vector<double>{-6, -120}));
  // Integer mean truncates toward zero: (1 - 2 + 3) / 3 = 0, (4 + 5 - 6) / 3 = 1; (1+4)/2, (-2+5)/2, (3-6)/2.
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMean, x, &a1)), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMean, x, &a0)), (std::vector<double>{2, 1, -1}));
  // Narrow types wrap like numpy's astype: 100 + 100 in int8 is -56.
  Tensor x8 = Tensor::from_vector<int>(DType::i8, {2}, {100, 100});
  EXPECT_EQ(values(run_reduce(OpKind::ReduceSum, x8, nullptr, 0)), (std::vector<double>{-56}));
  Tensor u8 = Tensor::from_vector<int>(DType::u8, {3}, {7, 250, 3});
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMax, u8, nullptr, 0)), (std::vector<double>{250}));
  EXPECT_EQ(values(run_reduce(OpKind::ReduceMin, u8, nullptr, 0)), (std::vector<double>{3}));
  Tensor i32 = Tensor::from_vector<int>(DType::i32, {2, 2}, {2000000000, 2000000000, -5, 1});
  EXPECT_EQ(values(run_reduce(OpKind::ReduceSum, i32, &a1)), (std::vector<double>{-294967296, -4}));
}

TEST(Reduce, NanAndInf) {
  Tensor x = f32({3, 3}, {1, NAN, 3, kInf, 2, 3, kInf, -kInf, 0});
  std::vector<int64_t> a1{1};
  std::vector<double> mx = values(run_reduce(OpKind::ReduceMax, x, &a1, 0));
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], kInf);
  EXPECT_EQ(mx[2], kInf);
  std::vector<double> mn = values(run_reduce(OpKind::ReduceMin, x, &a1, 0));
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_EQ(mn[1], 2);
  EXPECT_EQ(mn[2], -kInf);
  std::vector<double> s = values(run_reduce(OpKind::ReduceSum, x, &a1, 0));
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[1], kInf);
  EXPECT_TRUE(std::isnan(s[2]));  // inf + -inf
  // Along axis 0 (the column path): NaN in the first row must survive later rows.
  std::vector<int64_t> a0{0};
  Tensor y = f32({3, 2}, {NAN, 1, 5, NAN, 7, 2});
  for (OpKind op : {OpKind::ReduceMax, OpKind::ReduceMin}) {
    std::vector<double> v = values(run_reduce(op, y, &a0, 0));
    EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1])) << op_name(op);
  }
}

TEST(Reduce, SizeOneAndZeroSizeAxes) {
  Tensor x = f32({3, 1}, {1, NAN, -2});
  std::vector<int64_t> a1{1};
  for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd}) {
    std::vector<double> v = values(run_reduce(op, x, &a1, 0));
    EXPECT_EQ(v[0], 1) << op_name(op);
    EXPECT_TRUE(std::isnan(v[1])) << op_name(op);
    EXPECT_EQ(v[2], -2) << op_name(op);
  }
  // Reducing a zero-size axis: the identity (Mean: NaN); the integer Max/Min: the type's limits.
  Tensor z = Tensor::empty(DType::f32, {0, 3});
  std::vector<int64_t> a0{0};
  auto all = [](const Tensor& t, double want) {
    for (double v : values(t)) {
      if (std::isnan(want) ? !std::isnan(v) : v != want) return false;
    }
    return t.numel() == 3;
  };
  EXPECT_TRUE(all(run_reduce(OpKind::ReduceSum, z, &a0), 0));
  EXPECT_TRUE(all(run_reduce(OpKind::ReduceProd, z, &a0), 1));
  EXPECT_TRUE(all(run_reduce(OpKind::ReduceMean, z, &a0), NAN));
  EXPECT_TRUE(all(run_reduce(OpKind::ReduceMax, z, &a0), -kInf));
  EXPECT_TRUE(all(run_reduce(OpKind::ReduceMin, z, &a0), kInf));
  Tensor zi = Tensor::empty(DType::i32, {0, 3});
  EXPECT_TRUE(all(run_reduce(OpKind::ReduceMax, zi, &a0, 0), std::numeric_limits<int32_t>::lowest()));
  EXPECT_TRUE(all(run_reduce(OpKind::ReduceMean, zi, &a0, 0), 0));
  // Reducing the non-empty axis of an empty tensor: an empty output.
  std::vector<int64_t> a1z{1};
  Tensor y = run_reduce(OpKind::ReduceSum, z, &a1z, 0);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{0}));
  // The reference path agrees.
  Node n = reduce_node(OpKind::ReduceMean, true);
  Tensor axes = i64({1}, {0});
  EXPECT_TRUE(all(run_reference(n, {&z, &axes})[0], NAN));
}

TEST(Reduce, UserErrors) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<int64_t> dup{1, -1}, big{2}, neg{-3};
  EXPECT_THROW(run_reduce(OpKind::ReduceSum, x, &dup), UserError);
  EXPECT_THROW(run_reduce(OpKind::ReduceSum, x, &big), UserError);
  EXPECT_THROW(run_reduce(OpKind::ReduceMax, x, &neg), UserError);
  Tensor b = Tensor::from_vector<int>(DType::boolean, {2}, {1, 0});
  EXPECT_THROW(run_reduce(OpKind::ReduceSum, b, nullptr), UserError);
  Tensor fa = f32({1}, {0});
  Node n = reduce_node(OpKind::ReduceSum, true);
  EXPECT_THROW(run_eager(n, {&x, &fa}), UserError);
}

TEST(Reduce, ShapeInference) {
  TensorType x{DType::f32, {Dim::sym("batch"), Dim::fixed(1), Dim::fixed(768)}};
  TensorType axes_t{DType::i64, {Dim::fixed(1)}};
  Tensor axes = i64({1}, {-1});
  // Known axes: symbolic dims kept.
  auto out = infer(reduce_node(OpKind::ReduceMean, true), {&x, &axes_t}, {nullptr, &axes});
  EXPECT_EQ(out[0].shape, (Shape{Dim::sym("batch"), Dim::fixed(1), Dim::fixed(1)}));
  out = infer(reduce_node(OpKind::ReduceMean, true, 0), {&x, &axes_t}, {nullptr, &axes});
  EXPECT_EQ(out[0].shape, (Shape{Dim::sym("batch"), Dim::fixed(1)}));
  // Axes only known at run time: keepdims=1 keeps the rank (size-1 dims stay 1, others unknown)...
  out = infer(reduce_node(OpKind::ReduceSum, true), {&x, &axes_t});
  ASSERT_EQ(out[0].rank(), 3);
  EXPECT_FALSE(out[0].shape[0].is_static());
  EXPECT_EQ(out[0].shape[1], Dim::fixed(1));
  EXPECT_FALSE(out[0].shape[2].is_static());
  // ...keepdims=0 drops as many dims as there are axes, and needs that count.
  out = infer(reduce_node(OpKind::ReduceSum, true, 0), {&x, &axes_t});
  EXPECT_EQ(out[0].rank(), 2);
  TensorType axes_sym{DType::i64, {Dim::sym("k")}};
  EXPECT_THROW(infer(reduce_node(OpKind::ReduceSum, true, 0), {&x, &axes_sym}), UserError);
  // No axes: everything, and noop.
  out = infer(reduce_node(OpKind::ReduceMax, false, 0), {&x});
  EXPECT_EQ(out[0].rank(), 0);
  out = infer(reduce_node(OpKind::ReduceMax, false, 0, 1), {&x});
  EXPECT_EQ(out[0], x);
}

// f32 eager vs fp64 reference over many axis sets, including non-adjacent ones and size-1 dims.
// Sum/Mean compare to atol = 1e-6 * sum|x| (f32 accumulation); Max/Min/Prod nearly exactly.
TEST(Reduce, Differential) {
  std::mt19937 rng(7);
  ErrorStats sum_stats, prod_stats, minmax_stats;
  const std::vector<std::vector<int64_t>> shapes = {{7}, {3, 1, 33}, {5, 17, 1, 9}, {2, 3, 4, 5}, {1, 1000, 3}, {64, 1100}};
  for (const auto& shape : shapes) {
    int rank = static_cast<int>(shape.size());
    for (int mask = 0; mask < (1 << rank); ++mask) {
      std::vector<int64_t> axes;
      for (int d = 0; d < rank; ++d)
        if (mask & (1 << d)) axes.push_back(rng() % 2 ? d : d - rank);
      for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd}) {
        bool prod = op == OpKind::ReduceProd;
        Tensor x = random_f32(shape, rng, prod ? 0.5 : -4, prod ? 1.5 : 4, mask == 1 ? 0.01 : 0);
        Tensor a = i64({static_cast<int64_t>(axes.size())}, axes);
        int64_t keepdims = mask % 2;
        Node n = reduce_node(op, true, keepdims);
        Tensor got = run_eager(n, {&x, &a})[0];
        Tensor ref = run_reference(n, {&x, &a})[0];
        std::string what = std::string(op_name(op)) + " " + x.shape_string() + " mask " + std::to_string(mask);
        if (op == OpKind::ReduceSum || op == OpKind::ReduceMean) {
          double abs_sum = 0;
          for (int64_t i = 0; i < x.numel(); ++i) abs_sum += std::isfinite(x.as_double(i)) ? std::fabs(x.as_double(i)) : 0;
          double count = op == OpKind::ReduceMean ? static_cast<double>(x.numel()) / static_cast<double>(got.numel()) : 1;
          compare(got, ref, 1e-6, 1e-6 * abs_sum / count, &sum_stats, what);
        } else {  // Prod: relative (f32 underflows earlier than f64, hence the tiny atol)
          compare(got, ref, prod ? 3e-5 : 0, prod ? 1e-30 : 0, prod ? &prod_stats : &minmax_stats, what);
        }
      }
    }
  }
  print_stats("ReduceSum/Mean (f32 vs fp64)", sum_stats);
  print_stats("ReduceProd (f32 vs fp64)", prod_stats);
  print_stats("ReduceMax/Min (f32 vs fp64)", minmax_stats);
}

// Integers: the fast path must equal the reference loops exactly (including wrap-around).
TEST(Reduce, DifferentialIntegers) {
  std::mt19937 rng(11);
  for (DType dt : {DType::i64, DType::i32, DType::i8, DType::u8}) {
    std::vector<int64_t> raw(4 * 5 * 37);
    for (auto& v : raw) v = static_cast<int64_t>(rng() % 200) - 60;
    Tensor x = Tensor::from_vector<int64_t>(dt, {4, 5, 37}, raw);
    for (std::vector<int64_t> axes : {std::vector<int64_t>{0}, {1}, {2}, {0, 2}, {}}) {
      for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd}) {
        Tensor a = i64({static_cast<int64_t>(axes.size())}, axes);
        Node n = reduce_node(op, true, 0);
        Tensor got = run_eager(n, {&x, &a})[0];
        Tensor ref = run_reference(n, {&x, &a})[0];
        ASSERT_EQ(got.dtype(), dt);
        EXPECT_EQ(values(got), values(ref)) << op_name(op) << " " << dtype_name(dt) << " axes " << axes.size();
      }
    }
  }
}

// Big reductions take the path that splits the reduced axis across threads.
TEST(Reduce, SplitAxisAcrossThreads) {
  int saved = omp_get_max_threads();
  omp_set_num_threads(4);
  std::mt19937 rng(3);
  ErrorStats stats;
  for (auto shape : {std::vector<int64_t>{300001}, std::vector<int64_t>{200003, 3}, std::vector<int64_t>{2, 50000, 5}}) {
    Tensor x = random_f32(shape, rng, -1, 2);
    std::vector<int64_t> axes = shape.size() == 3 ? std::vector<int64_t>{1} : std::vector<int64_t>{0};
    Tensor a = i64({static_cast<int64_t>(axes.size())}, axes);
    for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin}) {
      Node n = reduce_node(op, true, 0);
      double abs_sum = 0;
      for (int64_t i = 0; i < x.numel(); ++i) abs_sum += std::fabs(x.as_double(i));
      double atol = op == OpKind::ReduceSum ? 1e-6 * abs_sum : op == OpKind::ReduceMean ? 1e-6 * 2 : 0;
      compare(run_eager(n, {&x, &a})[0], run_reference(n, {&x, &a})[0], 1e-6, atol, &stats,
              std::string(op_name(op)) + x.shape_string());
    }
  }
  omp_set_num_threads(saved);
  print_stats("Reduce* split across threads (f32 vs fp64)", stats);
}

}  // namespace
}  // namespace kiln::test
