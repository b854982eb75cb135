// The oneDNN softmax call of the library route: oneDNN alone loses NaN rows (which is why softmax_f32
// scans its input), the call with the fix gives NaN across every row whose max is not finite, and
// many threads may call it at once with different shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <thread>

#include "kernels/onednn/softmax.h"
#include "routing_test_util.h"

namespace kiln::routing_test {
namespace {

using onednn::SoftmaxShape;

// Rows (width n): finite; NaN first; NaN in the middle; all -inf; one +inf; -inf with a finite value;
// all -inf but a NaN at the end; all +inf.
std::vector<float> special_rows(int64_t n) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x;
  auto row = [&](auto value_at) {
    for (int64_t i = 0; i < n; ++i) x.push_back(value_at(i));
  };
  row([](int64_t i) { return 0.25f * static_cast<float>(i % 7); });
  row([&](int64_t i) { return i == 0 ? nan : 0.5f; });
  row([&](int64_t i) { return i == n / 2 ? nan : 0.5f; });
  row([&](int64_t) { return -inf; });
  row([&](int64_t i) { return i == n / 3 ? inf : 1.f; });
  row([&](int64_t i) { return i == n / 2 ? 2.f : -inf; });
  row([&](int64_t i) { return i == n - 1 ? nan : -inf; });
  row([&](int64_t) { return inf; });
  return x;
}
constexpr int64_t kRows = 8;
// Which rows must be NaN throughout (ONNX): every row whose max is not finite (rows 0 and 5 are
// finite at every width: row 5 keeps its one finite value).
bool nan_row(int64_t r) { return r != 0 && r != 5; }

int nan_count(const std::vector<float>& y, int64_t r, int64_t n) {
  int c = 0;
  for (int64_t i = 0; i < n; ++i) c += std::isnan(y[size_t(r * n + i)]);
  return c;
}

TEST(OneDnnSoftmax, FixedCallGivesNaNAcrossEveryNonFiniteRow) {
  for (bool log : {false, true}) {
    for (int64_t n : {1, 2, 3, 17, 64, 100, 1000, 40000}) {
      std::vector<float> x = special_rows(n), y(x.size());
      ASSERT_TRUE(onednn::softmax_f32({kRows, n, 1}, log, x.data(), y.data()));
      for (int64_t r = 0; r < kRows; ++r) {
        EXPECT_EQ(nan_count(y, r, n), nan_row(r) ? n : 0) << "log " << log << " n " << n << " row " << r;
      }
      // The finite rows: row 5 puts all the mass on its one finite value.
      EXPECT_NEAR(y[size_t(5 * n + n / 2)], log ? 0.0 : 1.0, 2e-6) << n;
      if (n > 1) {
        EXPECT_EQ(y[size_t(5 * n)], log ? -INFINITY : 0.0f) << n;
      }
    }
  }
}

TEST(OneDnnSoftmax, OneDnnAloneLosesNaNRows) {
  // What the scan fixes: oneDNN by itself gives NaN only where the NaN or +inf stood. If this fails,
  // oneDNN now propagates NaN itself and the scan in softmax_f32 could be dropped.
  const int64_t n = 17;
  std::vector<float> x = special_rows(n), y(x.size());
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream st(eng);
  dnnl::memory::desc md({kRows, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, md, md, 1);
  dnnl::softmax_v2_forward::primitive_desc pd(d, eng);
  dnnl::memory src(md, eng, x.data()), dst(md, eng, y.data());
  dnnl::softmax_v2_forward(pd).execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  st.wait();
  EXPECT_LT(nan_count(y, 1, n), n) << "row with a NaN";
  EXPECT_LT(nan_count(y, 4, n), n) << "row with a +inf";
  onednn::softmax_nan_rows({kRows, n, 1}, x.data(), y.data());  // the fix alone
  for (int64_t r = 0; r < kRows; ++r) EXPECT_EQ(nan_count(y, r, n), nan_row(r) ? n : 0) << r;
}

TEST(OneDnnSoftmax, ColumnsAlongAMiddleAxis) {
  // [2, 5, 3] along axis 1: column (0, ., 1) holds a NaN, column (1, ., 2) is all -inf.
  std::vector<float> x(30);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i % 11);
  x[0 * 15 + 2 * 3 + 1] = NAN;
  for (int i = 0; i < 5; ++i) x[1 * 15 + size_t(i) * 3 + 2] = -INFINITY;
  std::vector<float> y(30);
  ASSERT_TRUE(onednn::softmax_f32({2, 5, 3}, false, x.data(), y.data()));
  for (int o = 0; o < 2; ++o)
    for (int j = 0; j < 3; ++j) {
      bool bad = (o == 0 && j == 1) || (o == 1 && j == 2);
      double sum = 0;
      for (int i = 0; i < 5; ++i) {
        float v = y[size_t(o * 15 + i * 3 + j)];
        EXPECT_EQ(std::isnan(v), bad) << o << " " << i << " " << j;
        sum += v;
      }
      if (!bad) {
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
}

TEST(OneDnnSoftmax, ManyThreadsManyShapes) {
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &failures] {
      for (int rep = 0; rep < 20; ++rep) {
        int64_t n = 5 + 13 * ((t + rep) % 4);
        std::vector<float> x = special_rows(n), y(x.size());
        if (!onednn::softmax_f32({kRows, n, 1}, rep % 2 == 1, x.data(), y.data())) ++failures[size_t(t)];
        for (int64_t r = 0; r < kRows; ++r)
          if (nan_count(y, r, n) != (nan_row(r) ? n : 0)) ++failures[size_t(t)];
      }
    });
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
  EXPECT_FALSE(onednn::softmax_impl_name({64, 768, 1}, false).empty());
}

}  // namespace
}  // namespace kiln::routing_test
