// Numerics of the GEMM template against fp64 loops: every config of the exhaustive space, odd and size-1
// shapes, transposed operands, batches with broadcast, bias kinds with alpha/beta, fused epilogues,
// NaN/Inf inputs, a symbolic M served by one compiled kernel, the AVX2 and baseline tiers. Every run is
// repeated on 1, 2 and 3 threads and must give the same bits.
#include <cstring>
#include <set>
#include <tuple>
#include <sys/mman.h>
#include <unistd.h>

#include "codegen/cpu/toolchain.h"
#include "gemm_test_util.h"
#include "templates/gemm/cpu/epilogue_pass.h"

namespace kiln::templates::gemm::testing {
namespace {

using Bias = GemmProblem::Bias;
using codegen::cpu::CpuFeatures;

Operands make_operands(const GemmProblem& p, const GemmEpilogue& e, int64_t M, uint32_t seed, size_t special) {
  Operands x;
  x.a = random_values(a_floats(p, M), seed, special);
  x.b = random_values(b_floats(p), seed + 1, special);
  x.bias = random_values(bias_floats(p, M), seed + 2, special);
  for (size_t i = 0; i < e.extra_inputs.size(); ++i)
    x.extra.push_back(random_values(c_floats(p, M), seed + 3 + static_cast<uint32_t>(i), special));
  return x;
}

std::vector<float> run(const GemmKernel& kernel, int64_t M, const Operands& x, int threads) {
  GemmKernel k = kernel;
  if (k.spec().problem.b_constant) k.set_constant_b(x.b.data());
  std::vector<float> c(c_floats(k.spec().problem, M), 12345.f);  // must be overwritten, not accumulated into
  std::vector<const void*> extra;
  for (const auto& e : x.extra) extra.push_back(e.data());
  k.run(x.bias.empty() ? nullptr : x.bias.data(), x.a.data(), x.b.data(), c.data(), M, extra.data(), threads);
  return c;
}

// Runs on 1, 2 and 3 threads (same bits; the tile grid depends on the thread count) and checks against
// the reference; returns the 1-thread result.
std::vector<float> check(const GemmKernel& k, int64_t M, uint32_t seed, size_t special = 0,
                         const RefEpilogue& epi = nullptr) {
  const GemmProblem& p = k.spec().problem;
  const std::string what = k.spec().config.name() + " M=" + std::to_string(M) + " N=" + std::to_string(p.n) +
                           " K=" + std::to_string(p.k);
  Operands x = make_operands(p, k.spec().epilogue, M, seed, special);
  std::vector<float> one = run(k, M, x, 1), two = run(k, M, x, 2), three = run(k, M, x, 3);
  EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float))) << what << ": thread counts differ";
  EXPECT_EQ(0, std::memcmp(one.data(), three.data(), one.size() * sizeof(float))) << what << ": thread counts differ";
  EXPECT_EQ(0, check_against(one, reference(p, M, x, epi), what));
  return one;
}

GemmConfig first_config(const GemmProblem& p) { return config_space(p, codegen::cpu::detect_cpu_features(), false)[0]; }

TEST(GemmTemplate, EveryExhaustiveConfigAgrees) {
  GemmProblem p;
  p.n = 130;
  p.k = 300;  // kc 256: a K remainder; kc >= 300: clamped to K (EVEN_K)
  p.bias = Bias::row;
  p.alpha = 0.5f;
  p.beta = 2.f;
  std::vector<GemmConfig> space = config_space(p, codegen::cpu::detect_cpu_features(), true);
  ASSERT_GE(space.size(), 12u);
  std::vector<GemmSpec> specs;
  for (const GemmConfig& c : space) specs.push_back({p, c, {}});
  std::vector<GemmKernel> kernels = compile(specs);
  for (int64_t M : {1, 33, 130}) {
    std::vector<float> first;
    for (const GemmKernel& k : kernels) {
      std::vector<float> got = check(k, M, 7);
      // One FMA chain per output in k order: every config of a tier gives the same bits.
      if (first.empty()) first = got;
      else EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * sizeof(float))) << k.spec().config.name();
    }
  }
}

TEST(GemmTemplate, EveryExhaustiveConfigOfABatchedProblem) {
  GemmProblem p;  // N divisible by 48 and 32 (B read in place for those tiles), one K block, a batch
  p.n = 96;
  p.k = 40;
  p.batch = 2;
  p.bias = Bias::full;
  p.batch_stride_bias = kDenseStride;
  std::vector<GemmConfig> space = config_space(p, codegen::cpu::detect_cpu_features(), true);
  std::vector<GemmSpec> specs;
  for (const GemmConfig& c : space) specs.push_back({p, c, {}});
  std::vector<GemmKernel> kernels = compile(specs);
  for (int64_t M : {1, 65}) {
    std::vector<float> first;
    for (const GemmKernel& k : kernels) {
      std::vector<float> got = check(k, M, 900 + static_cast<uint32_t>(M), 2);
      if (first.empty()) first = got;
      else EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * sizeof(float))) << k.spec().config.name();
    }
  }
}

// n floats whose last one ends exactly at an inaccessible page: any read or write past the end faults.
class GuardedFloats {
 public:
  explicit GuardedFloats(const std::vector<float>& values) : n_(values.size()) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t bytes = (n_ * sizeof(float) + page - 1) / page * page;
    size_ = bytes + page;
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<char*>(p);
    ::mprotect(base_ + bytes, page, PROT_NONE);
    data_ = reinterpret_cast<float*>(base_ + bytes) - n_;
    std::memcpy(data_, values.data(), n_ * sizeof(float));
  }
  ~GuardedFloats() { ::munmap(base_, size_); }
  GuardedFloats(const GuardedFloats&) = delete;
  GuardedFloats& operator=(const GuardedFloats&) = delete;
  float* data() { return data_; }
  std::vector<float> values() const { return std::vector<float>(data_, data_ + n_); }

 private:
  size_t n_, size_ = 0;
  char* base_ = nullptr;
  float* data_ = nullptr;
};

TEST(GemmTemplate, NoAccessPastTheOperands) {
  // A, B (read in place where the config allows), C, bias and a residual each end at a guard page.
  GemmProblem p;
  p.n = 96;
  p.k = 33;
  p.bias = Bias::row;
  GemmEpilogue residual{{DType::f32}, "v = v + x0[(b * M + m) * N + n];"};
  std::vector<GemmSpec> specs;
  for (const GemmConfig& c : config_space(p, codegen::cpu::detect_cpu_features(), false))
    specs.push_back({p, c, residual});
  GemmProblem t = p;  // transposed operands: the packing paths
  t.trans_a = t.trans_b = true;
  t.n = 33;
  specs.push_back({t, first_config(t), residual});
  std::vector<GemmKernel> kernels = compile(specs);
  for (const GemmKernel& k : kernels)
    for (int64_t M : {1, 13}) {
      const GemmProblem& q = k.spec().problem;
      Operands x = make_operands(q, k.spec().epilogue, M, 950, 0);
      GuardedFloats a(x.a), b(x.b), bias(x.bias), extra(x.extra[0]), c(std::vector<float>(c_floats(q, M), 0.f));
      const void* extras[] = {extra.data()};
      k.run(bias.data(), a.data(), b.data(), c.data(), M, extras, 2);
      RefEpilogue ref = [&q](double v, int64_t, int64_t m, int64_t n, const Operands& o) {
        return v + double(o.extra[0][static_cast<size_t>(m * q.n + n)]);
      };
      EXPECT_EQ(0, check_against(c.values(), reference(q, M, x, ref), k.spec().config.name()));
    }
}

TEST(GemmTemplate, OddAndSizeOneShapes) {
  const int64_t sizes[] = {1, 2, 7, 17, 33, 64, 65, 130};
  const std::pair<int64_t, int64_t> nk[] = {{1, 1}, {2, 7}, {17, 33}, {64, 65}, {65, 130}, {130, 17}, {33, 2}, {7, 64}};
  std::vector<GemmSpec> specs;
  for (auto [n, k] : nk) {
    GemmProblem p;
    p.n = n;
    p.k = k;
    specs.push_back({p, first_config(p), {}});
  }
  std::vector<GemmKernel> kernels = compile(specs);
  uint32_t seed = 100;
  for (const GemmKernel& k : kernels)
    for (int64_t M : sizes) check(k, M, seed++);
}

TEST(GemmTemplate, TransposedOperandsAndConstantWeights) {
  std::vector<GemmSpec> specs;
  for (int t = 1; t < 4; ++t) {
    GemmProblem p;
    p.n = 65;
    p.k = 33;
    p.trans_a = t & 1;
    p.trans_b = t & 2;
    specs.push_back({p, first_config(p), {}});
  }
  GemmProblem constant;  // packed weights, constant M, transposed B (a Linear layer's [N, K] weight)
  constant.m = 17;
  constant.n = 130;
  constant.k = 65;
  constant.trans_b = true;
  constant.b_constant = true;
  constant.bias = Bias::row;
  specs.push_back({constant, first_config(constant), {}});
  std::vector<GemmKernel> kernels = compile(specs);
  for (size_t i = 0; i < 3; ++i)
    for (int64_t M : {1, 7, 64}) check(kernels[i], M, 200 + static_cast<uint32_t>(M));
  check(kernels[3], 17, 300);
}

TEST(GemmTemplate, BatchesWithBroadcastAndFullBias) {
  GemmProblem shared_b;  // bmm against one B (stride 0), full per-batch bias with alpha/beta
  shared_b.n = 33;
  shared_b.k = 17;
  shared_b.batch = 3;
  shared_b.batch_stride_b = 0;
  shared_b.bias = Bias::full;
  shared_b.batch_stride_bias = kDenseStride;
  shared_b.alpha = -1.5f;
  shared_b.beta = 0.25f;
  GemmProblem shared_a = shared_b;  // one A, a B per batch, the same full bias for every batch
  shared_a.batch_stride_a = 0;
  shared_a.batch_stride_b = kDenseStride;
  shared_a.batch_stride_bias = 0;
  shared_a.b_constant = true;
  std::vector<GemmKernel> kernels =
      compile({{shared_b, first_config(shared_b), {}}, {shared_a, first_config(shared_a), {}}});
  for (const GemmKernel& k : kernels)
    for (int64_t M : {1, 2, 65}) check(k, M, 400 + static_cast<uint32_t>(M));
}

TEST(GemmTemplate, UnpackedBReadInPlace) {
  GemmProblem p;  // N divisible by every AVX-512 and AVX2 nr: B read in place, per batch and broadcast
  p.n = 96;
  p.k = 70;
  p.batch = 2;
  p.bias = Bias::row;
  GemmProblem shared = p;
  shared.batch_stride_b = 0;
  std::vector<GemmSpec> specs;
  for (const GemmProblem& q : {p, shared})
    for (const GemmConfig& c : config_space(q, codegen::cpu::detect_cpu_features(), false))
      if (!c.pack_b) specs.push_back({q, c, {}});
  ASSERT_GE(specs.size(), 2u);
  std::vector<GemmKernel> kernels = compile(specs);
  for (const GemmKernel& k : kernels)
    for (int64_t M : {1, 17}) check(k, M, 450 + static_cast<uint32_t>(M), 2);
}

TEST(GemmTemplate, FusedEpiloguesWithNanAndInf) {
  GemmProblem p;
  p.n = 130;
  p.k = 65;
  p.bias = Bias::row;
  GemmEpilogue gelu{{}, "v = 0.5f * v * (1.0f + kiln_erf(v * 0.70710678118654752f));"};
  GemmEpilogue residual{{DType::f32}, "v = v + x0[(b * M + m) * N + n];"};
  GemmEpilogue relu{{}, "v = v < 0.0f ? 0.0f : v;  // keeps NaN"};
  GemmProblem plain = p;
  plain.bias = Bias::none;
  // The hook per micro-tile and per micro-panel row (epilogue_rows): the same results.
  GemmConfig rows = first_config(p), plain_rows = first_config(plain);
  rows.epilogue_rows = plain_rows.epilogue_rows = true;
  std::vector<GemmKernel> kernels =
      compile({{p, first_config(p), gelu}, {plain, first_config(plain), residual}, {plain, first_config(plain), relu},
               {p, rows, gelu}, {plain, plain_rows, residual}});
  RefEpilogue ref_gelu = [](double v, int64_t, int64_t, int64_t, const Operands&) {
    return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  };
  RefEpilogue ref_residual = [&plain](double v, int64_t b, int64_t m, int64_t n, const Operands& x) {
    (void)b;
    return v + double(x.extra[0][static_cast<size_t>(m * plain.n + n)]);
  };
  RefEpilogue ref_relu = [](double v, int64_t, int64_t, int64_t, const Operands&) { return v < 0 ? 0.0 : v; };
  for (int64_t M : {1, 33}) {
    for (size_t special : {size_t{0}, size_t{9}}) {
      check(kernels[0], M, 500, special, ref_gelu);
      check(kernels[1], M, 501, special, ref_residual);
      check(kernels[3], M, 500, special, ref_gelu);
      check(kernels[4], M, 501, special, ref_residual);
      std::vector<float> relu_out = check(kernels[2], M, 502, special, ref_relu);
      if (special) {  // a NaN input makes NaN outputs, and ReLU must keep them
        bool any_nan = false;
        for (float v : relu_out) any_nan |= std::isnan(v);
        EXPECT_TRUE(any_nan);
      }
    }
  }
}

// The epilogue as a separate pass (for library GEMMs) over a bare product gives the fused results:
// full per-batch bias with beta, a residual indexed by batch, NaN and Inf, a symbolic M.
TEST(GemmTemplate, EpiloguePassAfterABareProduct) {
  GemmProblem p;
  p.n = 37;
  p.k = 21;
  p.batch = 3;
  p.bias = Bias::full;
  p.batch_stride_bias = kDenseStride;
  p.alpha = -1.5f;
  p.beta = 0.25f;
  GemmEpilogue residual{{DType::f32}, "v = v + x0[(b * M + m) * N + n];"};
  GemmProblem bare = p;  // the product with alpha, as a library computes it
  bare.bias = Bias::none;
  GemmKernel product = compile({{bare, first_config(bare), {}}})[0];
  EpiloguePass pass = EpiloguePass::compile(p, residual, shared_cache().options());
  EXPECT_TRUE(has_epilogue_pass(p, residual));
  EXPECT_FALSE(has_epilogue_pass(bare, {}));
  RefEpilogue ref_residual = [&p](double v, int64_t b, int64_t m, int64_t n, const Operands& x) {
    const int64_t M = int64_t(x.extra[0].size()) / (p.batch * p.n);
    return v + double(x.extra[0][static_cast<size_t>((b * M + m) * p.n + n)]);
  };
  for (int64_t M : {1, 40})
    for (size_t special : {size_t{0}, size_t{5}}) {
      Operands x = make_operands(p, residual, M, 700 + uint32_t(M), special);
      std::vector<float> c = run(product, M, x, 2);
      const void* extra[1] = {x.extra[0].data()};
      pass.run(x.bias.data(), c.data(), M, extra, 2);
      EXPECT_EQ(0, check_against(c, reference(p, M, x, ref_residual), "epilogue pass M=" + std::to_string(M)));
    }
}

TEST(GemmTemplate, SymbolicMCompilesOnce) {
  GemmProblem p;
  p.n = 64;
  p.k = 7;
  std::vector<GemmKernel> kernels = compile({{p, first_config(p), {}}});
  const uint64_t runs = codegen::cpu::compiler_run_count();
  check(kernels[0], 3, 600);
  check(kernels[0], 1000, 601);
  // Compiling the same spec again is a cache hit.
  compile({{p, first_config(p), {}}});
  EXPECT_EQ(runs, codegen::cpu::compiler_run_count());
}

TEST(GemmTemplate, SmallConstantMUsesExactTiles) {
  std::vector<GemmSpec> specs;
  for (int64_t m : {1, 5}) {  // below the first tile's mr in every tier (AVX2 6, AVX-512 8)
    GemmProblem p;
    p.m = m;
    p.n = 130;
    p.k = 65;
    p.b_constant = true;
    specs.push_back({p, first_config(p), {}});
    if (codegen::cpu::detect_cpu_features().has_avx2_tier()) {
      EXPECT_EQ(specs.back().config.mr, m);
    }
  }
  std::vector<GemmKernel> kernels = compile(specs);
  check(kernels[0], 1, 650);
  check(kernels[1], 5, 651, 2);
}

TEST(GemmTemplate, EmptyAndZeroK) {
  GemmProblem p;  // K = 0: C = epilogue(beta * bias)
  p.n = 17;
  p.k = 0;
  p.bias = Bias::row;
  p.beta = 3.f;
  std::vector<GemmKernel> kernels = compile({{p, first_config(p), {}}});
  check(kernels[0], 5, 700);
  std::vector<float> c(4, 1.f);  // M = 0: nothing touched
  kernels[0].run(c.data(), c.data(), c.data(), c.data(), 0, nullptr, 2);
  EXPECT_EQ(c, std::vector<float>(4, 1.f));
}

TEST(GemmTemplate, SmallerVectorTiers) {
  const CpuFeatures here = codegen::cpu::detect_cpu_features();
  for (CpuFeatures tier : {CpuFeatures::avx2_tier(), CpuFeatures::baseline()}) {
    if (!tier.subset_of(here)) continue;
    GemmProblem p;
    p.n = 33;
    p.k = 65;
    p.bias = Bias::row;
    GemmEpilogue relu{{}, "v = v < 0.0f ? 0.0f : v;"};
    GemmProblem transposed = p;  // the packing paths (B's 8 x 8 transposes) on this tier
    transposed.trans_a = transposed.trans_b = true;
    std::vector<GemmConfig> space = config_space(p, tier, false);
    EXPECT_EQ(vector_floats(tier), tier.has_avx2_tier() ? 8 : 1);
    std::vector<GemmKernel> kernels =
        GemmKernel::compile({{p, space[0], relu}, {transposed, config_space(transposed, tier, false).back(), {}}},
                            shared_cache().options(), tier);
    RefEpilogue ref_relu = [](double v, int64_t, int64_t, int64_t, const Operands&) { return v < 0 ? 0.0 : v; };
    check(kernels[0], 17, 800, 3, ref_relu);
    check(kernels[1], 130, 801);
    // Every micro-kernel of the tier's exhaustive space (one config per tile shape and A form).
    GemmProblem wide = p;
    wide.n = 130;
    std::vector<GemmSpec> tiles;
    std::set<std::tuple<int, int, bool>> seen;
    for (const GemmConfig& c : config_space(wide, tier, true))
      if (seen.insert({c.mr, c.nr, c.pack_a}).second) tiles.push_back({wide, c, {}});
    for (const GemmKernel& k : GemmKernel::compile(tiles, shared_cache().options(), tier)) check(k, 33, 802);
  }
}

TEST(GemmTemplate, ConfigSpaceIsValidAndNamed) {
  const CpuFeatures here = codegen::cpu::detect_cpu_features();
  for (int64_t n : {1, 16, 33, 3072})
    for (int64_t m : {-1, 1, 128}) {
      GemmProblem p;
      p.m = m;
      p.n = n;
      p.k = 768;
      std::vector<GemmConfig> fast = config_space(p, here, false), max = config_space(p, here, true);
      EXPECT_GE(fast.size(), 2u);
      EXPECT_LE(fast.size(), 8u);
      EXPECT_GE(max.size(), fast.size());
      EXPECT_LE(max.size(), 40u);
      for (const GemmConfig& c : max) EXPECT_EQ("", check_config(p, c, here)) << c.name();
    }
  for (bool exhaustive : {false, true}) {  // names round-trip
    GemmProblem p;
    p.n = 96;
    p.k = 300;
    for (const GemmConfig& c : config_space(p, here, exhaustive)) EXPECT_EQ(GemmConfig::parse(c.name()), c) << c.name();
    // With a store hook the space adds epilogue_rows twins ("_er"), which round-trip too.
    std::vector<GemmConfig> hooked = config_space(p, here, exhaustive, true);
    EXPECT_GT(hooked.size(), config_space(p, here, exhaustive).size());
    for (const GemmConfig& c : hooked) EXPECT_EQ(GemmConfig::parse(c.name()), c) << c.name();
    EXPECT_TRUE(hooked.back().epilogue_rows);
  }
  EXPECT_FALSE(GemmConfig::parse("mr6nr64_mc96_nc768_kc256_g8_x"));
  EXPECT_FALSE(GemmConfig::parse("mr6nr64_mc96_nc768_kc256_g8_p_junk"));
  GemmProblem a, b;
  b.trans_b = true;
  EXPECT_NE(problem_key(a), problem_key(b));
  GemmConfig c;
  EXPECT_EQ("mr6nr64_mc96_nc768_kc256_g8_p", c.name());
  c.nr = 40;
  EXPECT_NE("", check_config(GemmProblem{}, c, CpuFeatures::avx512_tier()));
}

}  // namespace
}  // namespace kiln::templates::gemm::testing
