#include "linalg_test_util.h"
#include "ops/registry.h"

namespace kiln::linalg_test {
namespace {

std::vector<double> iota1(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 1; i <= n; ++i) v.push_back(static_cast<double>(i));
  return v;
}

struct ResizeCase {
  std::string mode = "nearest", coord = "half_pixel", nearest = "";
  double cubic_a = -0.75;
  int64_t exclude_outside = 0;
};

Node resize_node(const ResizeCase& c, bool with_sizes) {
  // Inputs: X, roi (omitted), scales (omitted when sizes are used), sizes.
  Node n = make_node(OpKind::Resize, with_sizes ? 4 : 3, 1, {true, false, !with_sizes, true});
  set_attr<std::string>(n, "mode", c.mode);
  set_attr<std::string>(n, "coordinate_transformation_mode", c.coord);
  if (!c.nearest.empty()) set_attr<std::string>(n, "nearest_mode", c.nearest);
  set_attr<double>(n, "cubic_coeff_a", c.cubic_a);
  set_attr<int64_t>(n, "exclude_outside", c.exclude_outside);
  return n;
}

Tensor run_resize(const ResizeCase& c, const Tensor& x, const std::vector<double>& scales,
                  const std::vector<int64_t>& sizes, bool reference = false) {
  Tensor xi = reference ? convert_tensor(x, DType::f64) : x;
  Tensor s = f32({static_cast<int64_t>(scales.size())}, scales);
  Tensor z = Tensor::from_vector<int64_t>(DType::i64, {static_cast<int64_t>(sizes.size())}, sizes);
  if (sizes.empty()) return run(resize_node(c, false), {&xi, nullptr, &s}, reference).at(0);
  return run(resize_node(c, true), {&xi, nullptr, nullptr, &z}, reference).at(0);
}

void expect_resize(const ResizeCase& c, const Tensor& x, const std::vector<double>& scales,
                   const std::vector<int64_t>& sizes, const std::vector<int64_t>& shape, const std::vector<double>& want,
                   size_t compare_first = SIZE_MAX) {
  for (bool ref : {false, true}) {
    Tensor y = run_resize(c, x, scales, sizes, ref);
    EXPECT_EQ(y.shape(), shape);
    std::vector<double> got = values(y);
    for (size_t i = 0; i < want.size() && i < compare_first && i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5) << c.mode << "/" << c.coord << " element " << i << (ref ? " reference" : " eager");
  }
}

TEST(Resize, NearestModes) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  expect_resize({}, x, {1, 1, 2, 3}, {}, {1, 1, 4, 6},
                {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  Tensor x8 = f32({1, 1, 2, 4}, iota1(8));
  expect_resize({}, x8, {1, 1, 0.6, 0.6}, {}, {1, 1, 1, 2}, {1, 3});
  Tensor x16 = f32({1, 1, 4, 4}, iota1(16));
  // First output row of each 8x8 upsample (ONNX conformance cases).
  expect_resize({.nearest = "ceil"}, x16, {}, {1, 1, 8, 8}, {1, 1, 8, 8}, {1, 2, 2, 3, 3, 4, 4, 4}, 8);
  expect_resize({.coord = "align_corners", .nearest = "floor"}, x16, {}, {1, 1, 8, 8}, {1, 1, 8, 8},
                {1, 1, 1, 2, 2, 3, 3, 4}, 8);
  expect_resize({.coord = "asymmetric", .nearest = "round_prefer_ceil"}, x16, {}, {1, 1, 8, 8}, {1, 1, 8, 8},
                {1, 2, 2, 3, 3, 4, 4, 4}, 8);
  // round_prefer_floor vs round_prefer_ceil on exact halves: asymmetric, scale 2 -> x/2 = k + 0.5.
  Tensor x4 = f32({4}, {10, 20, 30, 40});
  expect_resize({.coord = "asymmetric", .nearest = "round_prefer_floor"}, x4, {2}, {}, {8}, {10, 10, 20, 20, 30, 30, 40, 40});
  expect_resize({.coord = "asymmetric", .nearest = "round_prefer_ceil"}, x4, {2}, {}, {8}, {10, 20, 20, 30, 30, 40, 40, 40});
  // Nearest copies any dtype exactly.
  Tensor xi = Tensor::from_vector<int64_t>(DType::i64, {1, 3}, {int64_t{1} << 60, -5, 7});
  Tensor yi = run_resize({.coord = "asymmetric"}, xi, {1, 2}, {});
  EXPECT_EQ(yi.dtype(), DType::i64);
  EXPECT_EQ(yi.data<int64_t>()[1], int64_t{1} << 60);
  EXPECT_EQ(yi.data<int64_t>()[5], 7);
}

TEST(Resize, LinearModes) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  expect_resize({.mode = "linear"}, x, {1, 1, 2, 2}, {}, {1, 1, 4, 4},
                {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  expect_resize({.mode = "linear", .coord = "align_corners"}, x, {1, 1, 2, 2}, {}, {1, 1, 4, 4},
                {1, 4 / 3., 5 / 3., 2, 5 / 3., 2, 7 / 3., 8 / 3., 7 / 3., 8 / 3., 3, 10 / 3., 3, 10 / 3., 11 / 3., 4});
  Tensor x8 = f32({1, 1, 2, 4}, iota1(8));
  expect_resize({.mode = "linear"}, x8, {1, 1, 0.6, 0.6}, {}, {1, 1, 1, 2}, {2.6666667, 4.3333333});
  expect_resize({.mode = "linear", .coord = "align_corners"}, x8, {1, 1, 0.6, 0.6}, {}, {1, 1, 1, 2}, {1, 3.142857});
  Tensor x16 = f32({1, 1, 4, 4}, iota1(16));
  expect_resize({.mode = "linear", .coord = "pytorch_half_pixel"}, x16, {}, {1, 1, 3, 1}, {1, 1, 3, 1},
                {1.6666667, 7, 12.333333});
  // Trilinear: a 3-D linear ramp is reproduced exactly by N-linear interpolation with align_corners.
  std::vector<double> ramp;
  for (int d = 0; d < 2; ++d)
    for (int h = 0; h < 3; ++h)
      for (int w = 0; w < 2; ++w) ramp.push_back(100 * d + 10 * h + w);
  Tensor x3 = f32({2, 3, 2}, ramp);
  Tensor y3 = run_resize({.mode = "linear", .coord = "align_corners"}, x3, {}, {3, 5, 3});
  EXPECT_EQ(y3.shape(), (std::vector<int64_t>{3, 5, 3}));
  for (int d = 0; d < 3; ++d)
    for (int h = 0; h < 5; ++h)
      for (int w = 0; w < 3; ++w)
        EXPECT_NEAR(y3.data<float>()[(d * 5 + h) * 3 + w], 50 * d + 5 * h + 0.5 * w, 1e-4);
}

TEST(Resize, CubicModes) {
  // Expected rows from a port of ONNX's Python reference.
  Tensor x16 = f32({1, 1, 4, 4}, iota1(16));
  expect_resize({.mode = "cubic"}, x16, {1, 1, 2, 2}, {}, {1, 1, 8, 8},
                {0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875, 3.68359375}, 8);
  expect_resize({.mode = "cubic", .cubic_a = -0.5, .exclude_outside = 1}, x16, {1, 1, 2, 2}, {}, {1, 1, 8, 8},
                {0.55882353, 0.81494204, 1.35698249, 1.89705882, 2.39705882, 2.93713516, 3.47917561, 3.73529412}, 8);
  expect_resize({.mode = "cubic"}, x16, {1, 1, 0.8, 0.8}, {}, {1, 1, 3, 3},
                {1.47119141, 2.78125, 4.08251953, 6.71142578, 8.02148438, 9.32275391, 11.91650391, 13.2265625, 14.52783203});
  expect_resize({.mode = "cubic", .coord = "align_corners"}, x16, {1, 1, 2, 2}, {}, {1, 1, 8, 8},
                {1.0, 1.34110787, 1.80029155, 2.32944606, 2.67055394, 3.19970845, 3.65889213, 4.0}, 8);
}

TEST(Resize, TfCropAndResizeWithExtrapolation) {
  Tensor x = f32({1, 1, 4, 4}, iota1(16));
  Tensor roi = f32({8}, {0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8});
  Tensor sizes = Tensor::from_vector<int64_t>(DType::i64, {4}, {1, 1, 3, 3});
  Node n = make_node(OpKind::Resize, 4, 1, {true, true, false, true});
  set_attr<std::string>(n, "mode", "linear");
  set_attr<std::string>(n, "coordinate_transformation_mode", "tf_crop_and_resize");
  std::vector<double> want = {7.6, 7.9, 8.2, 8.8, 9.1, 9.4, 10, 10.3, 10.6};
  std::vector<double> got = values(run(n, {&x, &roi, nullptr, &sizes}).at(0));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
  // A box reaching outside the image: samples beyond it take extrapolation_value.
  Tensor roi2 = f32({8}, {0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7});
  set_attr<double>(n, "extrapolation_value", 10.0);
  std::vector<double> got2 = values(run(n, {&x, &roi2, nullptr, &sizes}).at(0));
  std::vector<double> want2 = {7.6, 10, 10, 12.4, 10, 10, 10, 10, 10};
  for (size_t i = 0; i < want2.size(); ++i) EXPECT_NEAR(got2[i], want2[i], 1e-4) << i;
}

TEST(Resize, ShapesAxesAndErrors) {
  Tensor x = f32({1, 2, 3, 4}, iota1(24));
  Node n = resize_node({}, true);
  set_ints(n, "axes", {-1, 2});
  Tensor sizes = Tensor::from_vector<int64_t>(DType::i64, {2}, {8, 6});
  EXPECT_EQ(run(n, {&x, nullptr, nullptr, &sizes}).at(0).shape(), (std::vector<int64_t>{1, 2, 6, 8}));
  set_attr<std::string>(n, "keep_aspect_ratio_policy", "not_larger");
  EXPECT_EQ(run(n, {&x, nullptr, nullptr, &sizes}).at(0).shape(), (std::vector<int64_t>{1, 2, 6, 8}));
  Tensor sizes2 = Tensor::from_vector<int64_t>(DType::i64, {2}, {8, 9});  // scale min(2, 3) = 2
  EXPECT_EQ(run(n, {&x, nullptr, nullptr, &sizes2}).at(0).shape(), (std::vector<int64_t>{1, 2, 6, 8}));
  set_attr<std::string>(n, "keep_aspect_ratio_policy", "not_smaller");
  EXPECT_EQ(run(n, {&x, nullptr, nullptr, &sizes2}).at(0).shape(), (std::vector<int64_t>{1, 2, 9, 12}));

  Node anti = resize_node({.mode = "linear"}, false);
  set_attr<int64_t>(anti, "antialias", 1);
  Tensor s = f32({4}, {1, 1, 0.5, 0.5});
  EXPECT_THROW(run(anti, {&x, nullptr, &s}), UserError);
  Node bad_mode = resize_node({.mode = "bicubic"}, false);
  EXPECT_THROW(run(bad_mode, {&x, nullptr, &s}), UserError);
  Tensor s3 = f32({3}, {1, 1, 2});
  EXPECT_THROW(run(resize_node({}, false), {&x, nullptr, &s3}), UserError);
  Tensor neg = f32({4}, {1, 1, -2, 1});
  EXPECT_THROW(run(resize_node({}, false), {&x, nullptr, &neg}), UserError);
  Node neither = make_node(OpKind::Resize, 1);
  EXPECT_THROW(run(neither, {&x}), UserError);
  // Downscaling to zero: an empty output, no work.
  Tensor tiny = f32({4}, {1, 1, 0.1, 1});
  EXPECT_EQ(run(resize_node({}, false), {&x, nullptr, &tiny}).at(0).shape(), (std::vector<int64_t>{1, 2, 0, 4}));
}

TEST(Resize, SymbolicInference) {
  Node n = resize_node({}, false);
  TensorType x{DType::f32, {Dim::sym("n"), Dim::fixed(3), Dim::sym("h"), Dim::fixed(8)}};
  TensorType roi{DType::f32, {Dim::fixed(0)}};
  TensorType st{DType::f32, {Dim::fixed(4)}};
  Tensor scales = f32({4}, {1, 1, 2, 0.5});
  int fresh = 0;
  InferContext ctx(n, {&x, nullptr, &st}, {nullptr, nullptr, &scales}, &fresh, 16);
  Shape out = op_registry().find(OpKind::Resize)->infer(ctx).at(0).shape;
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(dim_string(out[0]), "n");
  EXPECT_EQ(out[1], Dim::fixed(3));
  EXPECT_FALSE(out[2].is_static());
  EXPECT_NE(dim_string(out[2]), "h");
  EXPECT_EQ(out[3], Dim::fixed(4));
}

TEST(Resize, DifferentialAgainstReference) {
  std::mt19937 rng(37);
  struct Case {
    ResizeCase c;
    std::vector<int64_t> x;
    std::vector<double> scales;
  };
  std::vector<Case> cases;
  for (std::string coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"})
    for (std::string mode : {"nearest", "linear", "cubic"}) {
      cases.push_back({{.mode = mode, .coord = coord}, {2, 3, 5, 7}, {1, 1, 2.5, 1.5}});
      cases.push_back({{.mode = mode, .coord = coord, .exclude_outside = 1}, {1, 2, 9, 6}, {1, 1, 0.5, 0.75}});
    }
  cases.push_back({{.mode = "linear"}, {3, 4, 5}, {1.5, 2, 0.6}});
  cases.push_back({{.mode = "cubic"}, {1, 1, 1, 1}, {1, 1, 3, 2}});
  for (bool specials : {false, true})
    for (const Case& c : cases) {
      Tensor x = random_f32(c.x, rng, specials);
      Tensor s = f32({static_cast<int64_t>(c.scales.size())}, c.scales);
      differential(resize_node(c.c, false), {&x, nullptr, &s}, 1e-5, 1e-5,
                   "resize " + c.c.mode + "/" + c.c.coord + " " + shape_str(c.x));
    }
}

}  // namespace
}  // namespace kiln::linalg_test
