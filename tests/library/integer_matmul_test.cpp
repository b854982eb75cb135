// oneDNN's integer products (kernels/onednn/integer_matmul.cpp) against an int64 reference: u8 and i8 A
// with zero points, per-tensor and per-column scales, i32 and f32 outputs, sizes that are not multiples of
// VNNI's groups of 4 or of the brgemm blocks, unit sizes, broadcast batches, transposed B, and the
// products where 16-bit pair sums would saturate. Where this CPU's oneDNN has no VNNI / AMX kernel the
// wrapper must refuse (the tests that need the kernel say they were skipped).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/onednn/onednn.h"

namespace kiln::onednn {
namespace {

std::vector<int64_t> row_major(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

struct Problem {
  std::vector<int64_t> batch_a, batch_b;  // batch dims of A and B (1 broadcasts), the same count
  int64_t m = 1, n = 1, k = 1;
  bool a_signed = false, trans_b = false, per_column = false, int32_output = false;
  int32_t a_zero_point = 0;
};

// The sums in int64 from the same operands, then the scale in f64.
struct Operands {
  std::vector<uint8_t> a;  // the bytes of A (u8 or i8)
  std::vector<int8_t> b;
  std::vector<int64_t> sums;  // the reference, [batch.., m, n]
  IntegerMatmulDesc desc;
};

Operands make(const Problem& p, std::mt19937& rng, int a_fill = -1, int b_fill = 999) {
  Operands r;
  auto dims = [&](const std::vector<int64_t>& batch, int64_t rows, int64_t cols) {
    std::vector<int64_t> d = batch;
    d.push_back(rows);
    d.push_back(cols);
    return d;
  };
  std::vector<int64_t> batch_c;
  for (size_t i = 0; i < p.batch_a.size(); ++i) batch_c.push_back(std::max(p.batch_a[i], p.batch_b[i]));
  MatmulDesc& s = r.desc.shape;
  s.a_dims = dims(p.batch_a, p.m, p.k);
  s.a_strides = row_major(s.a_dims);
  s.b_dims = dims(p.batch_b, p.k, p.n);
  s.b_strides = row_major(s.b_dims);
  if (p.trans_b) {  // B stored [.., n, k]
    s.b_strides = row_major(dims(p.batch_b, p.n, p.k));
    std::swap(s.b_strides[s.b_strides.size() - 1], s.b_strides[s.b_strides.size() - 2]);
  }
  s.c_dims = dims(batch_c, p.m, p.n);
  r.desc.a_signed = p.a_signed;
  r.desc.a_zero_point = p.a_zero_point;
  auto count = [](const std::vector<int64_t>& d) {
    int64_t c = 1;
    for (int64_t x : d) c *= x;
    return c;
  };
  std::uniform_int_distribution<int> byte(0, 255), weight(-128, 127);
  r.a.resize(size_t(count(s.a_dims)));
  for (auto& x : r.a) x = uint8_t(a_fill >= 0 ? a_fill : byte(rng));
  r.b.resize(size_t(count(s.b_dims)));
  for (auto& x : r.b) x = int8_t(b_fill != 999 ? b_fill : weight(rng));
  std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
  if (!p.int32_output) {
    r.desc.scales.resize(p.per_column ? size_t(p.n) : 1);
    for (auto& x : r.desc.scales) x = scale(rng);
  }
  // The reference over C's batch index, each operand's batch index broadcast where its dim is 1.
  const int64_t batches = count(batch_c);
  r.sums.assign(size_t(batches * p.m * p.n), 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t a_off = 0, b_off = 0, rest = bi;
    for (size_t d = batch_c.size(); d-- > 0;) {
      const int64_t i = rest % batch_c[d];
      rest /= batch_c[d];
      if (p.batch_a[d] > 1) a_off += i * s.a_strides[d];
      if (p.batch_b[d] > 1) b_off += i * s.b_strides[d];
    }
    const size_t rank = s.a_dims.size();
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        int64_t sum = 0;
        for (int64_t q = 0; q < p.k; ++q) {
          const uint8_t raw = r.a[size_t(a_off + i * s.a_strides[rank - 2] + q * s.a_strides[rank - 1])];
          const int64_t av = p.a_signed ? int64_t(int8_t(raw)) : int64_t(raw);
          sum += (av - p.a_zero_point) * r.b[size_t(b_off + q * s.b_strides[rank - 2] + j * s.b_strides[rank - 1])];
        }
        r.sums[size_t((bi * p.m + i) * p.n + j)] = sum;
      }
  }
  return r;
}

bool has_exact_kernel() {
  Problem p{.batch_a = {}, .batch_b = {}, .m = 4, .n = 4, .k = 4};
  std::mt19937 rng(1);
  const std::string impl = integer_matmul_implementation(make(p, rng).desc);
  return !impl.empty() && impl.rfind("refused", 0) != 0;
}

// Runs `p` and compares: i32 exactly, f32 within one rounding of the f64 product of the exact sum.
void check(const Problem& p, std::mt19937& rng, const std::string& what, int a_fill = -1, int b_fill = 999) {
  Operands r = make(p, rng, a_fill, b_fill);
  SCOPED_TRACE(what + " (" + integer_matmul_implementation(r.desc) + ")");
  if (p.int32_output) {
    std::vector<int32_t> c(r.sums.size(), -7);
    ASSERT_TRUE(matmul_integer(r.desc, r.a.data(), r.b.data(), c.data()));
    for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], r.sums[i]) << "element " << i;
    return;
  }
  std::vector<float> c(r.sums.size(), -7.f);
  ASSERT_TRUE(matmul_integer(r.desc, r.a.data(), r.b.data(), c.data()));
  for (size_t i = 0; i < c.size(); ++i) {
    const double expected = double(r.sums[i]) * r.desc.scales[p.per_column ? i % size_t(p.n) : 0];
    ASSERT_NEAR(c[i], expected, 2e-7 * std::abs(expected) + 1e-30) << "element " << i << ", sum " << r.sums[i];
  }
}

class IntegerMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_exact_kernel())
      GTEST_SKIP() << "SKIPPED: oneDNN has no VNNI / AMX integer matmul on this CPU (it would saturate): "
                   << "the wrapper refuses, which RunsExactlyWhereTheCpuHasVnni checks";
  }
};

TEST_F(IntegerMatmul, SizesThatDoNotDivideTheBlocksMatchTheInt64Sums) {
  std::mt19937 rng(11);
  const int64_t sizes[] = {1, 3, 4, 5, 63, 64, 65, 127, 129};
  for (int64_t m : sizes)
    for (int64_t k : {int64_t{1}, int64_t{5}, int64_t{64}, int64_t{129}, int64_t{768}})
      for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{65}})
        for (bool int32_output : {true, false}) {
          Problem p{.batch_a = {}, .batch_b = {}, .m = m, .n = n, .k = k, .int32_output = int32_output};
          check(p, rng, std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
        }
}

TEST_F(IntegerMatmul, ZeroPointsScalesAndSignsMatchTheReference) {
  std::mt19937 rng(12);
  for (bool a_signed : {false, true})
    for (int32_t zp : a_signed ? std::vector<int32_t>{0, 1, -5, -128} : std::vector<int32_t>{0, 1, 128, 255})
      for (bool per_column : {false, true})
        for (bool trans_b : {false, true}) {
          Problem p{.batch_a = {}, .batch_b = {}, .m = 37, .n = 70, .k = 300, .a_signed = a_signed,
                    .trans_b = trans_b, .per_column = per_column, .a_zero_point = zp};
          check(p, rng, std::string(a_signed ? "i8" : "u8") + " zp " + std::to_string(zp) +
                            (per_column ? " per column" : " per tensor") + (trans_b ? " B^T" : ""));
          p.int32_output = true;
          p.per_column = false;
          check(p, rng, "i32 out, zp " + std::to_string(zp));
        }
}

TEST_F(IntegerMatmul, BertsShapesAndBroadcastBatches) {
  std::mt19937 rng(13);
  check({.batch_a = {1}, .batch_b = {1}, .m = 128, .n = 768, .k = 768, .per_column = true, .a_zero_point = 131}, rng, "128x768x768");
  check({.batch_a = {1}, .batch_b = {1}, .m = 128, .n = 768, .k = 3072, .a_zero_point = 3}, rng, "128x768x3072");
  check({.batch_a = {2, 3}, .batch_b = {1, 3}, .m = 9, .n = 17, .k = 33, .a_zero_point = 7}, rng, "B broadcast over dim 0");
  check({.batch_a = {1, 4}, .batch_b = {2, 4}, .m = 5, .n = 8, .k = 64, .int32_output = true}, rng, "A broadcast over dim 0");
}

// 255 x 127 x 1024 and 255 x -128 x 1024 need i32 sums: a kernel that adds u8 x i8 pairs in 16 bits
// (vpmaddubsw: 2 x 255 x 127 > 32767) saturates here.
TEST_F(IntegerMatmul, ProductsThatSaturateSixteenBitPairSumsAreExact) {
  std::mt19937 rng(14);
  Problem p{.batch_a = {}, .batch_b = {}, .m = 3, .n = 5, .k = 1024, .int32_output = true};
  check(p, rng, "255 x 127", 255, 127);
  check(p, rng, "255 x -128", 255, -128);
  p.a_signed = true;
  check(p, rng, "-128 x -128", 128, -128);  // the byte 128 is -128 as i8
}

// Whether this CPU has u8 x i8 dot products into i32 (VNNI, or AMX), as oneDNN detects the ISA: the
// wrapper must run exactly there.
bool cpu_has_vnni() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx2_vnni:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx:
      return true;
    default:
      return false;
  }
}

TEST(IntegerMatmulRefusal, RunsExactlyWhereTheCpuHasVnni) {
  std::mt19937 rng(15);
  for (bool int32_output : {true, false}) {
    Operands r = make({.batch_a = {}, .batch_b = {}, .m = 8, .n = 8, .k = 8, .int32_output = int32_output}, rng);
    const std::string impl = integer_matmul_implementation(r.desc);
    std::vector<int32_t> c(64);  // an f32 C is as large
    const bool ran = matmul_integer(r.desc, r.a.data(), r.b.data(), c.data());
    EXPECT_EQ(ran, cpu_has_vnni()) << impl << ", effective ISA " << int(dnnl::get_effective_cpu_isa());
    std::cout << "oneDNN's integer matmul here, " << (int32_output ? "i32" : "f32") << " out: " << impl << "\n";
  }
}

}  // namespace
}  // namespace kiln::onednn
