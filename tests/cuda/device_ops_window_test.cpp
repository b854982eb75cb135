// DeviceOps, windows: the pooling and im2col geometry matches the CPU ops' (host only); MaxPool,
// GlobalAveragePool and im2col against host loops with the CPU kernels' semantics (GPU), in f32 and f64
// and, on the same cases, in bf16 and f16 (held as their bits; the references read them as doubles).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cuda/device_ops.h"
#include "device_ops_fixture.h"
#include "kiln/errors.h"
#include "kiln/tensor.h"
#include "ops/linalg/linalg_ops.h"

namespace kiln::backend::cuda::testing {
namespace {

// ---- pooling geometry, host only

// One spatial axis of a window, as the CPU kernels' geometry (linalg_ops::window_axis) takes it.
linalg_ops::WindowAttrs window_1d(int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                                  int64_t pad_end, bool ceil_mode) {
  linalg_ops::WindowAttrs w;
  w.spatial = 1;
  w.kernel = {kernel};
  w.strides = {stride};
  w.dilations = {dilation};
  w.pads = {pad_begin, pad_end};
  w.ceil_mode = ceil_mode;
  return w;
}

TEST(DeviceOpsGeometry, PoolOutputSizeIsTheCpuOpsWindowAxis) {
  Node node;
  node.op = OpKind::MaxPool;
  node.name = "pool";
  for (int64_t in : {1, 2, 3, 5, 7, 31, 112})
    for (int64_t kernel : {1, 2, 3})
      for (int64_t stride : {1, 2, 3})
        for (int64_t dilation : {1, 2})
          for (int64_t pb : {0, 1, 2})
            for (int64_t pe : {0, 1})
              for (bool ceil_mode : {false, true}) {
                const linalg_ops::WindowAttrs w = window_1d(kernel, stride, dilation, pb, pe, ceil_mode);
                if (in + pb + pe < (kernel - 1) * dilation + 1) {
                  EXPECT_THROW(pool_output_size(in, kernel, stride, dilation, pb, pe, ceil_mode), UserError);
                  continue;
                }
                EXPECT_EQ(pool_output_size(in, kernel, stride, dilation, pb, pe, ceil_mode),
                          linalg_ops::window_axis(node, w, 0, in).out)
                    << in << " " << kernel << " " << stride << " " << dilation << " " << pb << " " << pe << " "
                    << ceil_mode;
              }
}

TEST(DeviceOpsGeometry, MaxPool2dShapeTakesOnnxPadOrder) {
  const int64_t kernel[2] = {3, 2}, strides[2] = {2, 1}, pads[4] = {1, 0, 0, 1}, dilations[2] = {1, 1};
  Pool2dShape g = make_max_pool2d_shape(2, 3, 8, 5, kernel, strides, pads, dilations, true, DType::f32);
  EXPECT_EQ(g.planes, 6);
  EXPECT_EQ(g.pad_top, 1);
  EXPECT_EQ(g.pad_left, 0);
  EXPECT_EQ(g.out_h, pool_output_size(8, 3, 2, 1, 1, 0, true));
  EXPECT_EQ(g.out_w, pool_output_size(5, 2, 1, 1, 0, 1, true));
}

TEST(DeviceOpsGeometry, Im2colShapeHasConvOutputSizes) {
  struct Case {
    int64_t h, w, kernel[2], strides[2], pads[4], dilations[2], out_h, out_w;
  };
  const std::vector<Case> cases = {
      {224, 224, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 112, 112},    // ResNet's stem
      {56, 56, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 56, 56},        // 3x3 same
      {7, 9, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 7, 9},            // odd, non-square
      {56, 56, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 28, 28},        // 1x1 downsample
      {57, 57, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 29, 29},        // odd: the last pixel is taken
      {56, 56, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 28, 28},        // strided 3x3
      {224, 224, {16, 16}, {16, 16}, {0, 0, 0, 0}, {1, 1}, 14, 14},  // ViT patchify
      {10, 10, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 10, 10},        // dilated, same
      {8, 5, {3, 2}, {2, 1}, {1, 0, 0, 1}, {1, 1}, 4, 5},            // ONNX pad order: top, left, bottom, right
      {3, 3, {5, 5}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, 1},            // the kernel exactly covers the padded input
      {7, 7, {3, 3}, {3, 3}, {0, 0, 0, 0}, {1, 1}, 2, 2},            // no ceil_mode: floor (ceil: 3)
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.h << "x" << c.w << " kernel " << c.kernel[0] << "x" << c.kernel[1]);
    Im2colShape g = make_im2col_shape(2, 3, c.h, c.w, c.kernel, c.strides, c.pads, c.dilations, DType::f32);
    EXPECT_EQ(g.out_h, c.out_h);
    EXPECT_EQ(g.out_w, c.out_w);
    EXPECT_EQ(g.n, 2);
    EXPECT_EQ(g.c, 3);
    EXPECT_EQ(g.in_h, c.h);
    EXPECT_EQ(g.in_w, c.w);
    EXPECT_EQ(g.kernel_h, c.kernel[0]);
    EXPECT_EQ(g.kernel_w, c.kernel[1]);
    EXPECT_EQ(g.stride_h, c.strides[0]);
    EXPECT_EQ(g.stride_w, c.strides[1]);
    EXPECT_EQ(g.pad_top, c.pads[0]);
    EXPECT_EQ(g.pad_left, c.pads[1]);
    EXPECT_EQ(g.dilation_h, c.dilations[0]);
    EXPECT_EQ(g.dilation_w, c.dilations[1]);
    EXPECT_EQ(g.dtype, DType::f32);
    EXPECT_EQ(g.rows(), 3 * c.kernel[0] * c.kernel[1]);
    EXPECT_EQ(g.pixels(), c.out_h * c.out_w);
  }
  const int64_t k7[2] = {7, 7}, k3[2] = {3, 3}, s1[2] = {1, 1}, d1[2] = {1, 1}, d2[2] = {2, 2};
  const int64_t p0[4] = {0, 0, 0, 0}, p1[4] = {1, 1, 1, 1}, p_bottom[4] = {0, 0, 1, 0};
  EXPECT_THROW(make_im2col_shape(1, 3, 5, 5, k7, s1, p0, d1, DType::f32), UserError);  // 7 > 5
  EXPECT_THROW(make_im2col_shape(1, 3, 4, 4, k7, s1, p1, d1, DType::f32), UserError);  // 7 > 4 + 2
  EXPECT_THROW(make_im2col_shape(1, 3, 4, 4, k3, s1, p0, d2, DType::f32), UserError);  // extent 5 > 4
  EXPECT_THROW(make_im2col_shape(1, 3, 6, 4, k3, s1, p0, d2, DType::f32), UserError);  // the width only
  EXPECT_EQ(make_im2col_shape(1, 3, 4, 5, k3, s1, p_bottom, d2, DType::f32).out_h, 1);  // 4 + 1 covers 5
  try {
    make_im2col_shape(1, 3, 5, 5, k7, s1, p0, d1, DType::f32);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("Conv kernel extent 7 is larger than the padded input 5"), std::string::npos)
        << e.what();
  }
  // Every axis as the CPU ops' window rule without ceil_mode.
  Node node;
  node.op = OpKind::Conv;
  node.name = "conv";
  for (int64_t in : {1, 2, 5, 7, 31, 224})
    for (int64_t k : {1, 2, 3, 7})
      for (int64_t stride : {1, 2, 3})
        for (int64_t dilation : {1, 2})
          for (int64_t pb : {0, 1, 3})
            for (int64_t pe : {0, 2}) {
              const int64_t kernel[2] = {k, 1}, strides[2] = {stride, 1}, pads[4] = {pb, 0, pe, 0},
                            dilations[2] = {dilation, 1};
              if (in + pb + pe < (k - 1) * dilation + 1) continue;
              const linalg_ops::WindowAttrs w = window_1d(k, stride, dilation, pb, pe, false);
              EXPECT_EQ(make_im2col_shape(1, 1, in, 1, kernel, strides, pads, dilations, DType::f32).out_h,
                        linalg_ops::window_axis(node, w, 0, in).out)
                  << in << " " << k << " " << stride << " " << dilation << " " << pb << " " << pe;
            }
}

// ---- pooling: host loops with the CPU kernels' semantics

// Compares value(x) as doubles (exact for all four dtypes) and keeps the winning input itself, so the
// half types' result is checked bit for bit; a window with no tap inside gives `lowest` (-inf).
template <class T, class Value>
std::vector<T> max_pool_reference(const std::vector<T>& x, const Pool2dShape& g, T lowest, Value value) {
  std::vector<T> y;
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        T best = lowest;
        double acc = value(best);
        for (int64_t kh = 0; kh < g.kernel_h; ++kh)
          for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
            int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
            int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
            if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;
            const T v = x[static_cast<size_t>((p * g.in_h + ih) * g.in_w + iw)];
            const double f = value(v);
            if (f > acc || f != f) {  // the CPU kernel's take rule: a NaN is taken, and no number replaces it
              acc = f;
              best = v;
            }
          }
        y.push_back(best);
      }
  return y;
}

template <class T>
std::vector<T> max_pool_reference(const std::vector<T>& x, const Pool2dShape& g) {
  return max_pool_reference(x, g, -std::numeric_limits<T>::infinity(), [](T v) { return static_cast<double>(v); });
}

template <class T>
Bytes as_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class T>
std::vector<T> random_values(size_t n, std::mt19937& random, double special_rate) {
  std::uniform_real_distribution<double> uniform(-100, 100), coin(0, 1);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(-0.0)};
  std::vector<T> v(n);
  for (T& e : v) e = coin(random) < special_rate ? specials[random() % 4] : static_cast<T>(uniform(random));
  return v;
}

struct PoolCase {
  int64_t n, c, h, w;
  int64_t kernel[2], strides[2], pads[4], dilations[2];
  bool ceil_mode;
};

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases = {
      {1, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {1, 3, 31, 31, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},  // ResNet's stem pool
      {2, 3, 7, 5, {2, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, true},
      {1, 2, 8, 9, {3, 2}, {3, 2}, {0, 0, 2, 1}, {2, 1}, true},     // dilation, ceil_mode, end pads
      {3, 1, 5, 5, {2, 2}, {1, 1}, {2, 2, 0, 0}, {1, 1}, false},    // first windows only on padding: -inf
      {1, 1, 1000, 3, {5, 3}, {1, 1}, {2, 1, 2, 1}, {1, 1}, false},
      {0, 3, 7, 7, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},    // empty
  };
  return cases;
}

::testing::Message describe(const PoolCase& c) {
  return ::testing::Message() << "[" << c.n << ", " << c.c << ", " << c.h << ", " << c.w << "] kernel "
                              << c.kernel[0] << "x" << c.kernel[1] << (c.ceil_mode ? " ceil" : "");
}

TEST_F(DeviceOpsTest, MaxPool2dMatchesTheCpuSemanticsWithNanInfPadsAndCeilMode) {
  for (const PoolCase& c : pool_cases())
    for (DType dtype : {DType::f32, DType::f64})
      for (double special_rate : {0.0, 0.05}) {
        SCOPED_TRACE(describe(c) << " " << (dtype == DType::f32 ? "f32" : "f64") << " specials " << special_rate);
        Pool2dShape g = make_max_pool2d_shape(c.n, c.c, c.h, c.w, c.kernel, c.strides, c.pads, c.dilations,
                                              c.ceil_mode, dtype);
        const size_t n_in = static_cast<size_t>(c.n * c.c * c.h * c.w);
        Bytes x, expected;
        if (dtype == DType::f32) {
          std::vector<float> v = random_values<float>(n_in, random_, special_rate);
          x = as_bytes(v), expected = as_bytes(max_pool_reference(v, g));
        } else {
          std::vector<double> v = random_values<double>(n_in, random_, special_rate);
          x = as_bytes(v), expected = as_bytes(max_pool_reference(v, g));
        }
        Buffer in = upload(x), out = output(expected.size());
        ops().max_pool2d(stream(), in.ptr(), out.ptr(), g);
        EXPECT_EQ(download(out), expected);  // max is exact and NaNs are moved, not made: bitwise
      }
}

template <class T>
void expect_means(const std::vector<T>& got, const std::vector<T>& x, int64_t spatial) {
  for (size_t p = 0; p < got.size(); ++p) {
    double sum = 0, magnitude = 0;
    for (int64_t j = 0; j < spatial; ++j) {
      sum += static_cast<double>(x[p * static_cast<size_t>(spatial) + static_cast<size_t>(j)]);
      magnitude += std::abs(static_cast<double>(x[p * static_cast<size_t>(spatial) + static_cast<size_t>(j)]));
    }
    if (spatial == 0 || std::isnan(sum)) {
      EXPECT_TRUE(std::isnan(got[p])) << "plane " << p << ": " << got[p];
      continue;
    }
    const double mean = sum / static_cast<double>(spatial);
    if (std::isinf(mean)) {
      EXPECT_EQ(got[p], static_cast<T>(mean)) << "plane " << p;
      continue;
    }
    // The double sums differ by order only (n ulps of the magnitude); then one rounding to T.
    const double tolerance = static_cast<double>(spatial) * std::ldexp(magnitude / static_cast<double>(spatial), -52) +
                             std::abs(mean) * std::numeric_limits<T>::epsilon();
    EXPECT_LE(std::abs(static_cast<double>(got[p]) - mean), tolerance) << "plane " << p;
  }
}

struct GapCase {
  int64_t planes, spatial;
  double special_rate;
};

// Warp-per-plane below 2048, block-per-plane from there.
const std::vector<GapCase>& gap_cases() {
  static const std::vector<GapCase> cases = {{1, 1, 0},     {3, 49, 0},    {31, 1000, 0},    {1000, 3, 0}, {2, 4096, 0},
                                             {5, 50000, 0}, {64, 49, 0.1}, {3, 3000, 0.001}, {4, 0, 0},    {0, 7, 0}};
  return cases;
}

TEST_F(DeviceOpsTest, GlobalAveragePoolMatchesTheFp64Mean) {
  for (const GapCase& c : gap_cases())
    for (DType dtype : {DType::f32, DType::f64}) {
      SCOPED_TRACE(::testing::Message() << c.planes << " planes of " << c.spatial << ", "
                                        << (dtype == DType::f32 ? "f32" : "f64") << ", specials " << c.special_rate);
      const size_t n = static_cast<size_t>(c.planes * c.spatial);
      auto run = [&](auto tag) {
        using T = decltype(tag);
        std::vector<T> x = random_values<T>(n, random_, c.special_rate);
        Buffer in = upload(as_bytes(x)), out = output(static_cast<size_t>(c.planes) * sizeof(T));
        ops().global_average_pool(stream(), in.ptr(), out.ptr(), c.planes, c.spatial, dtype);
        Bytes got = download(out);
        std::vector<T> y(static_cast<size_t>(c.planes));
        if (!y.empty()) std::memcpy(y.data(), got.data(), got.size());
        expect_means(y, x, c.spatial);
      };
      if (dtype == DType::f32) run(float{});
      else run(double{});
    }
}

// ---- im2col, against the definition as a host loop

template <class T>
std::vector<T> im2col_reference(const std::vector<T>& x, const Im2colShape& g) {
  std::vector<T> cols;
  for (int64_t b = 0; b < g.n; ++b) {
    for (int64_t ci = 0; ci < g.c; ++ci)
      for (int64_t ki = 0; ki < g.kernel_h; ++ki)
        for (int64_t kj = 0; kj < g.kernel_w; ++kj) {  // row (ci * kernel_h + ki) * kernel_w + kj
          for (int64_t oh = 0; oh < g.out_h; ++oh)
            for (int64_t ow = 0; ow < g.out_w; ++ow) {
              const int64_t ih = oh * g.stride_h - g.pad_top + ki * g.dilation_h;
              const int64_t iw = ow * g.stride_w - g.pad_left + kj * g.dilation_w;
              const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
              cols.push_back(inside ? x[static_cast<size_t>(((b * g.c + ci) * g.in_h + ih) * g.in_w + iw)] : T(0));
            }
          cols.insert(cols.end(), static_cast<size_t>(g.column_pixels() - g.pixels()), T(0));  // padding pixels
        }
    cols.insert(cols.end(), static_cast<size_t>((g.column_rows() - g.rows()) * g.column_pixels()), T(0));
  }
  return cols;
}

// The shape with its columns padded to multiples of 8 rows and pixels, plus `extra` (the conv's
// alignment for cuBLASLt), or as it is.
Im2colShape padded(Im2colShape g, bool pad, int64_t extra = 0) {
  if (!pad) return g;
  g.rows_padded = (g.rows() + 7) / 8 * 8 + extra;
  g.pixels_padded = (g.pixels() + 7) / 8 * 8 + extra;
  return g;
}

struct Im2colCase {
  int64_t n, c, h, w;
  int64_t kernel[2], strides[2], pads[4], dilations[2];
};

const std::vector<Im2colCase>& im2col_cases() {
  static const std::vector<Im2colCase> cases = {
      {1, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {1, 1, 5, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},         // same, odd sizes
      {2, 3, 9, 11, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},        // strided
      {2, 3, 13, 9, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}},        // a small ResNet stem
      {1, 3, 224, 224, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}},     // the ResNet stem: 1.8M elements
      {2, 3, 10, 9, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}},        // dilation 2
      {1, 3, 11, 12, {3, 2}, {1, 2}, {2, 0, 0, 1}, {2, 1}},       // mixed per axis, uneven pads
      {2, 3, 7, 7, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},         // 1x1: a copy
      {2, 1, 9, 7, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}},         // 1x1 stride 2
      {1, 3, 32, 48, {16, 16}, {16, 16}, {0, 0, 0, 0}, {1, 1}},   // ViT patchify
      {1, 1, 3, 3, {5, 5}, {1, 1}, {1, 1, 1, 1}, {1, 1}},         // one pixel, mostly padding
      {1, 2, 2, 2, {3, 3}, {1, 1}, {3, 3, 3, 3}, {1, 1}},         // pixels seeing only padding
      {0, 3, 7, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},         // empty batch
      {2, 0, 7, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},         // no channels
  };
  return cases;
}

::testing::Message describe(const Im2colCase& c) {
  return ::testing::Message() << "[" << c.n << ", " << c.c << ", " << c.h << ", " << c.w << "] kernel "
                              << c.kernel[0] << "x" << c.kernel[1] << " stride " << c.strides[0] << "x"
                              << c.strides[1] << " dilation " << c.dilations[0] << "x" << c.dilations[1];
}

TEST_F(DeviceOpsTest, Im2colMatchesTheHostLoop) {
  for (const Im2colCase& c : im2col_cases())
    for (DType dtype : {DType::f32, DType::f64})
    for (int pad : {0, 1, 2}) {  // unpadded; padded to eights; eights and 8 more (a whole padding row)
      SCOPED_TRACE(describe(c) << " " << (dtype == DType::f32 ? "f32" : "f64") << " padding " << pad);
      Im2colShape g = padded(make_im2col_shape(c.n, c.c, c.h, c.w, c.kernel, c.strides, c.pads, c.dilations, dtype),
                             pad > 0, pad == 2 ? 8 : 0);
      const size_t n_in = static_cast<size_t>(c.n * c.c * c.h * c.w);
      Bytes x, expected;
      if (dtype == DType::f32) {
        std::vector<float> v = random_values<float>(n_in, random_, 0.05);  // NaNs and -0 are copied as bits
        x = as_bytes(v), expected = as_bytes(im2col_reference(v, g));
      } else {
        std::vector<double> v = random_values<double>(n_in, random_, 0.05);
        x = as_bytes(v), expected = as_bytes(im2col_reference(v, g));
      }
      ASSERT_EQ(expected.size(),
                static_cast<size_t>(g.n * g.column_rows() * g.column_pixels()) * (dtype == DType::f32 ? 4 : 8));
      Buffer in = upload(x), out = output(expected.size());
      ops().im2col(stream(), in.ptr(), out.ptr(), g);
      EXPECT_EQ(download(out), expected);  // bitwise, padding +0
    }
}

// ---- bf16 and f16, held as their bits: the same cases, against references that read the inputs as
// doubles (exactly).

const char* half_name(DType t) { return t == DType::bf16 ? "bf16" : "f16"; }

double half_value(uint16_t bits, DType t) { return t == DType::bf16 ? bf16_to_float(bits) : half_to_float(bits); }

// Finite d rounded once to t, to nearest even: through f32 rounded to odd (a sticky last bit), after
// which float_to_bf16 / float_to_half round exactly as one rounding would (f32 has >= 2 more bits).
uint16_t round_to_half(double d, DType t) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d) {
    if (std::abs(static_cast<double>(f)) > std::abs(d)) f = std::nextafter(f, 0.0f);  // toward zero
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u |= 1;
    std::memcpy(&f, &u, 4);
  }
  return t == DType::bf16 ? float_to_bf16(f) : float_to_half(f);
}

// The spacing of t's values at |m| (subnormals included).
double half_ulp(double m, DType t) {
  const int min_exp = t == DType::bf16 ? -126 : -14, mantissa = t == DType::bf16 ? 7 : 10;
  return std::ldexp(1.0, (m == 0 ? min_exp : std::max(std::ilogb(m), min_exp)) - mantissa);
}

// Values in (-100, 100) rounded to t; `special_rate` of them special (a quiet NaN, a negative signalling
// NaN with a payload, +-Inf, -0, the smallest subnormal) and `raw_rate` any 16 bits (NaN payloads,
// subnormals, the largest finite values).
std::vector<uint16_t> random_halves(size_t n, DType t, std::mt19937& random, double special_rate,
                                    double raw_rate = 0) {
  std::uniform_real_distribution<float> uniform(-100, 100);
  std::uniform_real_distribution<double> coin(0, 1);
  static constexpr uint16_t kBf16[] = {0x7fc0, 0xff81, 0x7f80, 0xff80, 0x8000, 0x0001};
  static constexpr uint16_t kF16[] = {0x7e00, 0xfc01, 0x7c00, 0xfc00, 0x8000, 0x0001};
  const uint16_t* specials = t == DType::bf16 ? kBf16 : kF16;
  std::vector<uint16_t> v(n);
  for (uint16_t& e : v) {
    const double draw = coin(random);
    if (draw < special_rate) e = specials[random() % 6];
    else if (draw < special_rate + raw_rate) e = static_cast<uint16_t>(random());
    else e = t == DType::bf16 ? float_to_bf16(uniform(random)) : float_to_half(uniform(random));
  }
  return v;
}

TEST_F(DeviceOpsTest, MaxPool2dInBf16AndF16IsBitExactWithNanInfPadsAndCeilMode) {
  for (const PoolCase& c : pool_cases())
    for (DType dtype : {DType::bf16, DType::f16})
      for (double special_rate : {0.0, 0.05}) {
        SCOPED_TRACE(describe(c) << " " << half_name(dtype) << " specials " << special_rate);
        Pool2dShape g = make_max_pool2d_shape(c.n, c.c, c.h, c.w, c.kernel, c.strides, c.pads, c.dilations,
                                              c.ceil_mode, dtype);
        const std::vector<uint16_t> x =
            random_halves(static_cast<size_t>(c.n * c.c * c.h * c.w), dtype, random_, special_rate, special_rate);
        const uint16_t neg_inf = dtype == DType::bf16 ? 0xff80 : 0xfc00;
        const Bytes expected = as_bytes(max_pool_reference(x, g, neg_inf, [dtype](uint16_t v) {
          return half_value(v, dtype);
        }));
        Buffer in = upload(as_bytes(x)), out = output(expected.size());
        ops().max_pool2d(stream(), in.ptr(), out.ptr(), g);
        EXPECT_EQ(download(out), expected);  // the winning input itself, NaN payloads included
      }
}

// The device sums in fp32 with at most ceil(spatial / 32) adds in a lane and then 10 tree levels (warp
// and block kernels alike), so its sum is within k * 2^-24 * sum|x| of the exact one (1% margin for
// the higher-order terms and the double division). Rounding is monotonic, so the result lies between
// the roundings of that interval's ends: the correctly rounded mean, or at a near tie its neighbour,
// within half an ulp (plus that error) of the mean.
void expect_half_means(const std::vector<uint16_t>& got, const std::vector<uint16_t>& x, int64_t spatial, DType t) {
  for (size_t p = 0; p < got.size(); ++p) {
    double sum = 0, magnitude = 0;
    for (int64_t j = 0; j < spatial; ++j) {
      const double v = half_value(x[p * static_cast<size_t>(spatial) + static_cast<size_t>(j)], t);
      sum += v;
      magnitude += std::abs(v);
    }
    const double value = half_value(got[p], t);
    if (spatial == 0 || std::isnan(sum)) {
      EXPECT_TRUE(std::isnan(value)) << "plane " << p << ": " << value;
      continue;
    }
    const double mean = sum / static_cast<double>(spatial);
    if (std::isinf(mean)) {
      EXPECT_EQ(value, mean) << "plane " << p;
      continue;
    }
    const double k = static_cast<double>((spatial + 31) / 32 + 10);
    const double error = 1.01 * (k * std::ldexp(magnitude, -24) / static_cast<double>(spatial) +
                                 std::ldexp(std::abs(mean), -52));
    const double lo = half_value(round_to_half(mean - error, t), t), hi = half_value(round_to_half(mean + error, t), t);
    EXPECT_TRUE(value >= lo && value <= hi) << "plane " << p << ": " << value << " for the mean " << mean << " +- "
                                            << error << " (" << lo << " .. " << hi << ")";
    EXPECT_LE(std::abs(value - mean), 0.5 * half_ulp(mean, t) + error) << "plane " << p;
  }
}

TEST_F(DeviceOpsTest, GlobalAveragePoolInBf16AndF16IsTheFp32SumsMeanRoundedOnce) {
  for (const GapCase& c : gap_cases())
    for (DType dtype : {DType::bf16, DType::f16})
      for (bool positive : {false, true}) {  // |x|: a mean that does not cancel, so the bound is tight
        SCOPED_TRACE(::testing::Message() << c.planes << " planes of " << c.spatial << ", " << half_name(dtype)
                                          << ", specials " << c.special_rate << (positive ? ", positive" : ""));
        std::vector<uint16_t> x =
            random_halves(static_cast<size_t>(c.planes * c.spatial), dtype, random_, c.special_rate);
        if (positive)
          for (uint16_t& e : x) e &= 0x7fff;
        Buffer in = upload(as_bytes(x)), out = output(static_cast<size_t>(c.planes) * 2);
        ops().global_average_pool(stream(), in.ptr(), out.ptr(), c.planes, c.spatial, dtype);
        Bytes got = download(out);
        std::vector<uint16_t> y(static_cast<size_t>(c.planes));
        if (!y.empty()) std::memcpy(y.data(), got.data(), got.size());
        expect_half_means(y, x, c.spatial, dtype);
      }
}

TEST_F(DeviceOpsTest, GlobalAveragePoolInBf16AndF16RoundsTiesToEvenAndSumsWithoutOverflow) {
  struct Case {
    DType dtype;
    int64_t spatial;
    std::vector<uint16_t> pattern;  // repeated over the plane
    uint16_t mean;
    const char* what;
  };
  const std::vector<Case> cases = {
      {DType::f16, 100, {0x7bff}, 0x7bff, "65504 x 100 (an f16 sum overflows), warp"},
      {DType::f16, 5000, {0x7bff}, 0x7bff, "65504 x 5000, block"},
      {DType::bf16, 2, {0x3f81, 0x3f80}, 0x3f80, "1 + 2^-8, a tie: to the even 1"},
      {DType::bf16, 2, {0x3f81, 0x3f82}, 0x3f82, "1 + 3 * 2^-8, a tie: to the even 1 + 2^-6"},
      {DType::f16, 2, {0x3c01, 0x3c00}, 0x3c00, "1 + 2^-11, a tie: to the even 1"},
      {DType::f16, 2, {0x3c01, 0x3c02}, 0x3c02, "1 + 3 * 2^-11, a tie: to the even 1 + 2^-9"},
      {DType::bf16, 3, {0x3f81, 0x3f81, 0x3f80}, 0x3f81, "1 + 2^-7 * 2/3: up"},
      {DType::f16, 2, {0x0001, 0x0000}, 0x0000, "half the smallest subnormal: to the even 0"},
      {DType::f16, 2, {0x0001, 0x0002}, 0x0002, "1.5 x the smallest subnormal: to the even 2"},
      {DType::bf16, 2, {0x0001, 0x0000}, 0x0000, "half the smallest bf16 subnormal: to the even 0"},
      {DType::bf16, 4, {0x7f80, 0x3f80}, 0x7f80, "+Inf"},
      {DType::f16, 4, {0x7c00, 0xfc00}, 0x7e00, "+Inf - Inf: NaN"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << half_name(c.dtype) << ": " << c.what);
    const int64_t planes = 3;
    std::vector<uint16_t> x(static_cast<size_t>(planes * c.spatial));
    for (size_t i = 0; i < x.size(); ++i) x[i] = c.pattern[i % static_cast<size_t>(c.spatial) % c.pattern.size()];
    Buffer in = upload(as_bytes(x)), out = output(static_cast<size_t>(planes) * 2);
    ops().global_average_pool(stream(), in.ptr(), out.ptr(), planes, c.spatial, c.dtype);
    Bytes got = download(out);
    for (int64_t p = 0; p < planes; ++p) {
      uint16_t bits;
      std::memcpy(&bits, got.data() + 2 * p, 2);
      if (std::isnan(half_value(c.mean, c.dtype))) EXPECT_TRUE(std::isnan(half_value(bits, c.dtype))) << bits;
      else EXPECT_EQ(bits, c.mean) << "plane " << p;
    }
  }
}

TEST_F(DeviceOpsTest, Im2colInBf16AndF16CopiesBits) {
  for (const Im2colCase& c : im2col_cases())
    for (DType dtype : {DType::bf16, DType::f16})
    for (bool pad : {false, true}) {
      SCOPED_TRACE(describe(c) << " " << half_name(dtype) << (pad ? " padded" : ""));
      Im2colShape g =
          padded(make_im2col_shape(c.n, c.c, c.h, c.w, c.kernel, c.strides, c.pads, c.dilations, dtype), pad);
      const std::vector<uint16_t> x =
          random_halves(static_cast<size_t>(c.n * c.c * c.h * c.w), dtype, random_, 0.05, 0.05);
      const Bytes expected = as_bytes(im2col_reference(x, g));  // 0 bits: +0 in both
      ASSERT_EQ(expected.size(), static_cast<size_t>(g.n * g.column_rows() * g.column_pixels()) * 2);
      Buffer in = upload(as_bytes(x)), out = output(expected.size());
      ops().im2col(stream(), in.ptr(), out.ptr(), g);
      EXPECT_EQ(download(out), expected);
    }
}

TEST_F(DeviceOpsTest, PoolingRejectsOtherDtypes) {
  for (DType dtype : {DType::i64, DType::i32, DType::i8, DType::u8, DType::boolean}) {
    Pool2dShape g;
    g.dtype = dtype;
    EXPECT_THROW(ops().max_pool2d(stream(), 0, 0, g), UnsupportedError);
    EXPECT_THROW(ops().global_average_pool(stream(), 0, 0, 1, 1, dtype), UnsupportedError);
    Im2colShape i;
    i.dtype = dtype;
    EXPECT_THROW(ops().im2col(stream(), 0, 0, i), UnsupportedError);
  }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
