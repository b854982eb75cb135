#include "linalg_test_util.h"

namespace kiln::linalg_test {
namespace {

std::vector<double> iota1(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 1; i <= n; ++i) v.push_back(static_cast<double>(i));
  return v;
}

struct PoolCase {
  std::vector<int64_t> x = {}, kernel = {}, strides = {}, dilations = {}, pads = {};
  std::string auto_pad = {};
  int64_t ceil_mode = 0, count_include_pad = 0;
};

Node pool_node(OpKind op, const PoolCase& c, size_t outputs = 1) {
  Node n = make_node(op, 1, outputs);
  set_ints(n, "kernel_shape", c.kernel);
  if (!c.strides.empty()) set_ints(n, "strides", c.strides);
  if (!c.dilations.empty()) set_ints(n, "dilations", c.dilations);
  if (!c.pads.empty()) set_ints(n, "pads", c.pads);
  if (!c.auto_pad.empty()) set_attr<std::string>(n, "auto_pad", c.auto_pad);
  if (c.ceil_mode) set_attr<int64_t>(n, "ceil_mode", c.ceil_mode);
  if (op == OpKind::AveragePool && c.count_include_pad) set_attr<int64_t>(n, "count_include_pad", c.count_include_pad);
  return n;
}

void expect_pool(OpKind op, const PoolCase& c, const std::vector<int64_t>& shape, const std::vector<double>& want) {
  Tensor x = f32(c.x, iota1(Tensor::empty(DType::f32, c.x).numel()));
  for (bool ref : {false, true}) {
    Tensor xi = ref ? convert_tensor(x, DType::f64) : x;
    Tensor y = run(pool_node(op, c), {&xi}, ref).at(0);
    EXPECT_EQ(y.shape(), shape);
    std::vector<double> got = values(y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i << (ref ? " reference" : " eager");
  }
}

TEST(MaxPool, OnnxExamplesHandChecked) {
  expect_pool(OpKind::MaxPool, {.x = {1, 1, 4, 4}, .kernel = {3, 3}, .strides = {2, 2}, .ceil_mode = 1}, {1, 1, 2, 2},
              {11, 12, 15, 16});
  expect_pool(OpKind::MaxPool, {.x = {1, 1, 5, 5}, .kernel = {5, 5}, .pads = {2, 2, 2, 2}}, {1, 1, 5, 5},
              {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25});
  expect_pool(OpKind::MaxPool, {.x = {1, 1, 4, 4}, .kernel = {2, 2}, .dilations = {2, 2}}, {1, 1, 2, 2},
              {11, 12, 15, 16});
  expect_pool(OpKind::MaxPool, {.x = {1, 1, 5, 5}, .kernel = {3, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"},
              {1, 1, 3, 3}, {7, 9, 10, 17, 19, 20, 22, 24, 25});
  expect_pool(OpKind::MaxPool, {.x = {1, 1, 4}, .kernel = {2}, .auto_pad = "SAME_LOWER"}, {1, 1, 4}, {1, 2, 3, 4});
  expect_pool(OpKind::MaxPool, {.x = {1, 1, 4}, .kernel = {2}, .auto_pad = "SAME_UPPER"}, {1, 1, 4}, {2, 3, 4, 4});
}

TEST(MaxPool, CeilModeDropsWindowStartingInPadding) {
  // in 5, pads (1,1), kernel 2, stride 2: ceil gives 4 windows but the 4th would start at 6 >= 5 + 1.
  expect_pool(OpKind::MaxPool, {.x = {1, 1, 5}, .kernel = {2}, .strides = {2}, .pads = {1, 1}, .ceil_mode = 1},
              {1, 1, 3}, {1, 3, 5});
  expect_pool(OpKind::MaxPool, {.x = {1, 1, 6}, .kernel = {2}, .strides = {2}, .pads = {1, 0}, .ceil_mode = 1},
              {1, 1, 4}, {1, 3, 5, 6});
}

TEST(MaxPool, NaNPropagatesAndPaddingIsIgnored) {
  Tensor x = f32({1, 1, 2, 3}, {-5, NAN, -7, -1, -2, -3});
  for (bool ref : {false, true}) {
    Tensor xi = ref ? convert_tensor(x, DType::f64) : x;
    Tensor y = run(pool_node(OpKind::MaxPool, {.kernel = {2, 2}, .pads = {1, 1, 1, 1}}), {&xi}, ref).at(0);
    std::vector<double> v = values(y);
    ASSERT_EQ(v.size(), 12u);
    // row 0: windows over x[0][-1..0], x[0][0..1], ... padding never wins even though all values < 0.
    EXPECT_EQ(v[0], -5);
    EXPECT_TRUE(std::isnan(v[1])) << (ref ? "reference" : "eager");
    EXPECT_TRUE(std::isnan(v[2]));
    EXPECT_EQ(v[3], -7);
    EXPECT_EQ(v[4], -1);
    EXPECT_TRUE(std::isnan(v[5]));
    EXPECT_EQ(v[11], -3);
  }
}

TEST(MaxPool, IndicesOutput) {
  Tensor x = f32({1, 1, 5, 5}, iota1(25));
  Node n = pool_node(OpKind::MaxPool, {.kernel = {5, 5}, .pads = {2, 2, 2, 2}}, 2);
  std::vector<Tensor> r = run(n, {&x});
  EXPECT_EQ(r.at(1).dtype(), DType::i64);
  EXPECT_EQ(values(r[1]), (std::vector<double>{12, 13, 14, 14, 14, 17, 18, 19, 19, 19, 22, 23, 24, 24, 24, 22, 23, 24,
                                               24, 24, 22, 23, 24, 24, 24}));
  Node cm = pool_node(OpKind::MaxPool, {.kernel = {2, 2}, .strides = {2, 2}}, 2);
  set_attr<int64_t>(cm, "storage_order", 1);
  std::vector<Tensor> r2 = run(cm, {&x});
  EXPECT_EQ(values(r2[0]), (std::vector<double>{7, 9, 17, 19}));
  EXPECT_EQ(values(r2[1]), (std::vector<double>{6, 16, 8, 18}));
}

TEST(MaxPool, IntegerAndErrors) {
  Tensor x = Tensor::from_vector<int>(DType::u8, {1, 1, 2, 2}, {1, 200, 3, 4});
  Tensor y = run(pool_node(OpKind::MaxPool, {.kernel = {2, 2}}), {&x}).at(0);
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(values(y), (std::vector<double>{200}));
  Tensor f = f32({1, 1, 3, 3}, iota1(9));
  Node no_kernel = make_node(OpKind::MaxPool, 1);
  EXPECT_THROW(run(no_kernel, {&f}), UserError);
  EXPECT_THROW(run(pool_node(OpKind::MaxPool, {.kernel = {4, 4}}), {&f}), UserError);
  EXPECT_THROW(run(pool_node(OpKind::MaxPool, {.kernel = {2}}), {&f}), UserError);
  EXPECT_THROW(run(pool_node(OpKind::MaxPool, {.kernel = {2, 2}, .pads = {-1, 0, 0, 0}}), {&f}), UserError);
}

TEST(AveragePool, OnnxExamplesHandChecked) {
  PoolCase pads{.x = {1, 1, 5, 5}, .kernel = {5, 5}, .pads = {2, 2, 2, 2}};
  expect_pool(OpKind::AveragePool, pads, {1, 1, 5, 5},
              {7, 7.5, 8, 8.5, 9, 9.5, 10, 10.5, 11, 11.5, 12, 12.5, 13, 13.5, 14, 14.5, 15, 15.5, 16, 16.5, 17, 17.5, 18, 18.5, 19});
  pads.count_include_pad = 1;
  expect_pool(OpKind::AveragePool, pads, {1, 1, 5, 5},
              {2.52, 3.6, 4.8, 4.08, 3.24, 4.56, 6.4, 8.4, 7.04, 5.52, 7.2, 10.0, 13.0, 10.8, 8.4, 6.96, 9.6, 12.4, 10.24,
               7.92, 6.12, 8.4, 10.8, 8.88, 6.84});
  expect_pool(OpKind::AveragePool, {.x = {1, 1, 4, 4}, .kernel = {3, 3}, .strides = {2, 2}, .ceil_mode = 1},
              {1, 1, 2, 2}, {6, 7.5, 12, 13.5});
  expect_pool(OpKind::AveragePool, {.x = {1, 1, 5, 5}, .kernel = {3, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"},
              {1, 1, 3, 3}, {4, 5.5, 7, 11.5, 13, 14.5, 19, 20.5, 22});
}

TEST(AveragePool, CeilModeWithCountIncludePad) {
  // in 5 (1..5), pads (1,1), kernel 3, stride 3, ceil: windows [-1,2), [2,5), [5,8) -> the last one holds
  // x[5] = pad and 2 positions beyond the padded extent; the divisor counts only the padded extent.
  PoolCase c{.x = {1, 1, 5}, .kernel = {3}, .strides = {3}, .pads = {1, 1}, .ceil_mode = 1, .count_include_pad = 1};
  expect_pool(OpKind::AveragePool, c, {1, 1, 2}, {1.0, 4.0});
  c.x = {1, 1, 6};
  expect_pool(OpKind::AveragePool, c, {1, 1, 3}, {1.0, 4.0, 3.0});  // last window: x[5]=6 and one pad, divided by 2
  c.count_include_pad = 0;
  expect_pool(OpKind::AveragePool, c, {1, 1, 3}, {1.5, 4.0, 6.0});
}

TEST(Pool, DifferentialAgainstReference) {
  std::mt19937 rng(29);
  std::vector<PoolCase> cases = {
      {.x = {2, 3, 9, 11}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
      {.x = {1, 4, 10, 9}, .kernel = {3, 2}, .strides = {2, 3}, .pads = {1, 0, 0, 1}, .ceil_mode = 1},
      {.x = {1, 2, 7, 7}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {2, 2}, .pads = {2, 2, 2, 2}},
      {.x = {1, 3, 8, 8}, .kernel = {2, 2}, .strides = {2, 2}, .auto_pad = "SAME_LOWER"},
      {.x = {1, 3, 9, 8}, .kernel = {3, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"},
      {.x = {1, 2, 17}, .kernel = {4}, .strides = {3}, .pads = {2, 1}, .ceil_mode = 1},
      {.x = {1, 2, 5, 6, 7}, .kernel = {2, 3, 2}, .strides = {2, 1, 2}, .pads = {1, 1, 0, 0, 1, 1}},
      {.x = {1, 1, 1, 1}, .kernel = {1, 1}},
      {.x = {1, 64, 56, 56}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
  };
  for (bool specials : {false, true})
    for (PoolCase c : cases)
      for (OpKind op : {OpKind::MaxPool, OpKind::AveragePool})
        for (int64_t cip : {0, 1}) {
          if (op == OpKind::MaxPool && cip) continue;
          c.count_include_pad = cip;
          Tensor x = random_f32(c.x, rng, specials);
          differential(pool_node(op, c), {&x}, 1e-6, 1e-5,
                       std::string(op == OpKind::MaxPool ? "maxpool " : "avgpool ") + shape_str(c.x) +
                           (cip ? " include_pad" : "") + (specials ? " specials" : ""));
        }
}

TEST(GlobalAveragePool, HandCheckedAndDifferential) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, NAN});
  Node n = make_node(OpKind::GlobalAveragePool, 1);
  Tensor y = run(n, {&x}).at(0);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_EQ(values(y)[0], 2.5);
  EXPECT_TRUE(std::isnan(values(y)[1]));
  std::mt19937 rng(31);
  for (std::vector<int64_t> s : std::vector<std::vector<int64_t>>{{2, 3, 7}, {1, 5, 7, 9}, {1, 1, 1, 1, 1}, {2, 3, 3, 4, 5}}) {
    Tensor r = random_f32(s, rng, true);
    differential(n, {&r}, 1e-6, 1e-5, "globalavgpool " + shape_str(s));
  }
  Tensor empty = Tensor::empty(DType::f32, {0, 3, 4, 4});
  EXPECT_EQ(run(n, {&empty}).at(0).shape(), (std::vector<int64_t>{0, 3, 1, 1}));
}

}  // namespace
}  // namespace kiln::linalg_test
