// MatMulInteger against an int64 reference: the oneDNN route (VNNI / AMX, where this CPU has it) and the
// plain loop (the fp64 reference mode), zero points, K tails, size-1 dims and the sums that saturate a
// 16-bit pair sum (vpmaddubsw) but not i32.
#include <fstream>
#include <random>
#include <string>

#include "kernels/onednn/onednn.h"
#include "linalg_test_util.h"

namespace kiln::linalg_test {
namespace {

Tensor random_8bit(DType t, std::vector<int64_t> shape, std::mt19937& rng) {
  Tensor x = Tensor::empty(t, std::move(shape));
  std::uniform_int_distribution<int> u(t == DType::u8 ? 0 : -128, t == DType::u8 ? 255 : 127);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (t == DType::u8)
      x.data<uint8_t>()[i] = static_cast<uint8_t>(u(rng));
    else
      x.data<int8_t>()[i] = static_cast<int8_t>(u(rng));
  }
  return x;
}

// [.., M, K] x [K, N] (B without a batch), zero points za and zb, in int64.
std::vector<int64_t> reference(const Tensor& a, int64_t za, const Tensor& b, int64_t zb) {
  const int64_t K = a.dim(-1), N = b.dim(-1), rows = a.numel() / K;
  std::vector<int64_t> c(size_t(rows * N), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        c[size_t(r * N + n)] += (int64_t(a.as_double(r * K + k)) - za) * (int64_t(b.as_double(k * N + n)) - zb);
  return c;
}

std::vector<Tensor> run_integer(const Tensor& a, const Tensor& b, const Tensor* za, const Tensor* zb, bool ref) {
  Node n = make_node(OpKind::MatMulInteger, 4, 1, {true, true, za != nullptr, zb != nullptr});
  return run(n, {&a, &b, za, zb}, ref);
}

void expect_product(DType at, DType bt, std::vector<int64_t> a_shape, int64_t N, int64_t za, int64_t zb, std::mt19937& rng) {
  Tensor a = random_8bit(at, a_shape, rng);
  Tensor b = random_8bit(bt, {a_shape.back(), N}, rng);
  Tensor za_t = Tensor::scalar<int64_t>(at, za), zb_t = Tensor::scalar<int64_t>(bt, zb);
  const std::vector<int64_t> want = reference(a, za, b, zb);
  for (bool ref : {false, true}) {
    Tensor c = run_integer(a, b, za ? &za_t : nullptr, zb ? &zb_t : nullptr, ref).at(0);
    ASSERT_EQ(c.dtype(), DType::i32);
    std::vector<int64_t> shape = a_shape;
    shape.back() = N;
    ASSERT_EQ(c.shape(), shape);
    for (int64_t i = 0; i < c.numel(); ++i)
      ASSERT_EQ(c.data<int32_t>()[i], want[size_t(i)])
          << dtype_name(at) << " x " << dtype_name(bt) << " K " << a_shape.back() << " N " << N << " element " << i
          << (ref ? " (reference loop)" : "");
  }
}

TEST(MatMulInteger, MatchesTheInt64ProductOnEverySize) {
  std::mt19937 rng(7);
  for (int64_t M : {1, 3, 64, 129})
    for (int64_t K : {1, 4, 5, 63, 65, 768})
      for (int64_t N : {1, 16, 65}) {
        expect_product(DType::u8, DType::i8, {M, K}, N, 0, 0, rng);
        expect_product(DType::u8, DType::i8, {M, K}, N, 131, 0, rng);
        expect_product(DType::i8, DType::i8, {M, K}, N, -5, 0, rng);
      }
}

TEST(MatMulInteger, BatchedAZeroPointOnBAndAU8B) {
  std::mt19937 rng(8);
  expect_product(DType::u8, DType::i8, {2, 3, 37, 96}, 40, 17, 0, rng);  // A's batch folds into rows
  expect_product(DType::u8, DType::i8, {40, 96}, 33, 17, 3, rng);       // zero point on B: the loop
  expect_product(DType::u8, DType::u8, {40, 96}, 33, 128, 128, rng);    // u8 B: the loop
  expect_product(DType::i8, DType::u8, {7, 5}, 3, 0, 200, rng);
}

// 255 * 127 * 2 overflows vpmaddubsw's 16-bit pair sum; the i32 sums hold it exactly.
TEST(MatMulInteger, ExtremeOperandsDoNotSaturate) {
  const int64_t M = 8, K = 1024, N = 24;
  Tensor a = Tensor::empty(DType::u8, {M, K});
  Tensor b = Tensor::empty(DType::i8, {K, N});
  for (int64_t i = 0; i < a.numel(); ++i) a.data<uint8_t>()[i] = 255;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) b.data<int8_t>()[k * N + n] = n % 2 ? -128 : 127;
  for (bool ref : {false, true}) {
    Tensor c = run_integer(a, b, nullptr, nullptr, ref).at(0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        ASSERT_EQ(c.data<int32_t>()[m * N + n], n % 2 ? -33423360 : 33162240) << m << "," << n << " ref " << ref;
  }
}

TEST(MatMulInteger, EmptyDimsAndAnEmptySum) {
  Tensor a = Tensor::empty(DType::u8, {3, 0}), b = Tensor::empty(DType::i8, {0, 4});
  Tensor c = run_integer(a, b, nullptr, nullptr, false).at(0);
  ASSERT_EQ(c.shape(), (std::vector<int64_t>{3, 4}));
  for (int64_t i = 0; i < c.numel(); ++i) EXPECT_EQ(c.data<int32_t>()[i], 0);
  Tensor a0 = Tensor::empty(DType::u8, {0, 5}), b5 = Tensor::empty(DType::i8, {5, 4});
  EXPECT_EQ(run_integer(a0, b5, nullptr, nullptr, false).at(0).numel(), 0);
}

TEST(MatMulInteger, BadTypesAndZeroPointsAreUserErrors) {
  Tensor f = Tensor::empty(DType::f32, {2, 2}), q = Tensor::empty(DType::u8, {2, 2}), w = Tensor::empty(DType::i8, {2, 2});
  EXPECT_THROW(run_integer(f, w, nullptr, nullptr, false), UserError);
  Tensor per_row = Tensor::empty(DType::u8, {2});
  EXPECT_THROW(run_integer(q, w, &per_row, nullptr, false), UserError);
  Tensor wrong_type = Tensor::scalar<int64_t>(DType::i8, 1);
  EXPECT_THROW(run_integer(q, w, &wrong_type, nullptr, false), UserError);
}

bool cpu_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// Where the CPU has VNNI (or AMX), the product runs on it: the implementation oneDNN names. A CPU that
// says it has VNNI must pass the probe (else the integer route would be off there without a word).
TEST(MatMulInteger, RunsOnAnExactOneDnnKernelWhereThereIsOne) {
  onednn::IntegerMatmulDesc d;
  d.shape = {{128, 768}, {768, 1}, {768, 768}, {768, 1}, {128, 768}};
  const std::string impl = onednn::integer_matmul_implementation(d);
  if (cpu_flag("avx512_vnni") || cpu_flag("amx_int8")) {
    EXPECT_TRUE(onednn::has_exact_integer_matmul()) << "this CPU has VNNI / AMX, oneDNN offers " << impl;
  }
  if (!onednn::has_exact_integer_matmul()) GTEST_SKIP() << "no VNNI / AMX here: oneDNN offers " << impl;
  EXPECT_TRUE(impl.find("vnni") != std::string::npos || impl.find("amx") != std::string::npos) << impl;
}

}  // namespace
}  // namespace kiln::linalg_test
