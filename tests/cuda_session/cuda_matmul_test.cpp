// Products with constant weights on the CUDA backend (the GPU machine; skipped elsewhere with
// "SKIPPED: ..."): output widths whose rows are no multiple of 16 bytes (N = 37, and N = 1) run on a
// zero-padded copy of the weight (setting cuda_pad_gemm_columns), with a bias, with the erf GELU after
// it, as a Gemm with transB, and with a residual (which is never padded); each against the CPU with the
// setting on and off, in fp32 and bf16, on launched, captured and replayed runs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "backend/cuda/cuda_gemm_route.h"
#include "backend/cuda/device_probe.h"
#include "gpu_checks.h"
#include "ir/parser.h"
#include "kiln/session.h"

namespace kiln {
namespace {

using gpu_checks::expect_matches_cpu;
using gpu_checks::with_constant_weights;

class CudaMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
  }
};

// x [2, 5, 64] times weights of n columns: y = xW + b, g = GELU(xW2 + b2), t = Gemm(x2, W3^T), r = xW4 + x.
std::string products(int64_t n) {
  return fmt::format(R"(graph g(%x: f32[2,5,64], %x2: f32[10,64], %w: f32[64,{0}], %b: f32[{0}], %w2: f32[64,{0}], %b2: f32[{0}], %w3: f32[{0},64], %w4: f32[64,64]) -> (%y, %g, %t, %r) {{
  const %half: f32[] = [0.5]
  const %one: f32[] = [1]
  const %rsqrt2: f32[] = [0.70710678]
  %p = MatMul(%x, %w)
  %y = Add(%p, %b)
  %p2 = MatMul(%x, %w2)
  %q = Add(%p2, %b2)
  %qs = Mul(%q, %rsqrt2)
  %e = Erf(%qs)
  %e1 = Add(%e, %one)
  %qh = Mul(%q, %half)
  %g = Mul(%qh, %e1)
  %t = Gemm(%x2, %w3) {{transB=1}}
  %p4 = MatMul(%x, %w4)
  %r = Add(%p4, %x)
}}
)",
                     n);
}

TEST_F(CudaMatmul, UnalignedOutputRowsMatchTheCpuPaddedOrNot) {
  for (int64_t n : {37, 1, 40})
    for (const char* precision : {"fp32", "bf16"})
      for (bool pad : {true, false}) {
        const Graph g = with_constant_weights(parse_graph(products(n)), 64);
        Options options;
        options.device = "cuda";
        options.precision = precision;
        options.cuda_pad_gemm_columns = pad;
        Session gpu = Session::from_graph(g, Mode::compiled, options, {});
        Session cpu = Session::from_graph(g, Mode::compiled, Options{}, {});
        for (uint64_t seed = 1; seed <= 3; ++seed) {  // launched, captured, replayed
          const std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
          const std::map<std::string, Tensor> got = gpu.run(inputs), want = cpu.run(inputs);
          for (const char* out : {"y", "g", "t", "r"})
            expect_matches_cpu(got.at(out), want.at(out), precision,
                               fmt::format("n {} {} pad {} seed {} output {}", n, precision, pad, seed, out));
        }
      }
}

// The wgmma GEMM template as the route of these products (Hopper only): forced on, every product with
// a template epilogue (bias, bias + GELU, the Gemm, the residual) runs on it and matches the CPU; in
// auto the measured choice matches too. Widths 40 and 200 (16-byte rows: no padded weight), 10 rows.
TEST_F(CudaMatmul, GemmTemplateRouteMatchesTheCpu) {
  const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
  if (probe.devices.at(size_t(probe.device)).compute_major != 9) GTEST_SKIP() << "SKIPPED: the wgmma GEMM template needs sm_90a";
  for (int64_t n : {40, 200})
    for (const char* precision : {"bf16", "fp16"})
      for (const char* mode : {"on", "auto"}) {
        const Graph g = with_constant_weights(parse_graph(products(n)), 64);
        Options options;
        options.device = "cuda";
        options.precision = precision;
        options.cuda_gemm_templates = mode;
        Session gpu = Session::from_graph(g, Mode::compiled, options, {});
        Session cpu = Session::from_graph(g, Mode::compiled, Options{}, {});
        const uint64_t before = backend::cuda::gemm_template_route_launches();
        for (uint64_t seed = 1; seed <= 3; ++seed) {  // launched, captured, replayed
          const std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
          const std::map<std::string, Tensor> got = gpu.run(inputs), want = cpu.run(inputs);
          for (const char* out : {"y", "g", "t", "r"})
            expect_matches_cpu(got.at(out), want.at(out), precision,
                               fmt::format("n {} {} templates {} seed {} output {}", n, precision, mode, seed, out));
        }
        // Forced on: four products, each launched on the template in the first run at least.
        if (std::string(mode) == "on") {
          EXPECT_GE(backend::cuda::gemm_template_route_launches() - before, 4u) << n;
        }
      }
}

// The route builds its kernels when it runs, not when the session is prepared: the first run (nothing
// stored) builds every config of every product, a second session on the same tuning store builds at most
// the stored choice of each of the four products, and the outputs agree with the CPU.
TEST_F(CudaMatmul, GemmTemplateRouteBuildsKernelsOnlyWhenItRuns) {
  const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
  if (probe.devices.at(size_t(probe.device)).compute_major != 9) GTEST_SKIP() << "SKIPPED: the wgmma GEMM template needs sm_90a";
  const Graph g = with_constant_weights(parse_graph(products(200)), 64);
  Options options;
  options.device = "cuda";
  options.precision = "bf16";
  options.cuda_gemm_templates = "auto";
  options.cache_dir = (std::filesystem::temp_directory_path() /
                       fmt::format("kiln-route-build-test-{}", std::chrono::steady_clock::now().time_since_epoch().count()))
                          .string();
  Session cpu = Session::from_graph(g, Mode::compiled, Options{}, {});
  const std::map<std::string, Tensor> inputs = make_inputs(cpu.graph(), {}, 1);
  const std::map<std::string, Tensor> want = cpu.run(inputs);
  struct RemoveAfter {
    std::string dir;
    ~RemoveAfter() { std::filesystem::remove_all(dir); }
  } remove_after{options.cache_dir};
  for (int process = 0; process < 2; ++process) {
    const uint64_t before = backend::cuda::gemm_template_route_kernels_built();
    Session gpu = Session::from_graph(g, Mode::compiled, options, {});
    EXPECT_EQ(backend::cuda::gemm_template_route_kernels_built(), before) << "prepared " << process;
    for (int run = 0; run < 3; ++run) {  // launched (building), captured, replayed
      const std::map<std::string, Tensor> got = gpu.run(inputs);
      const uint64_t built = backend::cuda::gemm_template_route_kernels_built() - before;
      if (process == 0)
        EXPECT_GE(built, 4 * backend::cuda::hopper_gemm_template_configs().size() / 2) << "measured: most configs built";
      else
        EXPECT_LE(built, 4u) << "from the store: at most the choice of each product";
      for (const char* out : {"y", "g", "t", "r"})
        expect_matches_cpu(got.at(out), want.at(out), "bf16", fmt::format("session {} run {} output {}", process, run, out));
    }
  }
}

}  // namespace
}  // namespace kiln
