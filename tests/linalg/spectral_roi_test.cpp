// STFT against DFTs worked out by hand (a ramp in frames, a window, a complex impulse, both sidednesses),
// MelWeightMatrix against filters computed by hand from its band edges, RoiAlign on a linear image
// (where bilinear sampling is exact) in both coordinate modes, avg and max, a NaN region; then errors.
#include <cmath>

#include "linalg_test_util.h"

namespace kiln::linalg_test {
namespace {

Tensor i64s(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(DType::i64, std::move(shape), v);
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  const std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << i;
}

TEST(Stft, FramesOfARampWithAndWithoutAWindow) {
  Tensor signal = f32({1, 8, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor step = i64s({}, {2}), length = i64s({}, {4});
  // Frame f is [2f, 2f + 1, 2f + 2, 2f + 3]: bin 0 is 6 + 8f, bin 1 -2 + 2i, bin 2 -2 (one-sided: 3 bins).
  Node n = make_node(OpKind::STFT, 4, 1, {true, true, false, true});
  Tensor y = run(n, {&signal, &step, nullptr, &length})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 3, 3, 2}));
  expect_values(y, {6, 0, -2, 2, -2, 0, 14, 0, -2, 2, -2, 0, 22, 0, -2, 2, -2, 0});
  // Window [0, 1, 1, 0] (its length is the frame's): frame 0 is [0, 1, 2, 0].
  Tensor window = f32({4}, {0, 1, 1, 0});
  Node w = make_node(OpKind::STFT, 3);
  y = run(w, {&signal, &step, &window})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 3, 3, 2}));
  const std::vector<double> all = values(y), frame0(all.begin(), all.begin() + 6);
  const std::vector<double> want = {3, 0, -2, -1, 1, 0};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(frame0[i], want[i], 1e-5) << i;
  EXPECT_EQ(run(w, {&signal, &step, &window}, /*reference=*/true)[0].shape(), y.shape());
}

TEST(Stft, AComplexImpulseTwoSided) {
  // x = [0, i, 0, 0]: X_k = i e^{-i pi k / 2} = i, 1, -i, -1; no window or frame_length: one frame of 4.
  Tensor signal = f32({1, 4, 2}, {0, 0, 0, 1, 0, 0, 0, 0});
  Tensor step = i64s({}, {1});
  Node n = make_node(OpKind::STFT, 2);
  set_attr(n, "onesided", int64_t{0});
  Tensor y = run(n, {&signal, &step})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 1, 4, 2}));
  expect_values(y, {0, 1, 1, 0, 0, -1, -1, 0});
  set_attr(n, "onesided", int64_t{1});  // a complex signal has no one-sided spectrum
  EXPECT_THROW(run(n, {&signal, &step}), UserError);
}

TEST(Stft, BadStepsAndWindowsAreUserErrors) {
  Tensor signal = f32({1, 8, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor zero = i64s({}, {0}), two = i64s({}, {2}), nine = i64s({}, {9}), length = i64s({}, {4});
  Tensor window = f32({3}, {1, 1, 1});
  Node n = make_node(OpKind::STFT, 4, 1, {true, true, false, true});
  EXPECT_THROW(run(n, {&signal, &zero, nullptr, &length}), UserError);
  EXPECT_THROW(run(n, {&signal, &two, nullptr, &nine}), UserError);  // longer than the signal
  Node both = make_node(OpKind::STFT, 4);
  EXPECT_THROW(run(both, {&signal, &two, &window, &length}), UserError);  // 3 values for 4
}

TEST(MelWeightMatrix, TriangularFiltersOnTheirBandEdges) {
  // dft_length 8 at 8 Hz, 0 to 3 Hz: the edges (i * step in mel, back in Hz) times 9 / 8 floor to bins
  // 0, 1, 2 for one filter (0, 0.84, 1.69, 2.53: bins 0, 0, 1, 2 for two).
  Tensor dft = i64s({}, {8}), rate = i64s({}, {8});
  Tensor lo = f32({}, {0}), hi = f32({}, {3});
  Node n = make_node(OpKind::MelWeightMatrix, 5);
  Tensor one = i64s({}, {1}), two = i64s({}, {2});
  Tensor y = run(n, {&one, &dft, &rate, &lo, &hi})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{5, 1}));
  expect_values(y, {0, 1, 0, 0, 0});
  // Filter 0 has left == centre (a 1 there, then down to bin 1); filter 1 rises 0 -> 1 and falls by bin 2.
  y = run(n, {&two, &dft, &rate, &lo, &hi})[0];
  expect_values(y, {1, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  set_attr(n, "output_datatype", std::string("f64"));
  EXPECT_EQ(run(n, {&two, &dft, &rate, &lo, &hi})[0].dtype(), DType::f64);
  Tensor past = f32({}, {100});  // past the Nyquist bin
  EXPECT_THROW(run(n, {&two, &dft, &rate, &lo, &past}), UserError);
  Tensor none = i64s({}, {0});
  EXPECT_THROW(run(n, {&none, &dft, &rate, &lo, &hi}), UserError);
}

Node roi_node(const char* mode, const char* coord, int64_t ratio, double scale) {
  Node n = make_node(OpKind::RoiAlign, 3);
  set_attr(n, "mode", std::string(mode));
  set_attr(n, "coordinate_transformation_mode", std::string(coord));
  set_attr(n, "output_height", int64_t{2});
  set_attr(n, "output_width", int64_t{2});
  set_attr(n, "sampling_ratio", ratio);
  set_attr(n, "spatial_scale", scale);
  return n;
}

TEST(RoiAlign, AvgAndMaxOnALinearImage) {
  std::vector<double> ramp;
  for (int i = 0; i < 16; ++i) ramp.push_back(i);  // x[h][w] = 4h + w
  Tensor x = f32({1, 1, 4, 4}, ramp);
  Tensor rois = f32({1, 4}, {0, 0, 4, 4}), batch = i64s({1}, {0});
  // half_pixel: the region is [-0.5, 3.5]^2, bins of 2 sampled at 0, 1 (and 2, 3).
  expect_values(run(roi_node("avg", "half_pixel", 2, 1.0), {&x, &rois, &batch})[0], {2.5, 4.5, 10.5, 12.5});
  // max: each sample on a pixel is that pixel (the other corners weigh 0).
  expect_values(run(roi_node("max", "half_pixel", 2, 1.0), {&x, &rois, &batch})[0], {5, 7, 13, 15});
  // output_half_pixel, scale 0.5: (0, 0, 8, 8) is [0, 4]^2; one sample per bin, at its centre.
  Tensor wide = f32({1, 4}, {0, 0, 8, 8});
  expect_values(run(roi_node("avg", "output_half_pixel", 1, 0.5), {&x, &wide, &batch})[0], {5, 7, 13, 15});
  // sampling_ratio 0: ceil(bin size) = 2 samples per axis, as above.
  expect_values(run(roi_node("avg", "half_pixel", 0, 1.0), {&x, &rois, &batch}, /*reference=*/true)[0],
                {2.5, 4.5, 10.5, 12.5});
}

TEST(RoiAlign, NanRegionsAndBadIndicesAndModes) {
  Tensor x = f32({1, 1, 4, 4}, std::vector<double>(16, 1.0));
  Tensor rois = f32({2, 4}, {0, 0, 4, 4, NAN, 0, 4, 4}), batch = i64s({2}, {0, 0});
  const std::vector<double> got = values(run(roi_node("avg", "half_pixel", 2, 1.0), {&x, &rois, &batch})[0]);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[size_t(i)], 1, 1e-6);
  for (int i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(got[size_t(i)]));
  Tensor bad = i64s({2}, {0, 1});
  EXPECT_THROW(run(roi_node("avg", "half_pixel", 2, 1.0), {&x, &rois, &bad}), UserError);
  EXPECT_THROW(run(roi_node("mean", "half_pixel", 2, 1.0), {&x, &rois, &batch}), UserError);
  EXPECT_THROW(run(roi_node("avg", "aligned", 2, 1.0), {&x, &rois, &batch}), UserError);
}

}  // namespace
}  // namespace kiln::linalg_test
