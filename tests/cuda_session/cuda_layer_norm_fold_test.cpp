// LayerNorms folded into the products after them (setting cuda_fold_layer_norm) on the GPU machine
// (skipped elsewhere with "SKIPPED: ..."; the fold needs sm_90a): bert's pattern, a LayerNorm whose output
// a product reads and a later residual Add too, and one read by its product alone, in bf16 and fp16,
// against the CPU on launched, captured and replayed runs, with the fold on and off and the template
// route forced on and measured (auto). The plan is checked from a profiled run: with the fold, no
// LayerNorm is left in a generated kernel.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "backend/cuda/device_probe.h"
#include "gpu_checks.h"
#include "ir/parser.h"
#include "kiln/session.h"

namespace kiln {
namespace {

using gpu_checks::expect_matches_cpu;
using gpu_checks::with_constant_weights;

// h = LN(x); y = GELU(h W + b); o = y W2 + b2 + h; z = LN2(o) W3 + b3. Inputs named w* / b* become
// constants (with_constant_weights), the LayerNorms' scales (wg*) and biases (bg*) among them.
constexpr const char* kGraph = R"(graph g(%x: f32[2,9,64], %wg: f32[64], %bg: f32[64], %w: f32[64,96], %b: f32[96], %w2: f32[96,64], %b2: f32[64], %wg2: f32[64], %bg2: f32[64], %w3: f32[64,40], %b3: f32[40]) -> (%y, %o, %z) {
  const %half: f32[] = [0.5]
  const %one: f32[] = [1]
  const %rsqrt2: f32[] = [0.70710678]
  %h = LayerNormalization(%x, %wg, %bg) {axis=-1, epsilon=1e-05}
  %p = MatMul(%h, %w)
  %q = Add(%p, %b)
  %qs = Mul(%q, %rsqrt2)
  %e = Erf(%qs)
  %e1 = Add(%e, %one)
  %qh = Mul(%q, %half)
  %y = Mul(%qh, %e1)
  %p2 = MatMul(%y, %w2)
  %s = Add(%p2, %b2)
  %o = Add(%s, %h)
  %h2 = LayerNormalization(%o, %wg2, %bg2) {axis=-1, epsilon=1e-05}
  %p3 = MatMul(%h2, %w3)
  %z = Add(%p3, %b3)
}
)";

// LayerNorms in a profiled run's generated kernels, and in its library steps.
std::pair<int, int> layer_norms(const Session& s, const std::map<std::string, Tensor>& inputs) {
  RunProfile profile;
  s.run(inputs, &profile);
  int generated = 0, library = 0;
  for (const StepProfile& step : profile.steps)
    for (const std::string& op : step.source_ops)
      if (op == "LayerNormalization") (step.kind == "library" ? library : generated)++;
  return {generated, library};
}

TEST(CudaLayerNormFold, MatchesTheCpuFoldedOrNot) {
  const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
  if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
  if (probe.devices.at(size_t(probe.device)).compute_major != 9) GTEST_SKIP() << "SKIPPED: the fold needs sm_90a";
  const Graph g = with_constant_weights(parse_graph(kGraph), 64);
  Session cpu = Session::from_graph(g, Mode::compiled, Options{}, {});
  for (const char* precision : {"bf16", "fp16"})
    for (bool fold : {true, false})
      for (const char* templates : {"on", "auto"}) {
        Options options;
        options.device = "cuda";
        options.precision = precision;
        options.cuda_fold_layer_norm = fold;
        options.cuda_gemm_templates = templates;
        Session gpu = Session::from_graph(g, Mode::compiled, options, {});
        const std::string what = fmt::format("{} fold {} templates {}", precision, fold, templates);
        for (uint64_t seed = 1; seed <= 3; ++seed) {  // launched, captured, replayed
          const std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
          const std::map<std::string, Tensor> got = gpu.run(inputs), want = cpu.run(inputs);
          for (const char* out : {"y", "o", "z"})
            expect_matches_cpu(got.at(out), want.at(out), precision, fmt::format("{} seed {} output {}", what, seed, out));
        }
        const auto [generated, library] = layer_norms(gpu, make_inputs(gpu.graph(), {}, 9));
        EXPECT_EQ(generated, fold ? 0 : 2) << what;
        EXPECT_EQ(library, fold ? 2 : 0) << what;
      }
}

}  // namespace
}  // namespace kiln
