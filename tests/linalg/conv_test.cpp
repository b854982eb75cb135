#include "linalg_test_util.h"

namespace kiln::linalg_test {
namespace {

std::vector<double> iota(int64_t n, double start = 0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(start + static_cast<double>(i));
  return v;
}

struct ConvCase {
  std::vector<int64_t> x = {}, w = {};
  int64_t group = 1;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
  std::string auto_pad = {};
  bool bias = false;
};

Node conv_node(OpKind op, const ConvCase& c) {
  Node n = make_node(op, c.bias ? 3 : 2);
  if (c.group != 1) set_attr<int64_t>(n, "group", c.group);
  if (!c.strides.empty()) set_ints(n, "strides", c.strides);
  if (!c.dilations.empty()) set_ints(n, "dilations", c.dilations);
  if (!c.pads.empty()) set_ints(n, "pads", c.pads);
  if (!c.auto_pad.empty()) set_attr<std::string>(n, "auto_pad", c.auto_pad);
  return n;
}

// Runs a node on f32 and on the reference (both must agree with the expected values).
void expect_both(const Node& n, const std::vector<const Tensor*>& in, const std::vector<int64_t>& shape,
                 const std::vector<double>& want) {
  for (bool ref : {false, true}) {
    std::vector<Tensor> conv(in.size());
    std::vector<const Tensor*> ptrs(in.size(), nullptr);
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i]) {
        conv[i] = ref ? convert_tensor(*in[i], DType::f64) : *in[i];
        ptrs[i] = &conv[i];
      }
    Tensor y = run(n, ptrs, ref).at(0);
    EXPECT_EQ(y.shape(), shape) << (ref ? "reference" : "eager");
    std::vector<double> got = values(y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i << (ref ? " reference" : " eager");
  }
}

TEST(Conv, OnnxExamplesHandChecked) {
  Tensor x = f32({1, 1, 5, 5}, iota(25));
  Tensor w = f32({1, 1, 3, 3}, std::vector<double>(9, 1.0));
  expect_both(conv_node(OpKind::Conv, {.pads = {1, 1, 1, 1}}), {&x, &w}, {1, 1, 5, 5},
              {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
  expect_both(conv_node(OpKind::Conv, {}), {&x, &w}, {1, 1, 3, 3}, {54, 63, 72, 99, 108, 117, 144, 153, 162});
  expect_both(conv_node(OpKind::Conv, {.strides = {2, 2}, .auto_pad = "SAME_LOWER"}), {&x, &w}, {1, 1, 3, 3},
              {12, 27, 24, 63, 108, 81, 72, 117, 84});
  Tensor x7 = f32({1, 1, 7, 5}, iota(35));
  expect_both(conv_node(OpKind::Conv, {.strides = {2, 2}, .pads = {1, 1, 1, 1}}), {&x7, &w}, {1, 1, 4, 3},
              {12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124});
  expect_both(conv_node(OpKind::Conv, {.strides = {2, 2}, .pads = {1, 0, 1, 0}}), {&x7, &w}, {1, 1, 4, 2},
              {21, 33, 99, 117, 189, 207, 171, 183});
}

TEST(Conv, AutoPadSameUpperVersusLower) {
  // 1-D, input 4, kernel 2, stride 1: total padding 1 goes at the end (UPPER) or the start (LOWER).
  Tensor x = f32({1, 1, 4}, {1, 2, 3, 4});
  Tensor w = f32({1, 1, 2}, {1, 10});
  expect_both(conv_node(OpKind::Conv, {.auto_pad = "SAME_UPPER"}), {&x, &w}, {1, 1, 4}, {21, 32, 43, 4});
  expect_both(conv_node(OpKind::Conv, {.auto_pad = "SAME_LOWER"}), {&x, &w}, {1, 1, 4}, {10, 21, 32, 43});
  expect_both(conv_node(OpKind::Conv, {.auto_pad = "VALID"}), {&x, &w}, {1, 1, 3}, {21, 32, 43});
}

TEST(Conv, GroupsDilationsAndBias) {
  // Two groups of one channel each, dilation 2, bias.
  Tensor x = f32({1, 2, 5}, {1, 2, 3, 4, 5, 10, 20, 30, 40, 50});
  Tensor w = f32({2, 1, 2}, {1, 1, 1, -1});
  Tensor b = f32({2}, {0.5, -0.5});
  expect_both(conv_node(OpKind::Conv, {.group = 2, .dilations = {2}, .bias = true}), {&x, &w, &b}, {1, 2, 3},
              {4.5, 6.5, 8.5, -20.5, -20.5, -20.5});
}

TEST(Conv, ErrorsAreUserErrors) {
  Tensor x = f32({1, 3, 5, 5}, std::vector<double>(75, 1));
  Tensor w = f32({4, 2, 3, 3}, std::vector<double>(72, 1));
  EXPECT_THROW(run(conv_node(OpKind::Conv, {}), {&x, &w}), UserError);  // 3 channels vs 2
  Tensor w2 = f32({4, 3, 7, 7}, std::vector<double>(588, 1));
  EXPECT_THROW(run(conv_node(OpKind::Conv, {}), {&x, &w2}), UserError);  // kernel larger than input
  Tensor w3 = f32({4, 3, 3, 3}, std::vector<double>(108, 1));
  EXPECT_THROW(run(conv_node(OpKind::Conv, {.auto_pad = "SAME"}), {&x, &w3}), UserError);
  EXPECT_THROW(run(conv_node(OpKind::Conv, {.strides = {0, 1}}), {&x, &w3}), UserError);
  EXPECT_THROW(run(conv_node(OpKind::Conv, {.group = 2}), {&x, &w3}), UserError);
}

TEST(Conv, ZeroSizes) {
  Tensor x = Tensor::empty(DType::f32, {0, 3, 5, 5});
  Tensor w = f32({4, 3, 3, 3}, std::vector<double>(108, 1));
  EXPECT_EQ(run(conv_node(OpKind::Conv, {}), {&x, &w}).at(0).shape(), (std::vector<int64_t>{0, 4, 3, 3}));
  Tensor x0 = Tensor::empty(DType::f32, {1, 0, 4});  // no input channels: the output is the bias
  Tensor w0 = Tensor::empty(DType::f32, {2, 0, 3});
  Tensor b = f32({2}, {1.5, -2});
  Tensor y = run(conv_node(OpKind::Conv, {.bias = true}), {&x0, &w0, &b}).at(0);
  EXPECT_EQ(values(y), (std::vector<double>{1.5, 1.5, -2, -2}));
}

TEST(Conv, DifferentialAgainstReference) {
  std::mt19937 rng(17);
  std::vector<ConvCase> cases = {
      {.x = {1, 3, 11, 13}, .w = {5, 3, 3, 3}, .pads = {1, 1, 1, 1}, .bias = true},
      {.x = {2, 4, 9, 7}, .w = {6, 2, 3, 2}, .group = 2, .strides = {2, 1}, .pads = {0, 1, 2, 0}},
      {.x = {1, 8, 10, 10}, .w = {8, 1, 3, 3}, .group = 8, .dilations = {2, 2}, .pads = {2, 2, 2, 2}, .bias = true},
      {.x = {1, 16, 14, 14}, .w = {32, 16, 1, 1}, .bias = true},
      {.x = {1, 5, 9, 9}, .w = {7, 5, 3, 3}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"},
      {.x = {1, 5, 8, 9}, .w = {7, 5, 4, 3}, .strides = {3, 2}, .auto_pad = "SAME_LOWER", .bias = true},
      {.x = {1, 3, 7, 8}, .w = {2, 3, 3, 3}, .strides = {2, 3}, .auto_pad = "VALID"},
      {.x = {1, 1, 1, 1}, .w = {1, 1, 1, 1}},
      {.x = {3, 2, 17}, .w = {5, 2, 4}, .strides = {2}, .dilations = {3}, .pads = {1, 2}, .bias = true},
      {.x = {1, 4, 5, 6, 7}, .w = {4, 2, 2, 3, 2}, .group = 2, .strides = {1, 2, 1}, .pads = {1, 0, 1, 0, 1, 1}, .bias = true},
      {.x = {1, 64, 28, 28}, .w = {64, 64, 3, 3}, .pads = {1, 1, 1, 1}, .bias = true},
  };
  for (bool specials : {false, true})
    for (const ConvCase& c : cases) {
      Tensor x = random_f32(c.x, rng, specials), w = random_f32(c.w, rng), b = random_f32({c.w[0]}, rng);
      std::vector<const Tensor*> in = {&x, &w};
      if (c.bias) in.push_back(&b);
      differential(conv_node(OpKind::Conv, c), in, 1e-6, 1e-5,
                   "conv x=" + shape_str(c.x) + " w=" + shape_str(c.w) + (specials ? " specials" : ""), true);
    }
}

// ---------------------------------------------------------------- ConvTranspose

TEST(ConvTranspose, OnnxExamplesHandChecked) {
  Tensor x = f32({1, 1, 3, 3}, iota(9));
  Tensor w = f32({1, 2, 3, 3}, std::vector<double>(18, 1.0));
  std::vector<double> plane = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  std::vector<double> two = plane;
  two.insert(two.end(), plane.begin(), plane.end());
  expect_both(conv_node(OpKind::ConvTranspose, {}), {&x, &w}, {1, 2, 5, 5}, two);

  Tensor x1 = f32({1, 1, 3}, {0, 1, 2});
  Tensor w1 = f32({1, 2, 3}, std::vector<double>(6, 1.0));
  expect_both(conv_node(OpKind::ConvTranspose, {}), {&x1, &w1}, {1, 2, 5}, {0, 1, 3, 3, 2, 0, 1, 3, 3, 2});

  // strides [3,2] with output_shape [10,8] and, equivalently, output_padding [1,1].
  std::vector<double> big;
  std::vector<std::vector<double>> rows = {{0, 0, 1, 1, 3, 2, 2, 0}, {3, 3, 7, 4, 9, 5, 5, 0}, {6, 6, 13, 7, 15, 8, 8, 0}};
  for (int r = 0; r < 9; ++r) big.insert(big.end(), rows[r / 3].begin(), rows[r / 3].end());
  big.insert(big.end(), 8, 0.0);
  std::vector<double> big2 = big;
  big2.insert(big2.end(), big.begin(), big.end());
  Node with_shape = conv_node(OpKind::ConvTranspose, {.strides = {3, 2}});
  set_ints(with_shape, "output_shape", {10, 8});
  expect_both(with_shape, {&x, &w}, {1, 2, 10, 8}, big2);
  Node with_padding = conv_node(OpKind::ConvTranspose, {.strides = {3, 2}});
  set_ints(with_padding, "output_padding", {1, 1});
  expect_both(with_padding, {&x, &w}, {1, 2, 10, 8}, big2);

  std::vector<double> padded = {1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15};
  std::vector<double> padded2 = padded;
  padded2.insert(padded2.end(), padded.begin(), padded.end());
  expect_both(conv_node(OpKind::ConvTranspose, {.strides = {3, 2}, .pads = {1, 2, 1, 2}}), {&x, &w}, {1, 2, 7, 3}, padded2);

  Tensor xd = f32({1, 1, 3, 3}, {3, 8, 1, 9, 5, 7, 3, 2, 6});
  Tensor wd = f32({1, 1, 2, 2}, {7, 2, 1, 9});
  expect_both(conv_node(OpKind::ConvTranspose, {.dilations = {2, 2}}), {&xd, &wd}, {1, 1, 5, 5},
              {21, 56, 13, 16, 2, 63, 35, 67, 10, 14, 24, 22, 76, 76, 21, 9, 5, 88, 45, 63, 3, 2, 33, 18, 54});

  std::vector<double> same = {0, 0, 1, 1, 3, 2, 0, 0, 1, 1, 3, 2, 3, 3, 8, 5, 12, 7,
                              3, 3, 7, 4, 9, 5, 9, 9, 20, 11, 24, 13, 6, 6, 13, 7, 15, 8};
  std::vector<double> same2 = same;
  same2.insert(same2.end(), same.begin(), same.end());
  expect_both(conv_node(OpKind::ConvTranspose, {.strides = {2, 2}, .auto_pad = "SAME_UPPER"}), {&x, &w}, {1, 2, 6, 6},
              same2);
}

TEST(ConvTranspose, DifferentialAgainstReference) {
  std::mt19937 rng(23);
  struct Case {
    ConvCase c;
    std::vector<int64_t> output_padding, output_shape;
  };
  std::vector<Case> cases = {
      {{.x = {1, 3, 5, 6}, .w = {3, 4, 3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .bias = true}, {1, 1}, {}},
      {{.x = {2, 4, 4, 3}, .w = {4, 3, 2, 3}, .group = 2, .strides = {1, 2}, .dilations = {2, 1}}, {}, {}},
      {{.x = {1, 2, 7}, .w = {2, 3, 4}, .strides = {3}, .pads = {2, 1}, .bias = true}, {}, {}},
      {{.x = {1, 2, 3, 3, 4}, .w = {2, 2, 2, 3, 2}, .strides = {2, 1, 2}, .bias = true}, {1, 0, 1}, {}},
      {{.x = {1, 3, 4, 5}, .w = {3, 2, 3, 3}, .strides = {2, 2}, .auto_pad = "SAME_LOWER"}, {}, {}},
      {{.x = {1, 3, 4, 5}, .w = {3, 2, 3, 3}, .strides = {2, 2}}, {}, {9, 12}},
      {{.x = {1, 1, 1, 1}, .w = {1, 1, 1, 1}}, {}, {}},
      {{.x = {1, 32, 14, 14}, .w = {32, 16, 4, 4}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .bias = true}, {}, {}},
      // DBNet's head: 2x2 stride 2, one output channel (oneDNN on the plain layouts) and eight (blocked)
      {{.x = {1, 24, 10, 9}, .w = {24, 1, 2, 2}, .strides = {2, 2}, .bias = true}, {}, {}},
      {{.x = {2, 24, 6, 7}, .w = {24, 8, 2, 2}, .strides = {2, 2}}, {}, {}},
  };
  for (bool specials : {false, true})
    for (const Case& c : cases) {
      Tensor x = random_f32(c.c.x, rng, specials), w = random_f32(c.c.w, rng);
      Tensor b = random_f32({c.c.w[1] * c.c.group}, rng);
      Node n = conv_node(OpKind::ConvTranspose, c.c);
      if (!c.output_padding.empty()) set_ints(n, "output_padding", c.output_padding);
      if (!c.output_shape.empty()) set_ints(n, "output_shape", c.output_shape);
      std::vector<const Tensor*> in = {&x, &w};
      if (c.c.bias) in.push_back(&b);
      differential(n, in, 1e-6, 1e-5, "convtranspose x=" + shape_str(c.c.x) + " w=" + shape_str(c.c.w), true);
    }
}

}  // namespace
}  // namespace kiln::linalg_test
