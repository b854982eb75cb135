// GridSample on hand-checked points of a 2x3 image: each mode, padding and align_corners at the
// corners, inside and past the borders; cubic's weights on a ramp; nearest rounding half to even
// in 2-D and 3-D; NaN coordinates, an Inf beside an exact sample; the fp64 reference path; errors.
#include <cmath>

#include "linalg_test_util.h"

namespace kiln::linalg_test {
namespace {

Node grid_node(const char* mode, const char* padding, int64_t align_corners) {
  Node n = make_node(OpKind::GridSample, 2);
  set_attr(n, "mode", std::string(mode));
  set_attr(n, "padding_mode", std::string(padding));
  set_attr(n, "align_corners", align_corners);
  return n;
}

// X [[1, 2, 3], [4, 5, 6]] sampled at the (x, y) points given, one output row.
std::vector<double> sample_2x3(const char* mode, const char* padding, int64_t align, const std::vector<double>& xy,
                               bool reference = false) {
  Tensor x = f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor grid = f32({1, 1, int64_t(xy.size() / 2), 2}, xy);
  return values(run(grid_node(mode, padding, align), {&x, &grid}, reference)[0]);
}

TEST(GridSample, LinearAtCornersCentreAndPastTheBorders) {
  // align_corners=1: -1 and 1 are the corner samples; (0, 0) is column 1, half way between the rows.
  EXPECT_EQ(sample_2x3("linear", "zeros", 1, {-1, -1, 1, 1, 0, 0}), (std::vector<double>{1, 6, 3.5}));
  // align_corners=0: (-1, -1) is the corner of the image, a quarter of sample (0, 0) with zeros...
  EXPECT_EQ(sample_2x3("linear", "zeros", 0, {-1, -1}), (std::vector<double>{0.25}));
  // ... all of it with border or reflection padding (the taps at -1 read sample 0).
  EXPECT_EQ(sample_2x3("linear", "border", 0, {-1, -1}), (std::vector<double>{1}));
  EXPECT_EQ(sample_2x3("linear", "reflection", 0, {-1, -1}), (std::vector<double>{1}));
  // x = 2 is sample coordinate 4, past the right border 2.5: zeros reads nothing, border clamps to
  // column 2, reflection mirrors to column 1; y = 0 is half way between the rows.
  EXPECT_EQ(sample_2x3("linear", "zeros", 0, {2, 0}), (std::vector<double>{0}));
  EXPECT_EQ(sample_2x3("linear", "border", 0, {2, 0}), (std::vector<double>{4.5}));
  EXPECT_EQ(sample_2x3("linear", "reflection", 0, {2, 0}), (std::vector<double>{3.5}));
  // The fp64 reference path agrees.
  EXPECT_EQ(sample_2x3("linear", "reflection", 0, {2, 0, -1, -1}, true), (std::vector<double>{3.5, 1}));
}

TEST(GridSample, NearestRoundsHalfToEvenIn2dAnd3d) {
  // align_corners=1: x = 0.5 is column 1.5 (rounds to 2), y = 0 is row 0.5 (rounds to 0).
  EXPECT_EQ(sample_2x3("nearest", "zeros", 1, {0.5, 0}), (std::vector<double>{3}));
  EXPECT_EQ(sample_2x3("nearest", "zeros", 1, {-0.5, -1}), (std::vector<double>{1}));
  // Volumetric X [1, 1, 1, 1, 3]: x = -0.5 is column 0.5, which rounds to 0 (as onnx 1.23's data has it).
  Tensor x = f32({1, 1, 1, 1, 3}, {1, 2, 3});
  Tensor grid = f32({1, 1, 1, 1, 3}, {-0.5, 0, 0});
  EXPECT_EQ(values(run(grid_node("nearest", "zeros", 1), {&x, &grid})[0]), (std::vector<double>{1}));
  // align_corners=0 at the corner: -0.5 in each axis rounds to 0, inside.
  Tensor corner = f32({1, 1, 1, 1, 3}, {-1, -1, -1});
  EXPECT_EQ(values(run(grid_node("nearest", "zeros", 0), {&x, &corner})[0]), (std::vector<double>{1}));
}

TEST(GridSample, CubicOnARampAndAConstant) {
  // X[h][w] = w on a 4x6 image, align_corners=1: x = -0.3 is column 1.75. Keys' weights at t = 0.75 with
  // a = -0.75 are -0.03515625, 0.26171875, 0.87890625, -0.10546875 on columns 0..3: 1.703125 (a = -0.75
  // does not reproduce a ramp exactly). x = 0 is column 2.5, where the symmetric weights give 2.5.
  std::vector<double> ramp;
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 6; ++w) ramp.push_back(w);
  Tensor x = f32({1, 1, 4, 6}, ramp);
  Tensor grid = f32({1, 1, 2, 2}, {-0.3, 0.1, 0, 0.4});
  const std::vector<double> got = values(run(grid_node("cubic", "border", 1), {&x, &grid})[0]);
  EXPECT_NEAR(got[0], 1.703125, 1e-6);
  EXPECT_NEAR(got[1], 2.5, 1e-6);
  // Near the border a cubic tap reads the clamped sample: a constant image stays constant.
  Tensor seven = f32({1, 2, 2, 2}, {7, 7, 7, 7, -3, -3, -3, -3});
  Tensor edge = f32({1, 1, 2, 2}, {-0.9, -0.8, 0.95, 0.1});
  const std::vector<double> flat = values(run(grid_node("cubic", "border", 0), {&seven, &edge})[0]);
  ASSERT_EQ(flat.size(), 4u);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(flat[size_t(i)], 7, 1e-5) << i;
  for (int i = 2; i < 4; ++i) EXPECT_NEAR(flat[size_t(i)], -3, 1e-5) << i;
}

TEST(GridSample, NanCoordinatesAndInfNeighbours) {
  const std::vector<double> got = sample_2x3("linear", "zeros", 1, {NAN, 0, 0, -1, 1e30, 0, INFINITY, 0});
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], 2);  // column 1, row 0
  EXPECT_EQ(got[2], 0);  // far past the border: zeros
  EXPECT_EQ(got[3], 0);
  EXPECT_TRUE(std::isnan(sample_2x3("linear", "reflection", 1, {INFINITY, 0})[0]));
  EXPECT_EQ(sample_2x3("linear", "border", 1, {INFINITY, -1})[0], 3);
  // An exact sample beside an Inf: the zero-weight tap is dropped.
  Tensor x = f32({1, 1, 1, 2}, {5, INFINITY});
  Tensor grid = f32({1, 1, 1, 2}, {-1, 0});
  EXPECT_EQ(values(run(grid_node("linear", "zeros", 1), {&x, &grid})[0]), (std::vector<double>{5}));
}

TEST(GridSample, BadAttributesAndShapesAreUserErrors) {
  Tensor x = f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor grid = f32({1, 1, 1, 2}, {0, 0});
  EXPECT_THROW(run(grid_node("bilinear", "zeros", 0), {&x, &grid}), UserError);  // GridSample-16's name
  EXPECT_THROW(run(grid_node("linear", "mirror", 0), {&x, &grid}), UserError);
  EXPECT_THROW(run(grid_node("linear", "zeros", 2), {&x, &grid}), UserError);
  Tensor three = f32({1, 1, 1, 3}, {0, 0, 0});  // three coordinates for two spatial dims
  EXPECT_THROW(run(grid_node("linear", "zeros", 0), {&x, &three}), UserError);
  Tensor batch2 = f32({2, 1, 1, 2}, {0, 0, 0, 0});
  EXPECT_THROW(run(grid_node("linear", "zeros", 0), {&x, &batch2}), UserError);
}

}  // namespace
}  // namespace kiln::linalg_test
