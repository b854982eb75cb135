// Half precision on the CUDA backend (the GPU machine; skipped elsewhere with "SKIPPED: ..."): an fp32
// model compiled with precision bf16 / fp16 keeps its fp32 interface and meets the low-precision rule
// against the CPU's fp32 outputs on every run (launched, captured, replayed); a model that holds bf16
// tensors itself runs as it is.
#include <gtest/gtest.h>

#include "backend/cuda/device_probe.h"
#include "ir/parser.h"
#include "kiln/session.h"
#include "runtime/compare.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

class CudaPrecision : public ::testing::Test {
 protected:
  void SetUp() override {
    const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
  }
  static void expect_low_precision(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want,
                                   const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (const auto& [name, w] : want) {
      ASSERT_TRUE(got.count(name)) << what << ": no output " << name;
      EXPECT_EQ(got.at(name).dtype(), w.dtype()) << what << " output " << name;
      const LowPrecisionResult r = low_precision_rule(got.at(name), w);
      EXPECT_TRUE(r.pass) << what << " output " << name << ": " << r.detail;
    }
  }
};

TEST_F(CudaPrecision, TheDemoTransformerInBf16AndFp16MeetsTheRuleOnEveryRun) {
  const std::map<std::string, int64_t> dims{{"batch", 2}, {"seq", 33}};
  Session cpu = Session::from_graph(demo_transformer(), Mode::compiled, Options{}, dims);
  for (const char* precision : {"bf16", "fp16"}) {
    Options options;
    options.device = "cuda";
    options.precision = precision;
    Session gpu = Session::from_graph(demo_transformer(), Mode::compiled, options, dims);
    for (uint64_t seed = 1; seed <= 4; ++seed) {  // run 1 launches, run 2 captures, runs 3-4 replay
      const std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
      expect_low_precision(gpu.run(inputs), cpu.run(inputs), std::string(precision) + " run " + std::to_string(seed));
    }
    EXPECT_EQ(gpu.stats().graph_captures, 1) << precision;
  }
}

// bf16 in, bf16 out: a matmul with its bias, a masked softmax and a LayerNorm, against the CPU (whose
// node kernels run each bf16 op in f32 and round after it).
TEST_F(CudaPrecision, ABf16ModelRunsAsItIs) {
  // Scaled so that the scores stay near 1 (a saturated softmax would amplify the rounding differences).
  const std::string text = R"(graph g(%x: bf16[3,37,64], %m: bf16[3,37,37], %w: bf16[64,64], %b: bf16[64], %g: bf16[64], %c: bf16[64]) -> (%y) {
  const %k: bf16[] = [0.001]
  %p = MatMul(%x, %w)
  %q = Add(%p, %b)
  %t = Transpose(%q) {perm=[0, 2, 1]}
  %s = MatMul(%q, %t)
  %ss = Mul(%s, %k)
  %sm = Add(%ss, %m)
  %a = Softmax(%sm) {axis=-1}
  %o = MatMul(%a, %q)
  %y = LayerNormalization(%o, %g, %c) {axis=-1, epsilon=1e-05}
}
)";
  Options options;
  options.device = "cuda";
  Session gpu = Session::from_graph(parse_graph(text), Mode::compiled, options, {});
  Session cpu = Session::from_graph(parse_graph(text), Mode::compiled, Options{}, {});
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
    expect_low_precision(gpu.run(inputs), cpu.run(inputs), "run " + std::to_string(seed));
  }
}

}  // namespace
}  // namespace kiln
