// LRN, GroupNormalization, MaxUnpool, SwiGLU, AffineGrid and DFT as the importer rewrites them
// (src/onnx/import_rewrites_nn.cpp, _shape.cpp, _math.cpp, _dft.cpp), beyond the conformance cases: even
// and odd LRN windows with a NaN and an inf that must stay inside their own window, groups over a 3-D
// input, unpooling with pads and an explicit shape, grids with an axis of length 1, odd-length and
// one-sided transforms; each against an fp64 loop of the ONNX definition written here, in every mode.
// Then the refusals.
#include <cmath>
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <random>

#include "kiln/session.h"
#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

using TP = ::onnx::TensorProto;

void expect_near_all(const Tensor& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.as_double(int64_t(i)), w = want[i];
    if (std::isnan(w)) EXPECT_TRUE(std::isnan(g)) << i;
    else EXPECT_NEAR(g, w, rel * (std::fabs(w) + 1e-6)) << i;
  }
}

TEST(LrnImport, MatchesTheLoopAndKeepsNanInItsWindow) {
  const int64_t N = 2, C = 7, H = 3, W = 2, plane = H * W;
  for (int64_t size : {1, 3, 4}) {
    auto m = make_model(13);
    add_input(m, "x", {N, C, H, W});
    auto* n = add_node(m, "LRN", {"x"}, {"y"}, "lrn");
    attr_int(n, "size", size);
    attr_float(n, "alpha", 0.02f), attr_float(n, "beta", 0.6f), attr_float(n, "bias", 1.5f);
    add_output(m, "y");
    std::vector<float> x = random_normal(N * C * plane, uint32_t(size));
    x[size_t(2 * plane)] = NAN;            // n 0, channel 2, first pixel
    x[size_t((C + 5) * plane + 1)] = INFINITY;  // n 1, channel 5, second pixel
    const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    std::vector<double> want(x.size());
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t p = 0; p < plane; ++p) {
          double sq = 0;
          for (int64_t i = std::max<int64_t>(0, c - lo); i <= std::min<int64_t>(C - 1, c + hi); ++i) {
            const double v = x[size_t((b * C + i) * plane + p)];
            sq += v * v;
          }
          const double v = x[size_t((b * C + c) * plane + p)];
          want[size_t((b * C + c) * plane + p)] = v / std::pow(1.5 + 0.02 / double(size) * sq, 0.6);
        }
    // The NaN's channel 2 reaches channels 2 - hi .. 2 + lo only: channel 6 of that pixel stays finite.
    ASSERT_FALSE(std::isnan(want[size_t(6 * plane)]));
    for (Mode mode : kModes) {
      SCOPED_TRACE(fmt::format("size {} mode {}", size, mode_name(mode)));
      Session s = Session::from_graph(import_model(m), mode, Options{});
      expect_near_all(s.run({{"x", Tensor::from_vector<float>(DType::f32, {N, C, H, W}, x)}}).at("y"), want, 2e-5);
    }
  }
}

TEST(GroupNormalizationImport, MatchesTheLoop) {
  const int64_t N = 2, C = 6, L = 5, G = 3, per = C / G * L;
  auto m = make_model(21);
  add_input(m, "x", {N, C, L}), add_input(m, "scale", {C}), add_input(m, "bias", {C});
  attr_int(add_node(m, "GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn"), "num_groups", G);
  add_output(m, "y");
  const std::vector<float> x = random_normal(N * C * L, 7), scale = random_normal(C, 8), bias = random_normal(C, 9);
  std::vector<double> want(x.size());
  for (int64_t b = 0; b < N; ++b)
    for (int64_t g = 0; g < G; ++g) {
      const size_t first = size_t((b * G + g) * per);
      double mean = 0, var = 0;
      for (int64_t i = 0; i < per; ++i) mean += x[first + size_t(i)];
      mean /= double(per);
      for (int64_t i = 0; i < per; ++i) var += (x[first + size_t(i)] - mean) * (x[first + size_t(i)] - mean);
      var /= double(per);
      for (int64_t i = 0; i < per; ++i) {
        const size_t c = size_t(g * (C / G) + i / L);
        want[first + size_t(i)] = (x[first + size_t(i)] - mean) / std::sqrt(var + 1e-5) * scale[c] + bias[c];
      }
    }
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Session s = Session::from_graph(import_model(m), mode, Options{});
    expect_near_all(s.run({{"x", Tensor::from_vector<float>(DType::f32, {N, C, L}, x)},
                           {"scale", Tensor::from_vector<float>(DType::f32, {C}, scale)},
                           {"bias", Tensor::from_vector<float>(DType::f32, {C}, bias)}})
                        .at("y"),
                    want, 1e-4);
  }
}

TEST(MaxUnpoolImport, ScattersIntoZerosOfTheComputedOrGivenShape) {
  // x [1, 2, 2, 2] unpooled by kernel 2, stride 2, pads 1 at the end of each axis: [1, 2, 3, 3] (the
  // indices flat over it); then with an explicit output shape [1, 2, 4, 4], which pads that with zeros at
  // the end of each axis (ONNX's reference and test data).
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int64_t> idx = {0, 2, 6, 8, 9, 10, 13, 17};  // flat over the whole output
  for (bool given : {false, true}) {
    auto m = make_model(22);
    add_input(m, "x", {1, 2, 2, 2}), add_input(m, "i", {1, 2, 2, 2}, TP::INT64);
    std::vector<std::string> ins{"x", "i"};
    if (given) add_input(m, "shape", {4}, TP::INT64), ins.push_back("shape");
    auto* n = add_node(m, "MaxUnpool", ins, {"y"}, "unpool");
    attr_ints(n, "kernel_shape", {2, 2}), attr_ints(n, "strides", {2, 2}), attr_ints(n, "pads", {0, 0, 1, 1});
    add_output(m, "y");
    const std::vector<int64_t> out = given ? std::vector<int64_t>{1, 2, 4, 4} : std::vector<int64_t>{1, 2, 3, 3};
    std::vector<double> want(size_t(out[1] * out[2] * out[3]), 0.0);
    for (size_t k = 0; k < x.size(); ++k) {  // index = (c * 3 + h) * 3 + w in the unpooled [1, 2, 3, 3]
      const int64_t c = idx[k] / 9, h = idx[k] / 3 % 3, w = idx[k] % 3;
      want[size_t((c * out[2] + h) * out[3] + w)] = x[k];
    }
    for (Mode mode : kModes) {
      SCOPED_TRACE(fmt::format("shape given {} mode {}", given, mode_name(mode)));
      Session s = Session::from_graph(import_model(m), mode, Options{});
      std::map<std::string, Tensor> in{{"x", Tensor::from_vector<float>(DType::f32, {1, 2, 2, 2}, x)},
                                       {"i", Tensor::from_vector<int64_t>(DType::i64, {1, 2, 2, 2}, idx)}};
      if (given) in.emplace("shape", Tensor::from_vector<int64_t>(DType::i64, {4}, out));
      const Tensor y = s.run(in).at("y");
      EXPECT_EQ(y.shape(), out);
      expect_near_all(y, want, 0.0);
    }
  }
}

TEST(SwiGluImport, IsSwishOfATimesB) {
  auto m = make_model(28);
  add_input(m, "a", {3, 4}), add_input(m, "b", {3, 4});
  attr_float(add_node(m, "SwiGLU", {"a", "b"}, {"y"}, "swiglu"), "alpha", 0.5f);
  add_output(m, "y");
  const std::vector<float> a = random_normal(12, 3), b = random_normal(12, 4);
  std::vector<double> want(12);
  for (size_t i = 0; i < 12; ++i) want[i] = a[i] / (1 + std::exp(-0.5 * a[i])) * b[i];
  for (Mode mode : kModes) {
    Session s = Session::from_graph(import_model(m), mode, Options{});
    expect_near_all(s.run({{"a", Tensor::from_vector<float>(DType::f32, {3, 4}, a)},
                           {"b", Tensor::from_vector<float>(DType::f32, {3, 4}, b)}})
                        .at("y"),
                    want, 1e-5);
  }
}

// 2-D, align_corners 0 and 1, with W = 1 (align_corners: linspace's -1, not 0 / 0).
TEST(AffineGridImport, MatchesTheLoopWithAnAxisOfLengthOne) {
  const int64_t N = 2, H = 3, W = 1;
  const std::vector<float> theta = random_normal(N * 6, 11);
  for (int64_t align : {0, 1}) {
    auto m = make_model(20);
    add_input(m, "theta", {N, 2, 3}), add_input(m, "size", {4}, TP::INT64);
    attr_int(add_node(m, "AffineGrid", {"theta", "size"}, {"grid"}, "ag"), "align_corners", align);
    add_output(m, "grid");
    auto coord = [&](int64_t i, int64_t len) {
      if (align) return len == 1 ? -1.0 : -1.0 + 2.0 * double(i) / double(len - 1);
      return -1.0 + (2.0 * double(i) + 1.0) / double(len);
    };
    std::vector<double> want;
    for (int64_t b = 0; b < N; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          for (int64_t r = 0; r < 2; ++r) {
            const float* t = &theta[size_t(b * 6 + r * 3)];
            want.push_back(t[0] * coord(w, W) + t[1] * coord(h, H) + t[2]);
          }
    for (Mode mode : kModes) {
      SCOPED_TRACE(fmt::format("align_corners {} mode {}", align, mode_name(mode)));
      Session s = Session::from_graph(import_model(m), mode, Options{});
      const Tensor grid = s.run({{"theta", Tensor::from_vector<float>(DType::f32, {N, 2, 3}, theta)},
                                 {"size", Tensor::from_vector<int64_t>(DType::i64, {4}, {N, 5, H, W})}})
                              .at("grid");
      EXPECT_EQ(grid.shape(), (std::vector<int64_t>{N, H, W, 2}));
      expect_near_all(grid, want, 1e-5);
    }
  }
}

// x [2, L, 3, c] along axis 1 (opset 17's attribute): forward real one-sided at odd L, forward and
// inverse complex, and the inverse one-sided (a half spectrum of L = 4 to a real signal of 6).
TEST(DftImport, MatchesTheSumsOfTheDefinition) {
  struct C {
    int64_t L, c;
    bool inverse, onesided;
  };
  for (const C& k : {C{5, 1, false, true}, C{6, 2, false, false}, C{5, 2, true, false}, C{4, 2, true, true}}) {
    auto m = make_model(17);
    add_input(m, "x", {2, k.L, 3, k.c});
    auto* node = add_node(m, "DFT", {"x"}, {"y"}, "dft");
    attr_int(node, "axis", 1), attr_int(node, "inverse", k.inverse), attr_int(node, "onesided", k.onesided);
    add_output(m, "y");
    const std::vector<float> x = random_normal(2 * k.L * 3 * k.c, uint32_t(k.L * 10 + k.c));
    const int64_t p = k.inverse && k.onesided ? 2 * (k.L - 1) : k.L;
    const int64_t K = k.inverse && k.onesided ? p : k.onesided ? k.L / 2 + 1 : k.L, o = k.inverse && k.onesided ? 1 : 2;
    auto at = [&](int64_t b, int64_t t, int64_t j, int64_t comp) {
      return comp < k.c ? double(x[size_t(((b * k.L + t) * 3 + j) * k.c + comp)]) : 0.0;
    };
    std::vector<double> want;
    const double sign = k.inverse ? 1.0 : -1.0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t f = 0; f < K; ++f)
        for (int64_t j = 0; j < 3; ++j) {
          double re = 0, im = 0;
          if (o == 1) {  // the full spectrum: X[p - t] = conj(X[t])
            for (int64_t t = 0; t < p; ++t) {
              const bool mirrored = t >= k.L;
              const int64_t src = mirrored ? p - t : t;
              const double xr = at(b, src, j, 0), xi = mirrored ? -at(b, src, j, 1) : at(b, src, j, 1);
              const double th = 2 * M_PI * double(t * f) / double(p);
              re += xr * std::cos(th) - xi * std::sin(th);
            }
            want.push_back(re / double(p));
            continue;
          }
          for (int64_t t = 0; t < k.L; ++t) {
            const double th = sign * 2 * M_PI * double(t * f) / double(p);
            re += at(b, t, j, 0) * std::cos(th) - at(b, t, j, 1) * std::sin(th);
            im += at(b, t, j, 0) * std::sin(th) + at(b, t, j, 1) * std::cos(th);
          }
          const double s = k.inverse ? 1.0 / double(p) : 1.0;
          want.push_back(re * s), want.push_back(im * s);
        }
    for (Mode mode : kModes) {
      SCOPED_TRACE(fmt::format("L {} c {} inverse {} onesided {} mode {}", k.L, k.c, k.inverse, k.onesided, mode_name(mode)));
      Session s = Session::from_graph(import_model(m), mode, Options{});
      const Tensor y = s.run({{"x", Tensor::from_vector<float>(DType::f32, {2, k.L, 3, k.c}, x)}}).at("y");
      EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, K, 3, o}));
      ASSERT_EQ(y.numel(), int64_t(want.size()));
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y.as_double(int64_t(i)), want[i], 1e-4) << i;
    }
  }
}

TEST(NormUnpoolImport, Refusals) {
  auto lrn = make_model(13);
  add_input(lrn, "x", {1, 3, 2, 2});
  add_node(lrn, "LRN", {"x"}, {"y"}, "lrn");
  add_output(lrn, "y");
  expect_user_error(lrn, "node 'lrn' (LRN-13): attribute 'size' must be at least 1, is 0");

  auto gn = make_model(21);
  add_input(gn, "x", {1, 6, 2}), add_input(gn, "scale", {6}), add_input(gn, "bias", {6});
  attr_int(add_node(gn, "GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn"), "num_groups", 4);
  add_output(gn, "y");
  expect_user_error(gn, "6 channels do not divide into 4 groups");

  auto unpool = make_model(22);
  add_input(unpool, "x", {1, 1, 2, 2}), add_input(unpool, "i", {1, 1, 2, 2}, TP::INT64);
  attr_ints(add_node(unpool, "MaxUnpool", {"x", "i"}, {"y"}, "unpool"), "kernel_shape", {2});
  add_output(unpool, "y");
  expect_user_error(unpool, "kernel_shape, strides and pads must give 2 spatial axes");

  auto grid = make_model(20);
  add_input(grid, "theta", {2, 6}), add_input(grid, "size", {4}, TP::INT64);
  add_node(grid, "AffineGrid", {"theta", "size"}, {"g"}, "ag");
  add_output(grid, "g");
  expect_user_error(grid, "theta must be declared of rank 3");  // an UnsupportedError, a kind of UserError

  auto dft = make_model(20);
  add_input(dft, "x", {1, 8, 1}), add_input(dft, "axis", {}, TP::INT64);
  add_node(dft, "DFT", {"x", "", "axis"}, {"y"}, "dft");
  add_output(dft, "y");
  expect_user_error(dft, "the axis input must be a constant");
}

}  // namespace
}  // namespace kiln::testing
