// GFLOP/s of the GEMM template's configs against oneDNN (constant, prepacked weights on both sides),
// plain and with bias + GELU(erf) fused. Disabled: timing is not a test. Run with
//   test_gemm --gtest_also_run_disabled_tests --gtest_filter=*Bench*
// Every candidate runs once per round, rounds interleaved, median of the rounds; 2 threads.
// KILN_GEMM_BENCH_MAX=1 times the exhaustive config space instead of the fast one; KILN_GEMM_BENCH_ONLY=0..7
// picks one shape.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <omp.h>
#include <time.h>

#include "gemm_test_util.h"
#include "kernels/onednn/fused.h"

namespace kiln::templates::gemm::testing {
namespace {

// KILN_GEMM_BENCH_CPUTIME=1: one thread, timed by the thread's CPU clock, which a loaded machine's
// descheduling does not inflate (per-core efficiency; cache sharing with other processes remains).
bool cpu_time_mode() {
  const char* v = std::getenv("KILN_GEMM_BENCH_CPUTIME");
  return v && *v == '1';
}
int bench_threads() { return cpu_time_mode() ? 1 : 2; }

double now_seconds() {
  if (!cpu_time_mode())
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Candidate {
  std::string name;
  std::function<void()> call;
  std::vector<double> seconds;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// constant_b: weights packed ahead of time on both sides; otherwise B (batch of them) given per call.
void bench_shape(int64_t M, int64_t N, int64_t K, bool gelu, int rounds, bool constant_b = true, int64_t batch = 1,
                 bool trans_b = false) {
  GemmProblem p;
  p.m = M;
  p.n = N;
  p.k = K;
  p.batch = batch;
  p.b_constant = constant_b;
  p.trans_b = trans_b;
  GemmEpilogue epi;
  onednn::Epilogue dnnl_epi;
  if (gelu) {
    p.bias = GemmProblem::Bias::row;
    epi.body = "v = 0.5f * v * (1.0f + kiln_erf(v * 0.70710678118654752f));";
    dnnl_epi.act = onednn::Activation::gelu_erf;
  }
  auto a = std::make_shared<std::vector<float>>(random_values(static_cast<size_t>(batch * M * K), 1));
  auto b = std::make_shared<std::vector<float>>(random_values(static_cast<size_t>(batch * K * N), 2));
  std::vector<float> bias = random_values(static_cast<size_t>(N), 3);
  if (gelu) dnnl_epi.bias = bias;
  std::vector<float> c(static_cast<size_t>(batch * M * N));

  const char* max_env = std::getenv("KILN_GEMM_BENCH_MAX");
  // KILN_GEMM_BENCH_TIER=avx2: the AVX2 kernels (run oneDNN with DNNL_MAX_CPU_ISA=AVX2 to compare like with like).
  const char* tier_env = std::getenv("KILN_GEMM_BENCH_TIER");
  const codegen::cpu::CpuFeatures features = tier_env && std::string(tier_env) == "avx2"
                                                 ? codegen::cpu::CpuFeatures::avx2_tier()
                                                 : codegen::cpu::detect_cpu_features();
  std::vector<GemmConfig> space = config_space(p, features, max_env && *max_env == '1');
  std::vector<GemmSpec> specs;
  for (const GemmConfig& cfg : space) specs.push_back({p, cfg, epi});
  std::vector<GemmKernel> kernels = GemmKernel::compile(specs, shared_cache().options(), features);

  std::vector<Candidate> cands;
  std::unique_ptr<onednn::FusedMatmul> dnnl_holder =
      constant_b ? std::make_unique<onednn::FusedMatmul>(K, N, std::vector<int64_t>{N, 1}, b, b->data(), dnnl_epi)
                 : std::make_unique<onednn::FusedMatmul>(dnnl_epi);
  const onednn::FusedMatmul& dnnl = *dnnl_holder;
  onednn::FusedMatmul::Call call;
  if (batch == 1) {
    call.desc.a_dims = {M, K};
    call.desc.a_strides = {K, 1};
    call.desc.b_dims = {K, N};
    call.desc.b_strides = {N, 1};
    call.desc.c_dims = {M, N};
  } else {
    call.desc.a_dims = {batch, M, K};
    call.desc.a_strides = {M * K, K, 1};
    call.desc.b_dims = {batch, K, N};
    call.desc.b_strides = trans_b ? std::vector<int64_t>{K * N, 1, K} : std::vector<int64_t>{K * N, N, 1};
    call.desc.c_dims = {batch, M, N};
  }
  call.b = constant_b ? nullptr : b->data();
  call.a = a->data();
  call.c = c.data();
  ASSERT_TRUE(dnnl.prepare(call));
  cands.push_back({"onednn", [&] { ASSERT_TRUE(dnnl.run(call)); }, {}});
  for (GemmKernel& k : kernels) {
    if (constant_b) k.set_constant_b(b->data());
    cands.push_back({k.spec().config.name(), [&k, &a, &b, &bias, &c, M] {
                       k.run(bias.data(), a->data(), b->data(), c.data(), M, nullptr, bench_threads());
                     }, {}});
  }
  for (Candidate& cand : cands) cand.call();  // warm up (first-touch, oneDNN's reorder)
  for (int r = 0; r < rounds; ++r)
    for (Candidate& cand : cands) {
      const double t0 = now_seconds();
      cand.call();
      cand.seconds.push_back(now_seconds() - t0);
    }
  const double flops = 2.0 * double(batch) * double(M) * double(N) * double(K);
  const double base = flops / median(cands[0].seconds) * 1e-9;
  const double base_best = flops / *std::min_element(cands[0].seconds.begin(), cands[0].seconds.end()) * 1e-9;
  std::printf("batch=%ld M=%ld N=%ld K=%ld %s, %s B (%d threads, median of %d)\n", static_cast<long>(batch),
              static_cast<long>(M), static_cast<long>(N), static_cast<long>(K), gelu ? "bias+gelu_erf" : "plain",
              constant_b ? "constant" : "per-call", bench_threads(), rounds);
  for (const Candidate& cand : cands) {
    const double gf = flops / median(cand.seconds) * 1e-9;
    const double best = flops / *std::min_element(cand.seconds.begin(), cand.seconds.end()) * 1e-9;
    std::printf("  %-40s median %6.1f GFLOP/s %6.1f%% | best %6.1f GFLOP/s %6.1f%% of oneDNN\n", cand.name.c_str(), gf,
                100.0 * gf / base, best, 100.0 * best / base_best);
  }
  std::fflush(stdout);
}

TEST(GemmBench, DISABLED_Bench) {
  omp_set_num_threads(bench_threads());  // oneDNN's threads (the template takes nthreads explicitly)
  const char* only = std::getenv("KILN_GEMM_BENCH_ONLY");  // "0".."7": one shape
  auto wanted = [only](char id) { return !only || !*only || *only == id; };
  if (wanted('0')) bench_shape(512, 3072, 768, false, 9);
  if (wanted('1')) bench_shape(2048, 2048, 2048, false, 5);
  if (wanted('2')) bench_shape(128, 3072, 768, true, 15);
  if (wanted('3')) bench_shape(128, 3072, 768, false, 15);
  if (wanted('4')) bench_shape(512, 768, 768, false, 15, false);     // activations x activations
  if (wanted('5')) bench_shape(128, 64, 128, false, 31, false, 12);  // attention's P x V, 12 heads
  if (wanted('6')) bench_shape(128, 128, 64, false, 31, false, 12, true);  // attention's Q x K^T
  if (wanted('7')) bench_shape(1, 3072, 768, false, 31);  // one token (GEMV-like, memory-bound)
}

}  // namespace
}  // namespace kiln::templates::gemm::testing
