// The attention kernel (backend/cuda/cuda_attention.cpp) against the CPU's unfused chain (the GPU
// machine; skipped elsewhere with "SKIPPED: ..."): the exporter's form (Transposes, both scales, an
// additive mask, the NaN guard, the Transpose back) and the plain one, at sizes no tile divides, with
// fully masked rows, partly masked rows, NaN and +inf among the inputs; fp32 within the accuracy of an
// unfused run, bf16 and fp16 by the low-precision rule. A run's profile names the attention step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "backend/cuda/cuda_attention.h"
#include "backend/cuda/device_probe.h"
#include "gpu_checks.h"
#include "ir/parser.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

using gpu_checks::expect_matches_cpu;
using gpu_checks::with_constant_weights;

std::string exported(int64_t b, int64_t sq, int64_t sk, int64_t h, int64_t d, bool guard) {
  const std::string q = fmt::format("f32[{},{},{},{}]", b, sq, h, d), kv = fmt::format("f32[{},{},{},{}]", b, sk, h, d);
  std::string text = fmt::format(
      "graph g(%q: {}, %k: {}, %v: {}, %m: f32[{},1,{},{}]) -> (%y) {{\n"
      "  const %c: f32[] = [0.35355339]\n  const %z: f32[] = [0]\n"
      "  %qt = Transpose(%q) {{perm=[0, 2, 1, 3]}}\n  %kt = Transpose(%k) {{perm=[0, 2, 3, 1]}}\n"
      "  %vt = Transpose(%v) {{perm=[0, 2, 1, 3]}}\n  %qs = Mul(%qt, %c)\n  %ks = Mul(%kt, %c)\n"
      "  %s = MatMul(%qs, %ks)\n  %sm = Add(%s, %m)\n  %p = Softmax(%sm) {{axis=-1}}\n",
      q, kv, kv, b, sq, sk);
  if (guard) text += "  %n = IsNaN(%p)\n  %pg = Where(%n, %z, %p)\n  %o = MatMul(%pg, %vt)\n";
  else text += "  %o = MatMul(%p, %vt)\n";
  return text + "  %y = Transpose(%o) {perm=[0, 2, 1, 3]}\n}\n";
}

class CudaAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
  }

  // Inputs with the hard cases: query row 1 of batch 0 fully masked, row 2 masked but for one key, a
  // NaN in a query of row 3, +inf in a key (every row of that batch and head sees it).
  static std::map<std::string, Tensor> hard_inputs(const Graph& g, uint64_t seed) {
    std::map<std::string, Tensor> in = make_inputs(g, {}, seed);
    int64_t sq = in.at("q").dim(2);  // a plain graph's [B,H,S,D]; the exporter's has a mask to say
    if (in.count("m")) {  // without a mask only the NaN and the +inf
      Tensor& m = in.at("m");
      const int64_t sk = m.dim(3);
      sq = m.dim(2);
      for (int64_t j = 0; j < sk; ++j) {
        m.data<float>()[1 * sk + j] = -INFINITY;
        m.data<float>()[2 * sk + j] = j == sk - 1 ? 0.0f : -INFINITY;
      }
    }
    // Row 3 of batch 0, head 0 in the exporter's [B,S,H,D] layout (some query element in others).
    Tensor& q = in.at("q");
    if (sq > 3) q.data<float>()[std::min(3 * q.dim(2) * q.dim(3), q.numel() - 1)] = NAN;
    Tensor& k = in.at(in.count("k") ? "k" : "kt");  // plain graphs take K transposed
    k.data<float>()[k.numel() - 1] = INFINITY;
    return in;
  }

  // kernel: cuda_attention_kernel (warps given: the mma.sync kernel's, so "mma"); consumers: the
  // Hopper kernel's.
  static void check(const std::string& text, const char* precision, bool hard, int64_t warps = 0,
                    const char* kernel = nullptr, int64_t consumers = 0) {
    Options options;
    options.device = "cuda";
    options.precision = precision;
    options.cuda_attention = "on";  // fp32 too (auto leaves fp32 to the unfused chain)
    options.cuda_attention_warps = warps;
    options.cuda_attention_kernel = kernel ? kernel : warps ? "mma" : "auto";
    options.cuda_attention_consumers = consumers;
    const uint64_t wgmma_before = backend::cuda::attention_wgmma_launches();
    Session gpu = Session::from_graph(parse_graph(text), Mode::compiled, options, {});
    Session cpu = Session::from_graph(parse_graph(text), Mode::compiled, Options{}, {});
    for (uint64_t seed = 1; seed <= 3; ++seed) {  // launched, captured, replayed
      const std::map<std::string, Tensor> inputs = hard ? hard_inputs(gpu.graph(), seed) : make_inputs(gpu.graph(), {}, seed);
      expect_matches_cpu(gpu.run(inputs).at("y"), cpu.run(inputs).at("y"), precision,
                         fmt::format("{} seed {}", precision, seed));
    }
    RunProfile profile;
    gpu.run(make_inputs(gpu.graph(), {}, 9), &profile);
    int attention = 0;
    for (const StepProfile& st : profile.steps) attention += st.label.find("attention") != std::string::npos;
    EXPECT_EQ(attention, 1) << "one attention step";
    if (options.cuda_attention_kernel.rfind("wgmma", 0) == 0) {
      EXPECT_GT(backend::cuda::attention_wgmma_launches(), wgmma_before) << "the Hopper kernel ran";
    }
  }
};

TEST_F(CudaAttention, TheExportedFormMatchesTheUnfusedChainWithTheHardCases) {
  for (bool guard : {true, false}) {
    check(exported(2, 37, 37, 3, 64, guard), "fp32", true);
    check(exported(1, 5, 53, 2, 40, guard), "fp32", true);  // a head dim that is not a multiple of 32
  }
}

TEST_F(CudaAttention, HalfPrecisionsMeetTheLowPrecisionRule) {
  for (const char* precision : {"bf16", "fp16"}) {
    check(exported(1, 128, 128, 12, 64, true), precision, false);
    check(exported(2, 33, 70, 4, 32, true), precision, false);
  }
}

TEST_F(CudaAttention, HalfPrecisionsKeepTheHardCases) {
  for (const char* precision : {"bf16", "fp16"}) {
    check(exported(2, 37, 37, 3, 64, true), precision, true);
    check(exported(1, 70, 130, 2, 32, false), precision, true);  // two key tiles and part of a third
  }
}

// The block each size takes by default (attention_mma_warps: four warps at these query rows), with the
// hard cases and query rows no block divides; then blocks of 1, 2 and 4 warps forced by the setting,
// over one, two and parts of three key tiles (the two-stage pipeline), and over fewer keys than a tile.
TEST_F(CudaAttention, EveryBlockSizeKeepsTheHardCases) {
  check(exported(1, 128, 128, 12, 64, true), "bf16", true);
  check(exported(1, 390, 390, 12, 64, true), "bf16", true);
  check(exported(2, 390, 200, 12, 64, false), "fp16", true);
  for (int64_t warps : {1, 2, 4}) {
    SCOPED_TRACE(fmt::format("{} warps", warps));
    check(exported(1, 77, 150, 2, 64, true), "bf16", true, warps);
    check(exported(1, 33, 64, 3, 128, false), "fp16", true, warps);  // one stage: head dim 128
    check(exported(2, 20, 9, 2, 16, true), "bf16", true, warps);    // fewer keys than a tile
  }
}

// The Hopper kernel (TMA + wgmma, sm_90 only: elsewhere the forced setting is a user error, which the
// test checks instead) with one and two consumer warpgroups at head dims 64 and 128, with and without its
// overlap: the hard cases, query
// rows no block divides, keys over one tile, several and part of one (KT 128, or 64 at head dim 128 with
// two consumers), a single query and a single key. Each check asserts that it ran.
TEST_F(CudaAttention, TheHopperKernelKeepsTheHardCases) {
  const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
  const backend::cuda::DeviceInfo& gpu = probe.devices.at(size_t(probe.device));
  if (gpu.compute_major != 9 || gpu.compute_minor != 0) {
    Options options;
    options.device = "cuda";
    options.precision = "bf16";
    options.cuda_attention_kernel = "wgmma";
    EXPECT_THROW(Session::from_graph(parse_graph(exported(1, 8, 8, 1, 64, true)), Mode::compiled, options, {}), UserError);
    GTEST_SKIP() << "SKIPPED: the wgmma attention kernel needs an sm_90 GPU";
  }
  for (int64_t consumers : {1, 2}) {
    SCOPED_TRACE(fmt::format("{} consumers", consumers));
    check(exported(2, 37, 37, 3, 64, true), "bf16", true, 0, "wgmma", consumers);
    check(exported(1, 200, 390, 2, 64, false), "fp16", true, 0, "wgmma", consumers);
    check(exported(1, 130, 300, 2, 128, true), "bf16", true, 0, "wgmma", consumers);
    check(exported(1, 70, 9, 3, 128, false), "fp16", true, 0, "wgmma", consumers);
    check(exported(1, 1, 1, 2, 64, true), "bf16", false, 0, "wgmma", consumers);
    check(exported(1, 128, 128, 12, 64, true), "bf16", false, 0, "wgmma", consumers);  // bert's
    // Without the overlap (each tile's products waited on before its softmax).
    check(exported(2, 37, 300, 3, 64, true), "bf16", true, 0, "wgmma_serial", consumers);
    check(exported(1, 130, 300, 2, 128, false), "fp16", true, 0, "wgmma_serial", consumers);
  }
  // auto picks it for these sizes on this GPU.
  const uint64_t before = backend::cuda::attention_wgmma_launches();
  check(exported(1, 390, 390, 12, 64, true), "bf16", true);
  EXPECT_GT(backend::cuda::attention_wgmma_launches(), before);
}

// Without a mask and with a positive scale the kernels keep the scores unscaled until the exponent;
// NaN in a query and +inf in a key, both kernels, keys over two tiles and part of a third.
TEST_F(CudaAttention, AnUnmaskedChainScalesInsideTheExponent) {
  const std::string text = R"(graph g(%q: f32[1,2,77,64], %kt: f32[1,2,64,300], %v: f32[1,2,300,64]) -> (%y) {
  const %c: f32[] = [0.125]
  %s = MatMul(%q, %kt)
  %ss = Mul(%s, %c)
  %p = Softmax(%ss) {axis=-1}
  %y = MatMul(%p, %v)
}
)";
  for (const char* kernel : {"auto", "mma"})
    for (const char* precision : {"bf16", "fp16"}) {
      SCOPED_TRACE(fmt::format("{} {}", kernel, precision));
      check(text, precision, true, 0, kernel);
    }
}

// K given already transposed ([B,H,D,Sk], as some exporters write it): its head-dim stride is Sk, so
// the kernel loads element by element instead of by 16-byte asynchronous copies.
TEST_F(CudaAttention, AnOperandWithoutUnitHeadDimStrideTakesTheElementLoads) {
  for (int64_t warps : {1, 4}) {
    SCOPED_TRACE(fmt::format("{} warps", warps));
    const int64_t b = 1, h = 2, sq = 45, sk = 70, d = 32;
    const std::string text = fmt::format(
        "graph g(%q: f32[{b},{h},{sq},{d}], %k: f32[{b},{h},{d},{sk}], %v: f32[{b},{h},{sk},{d}], %m: f32[{b},1,{sq},{sk}])"
        " -> (%y) {{\n  const %c: f32[] = [0.17677669]\n  %s = MatMul(%q, %k)\n  %sc = Mul(%s, %c)\n"
        "  %sm = Add(%sc, %m)\n  %p = Softmax(%sm) {{axis=-1}}\n  %y = MatMul(%p, %v)\n}}\n",
        fmt::arg("b", b), fmt::arg("h", h), fmt::arg("sq", sq), fmt::arg("sk", sk), fmt::arg("d", d));
    check(text, "bf16", true, warps);
  }
}

// Q, K and V made from x [B,S,E] (E = H*D) by one product split along its last axis (gpt2's form), or
// by three projections that the compiler merges into one (bert's form); either way the attention
// kernel reads them as columns of one tensor, so the run has one product and one attention step.
std::string projected(int64_t b, int64_t s, int64_t h, int64_t d, bool split_by_exporter) {
  const int64_t e = h * d;
  std::string text = fmt::format("graph g(%x: f32[{b},{s},{e}], %m: f32[{b},1,1,{s}]", fmt::arg("b", b),
                                 fmt::arg("s", s), fmt::arg("e", e));
  if (split_by_exporter) text += fmt::format(", %w: f32[{0},{1}], %bias: f32[{1}]", e, 3 * e);
  else
    for (const char* n : {"q", "k", "v"}) text += fmt::format(", %w{0}: f32[{1},{1}], %b{0}: f32[{1}]", n, e);
  text += fmt::format(") -> (%y) {{\n  const %shape: i64[4] = [{}, {}, {}, {}]\n  const %c: f32[] = [{}]\n", b, s, h, d,
                      1.0 / std::sqrt(double(d)));
  if (split_by_exporter)
    text += fmt::format("  const %sizes: i64[3] = [{0}, {0}, {0}]\n  %p = MatMul(%x, %w)\n  %pb = Add(%p, %bias)\n"
                        "  %q, %k, %v = Split(%pb, %sizes) {{axis=2}}\n",
                        e);
  else
    for (const char* n : {"q", "k", "v"}) text += fmt::format("  %p{0} = MatMul(%x, %w{0})\n  %{0} = Add(%b{0}, %p{0})\n", n);
  return text +
         "  %q4 = Reshape(%q, %shape)\n  %k4 = Reshape(%k, %shape)\n  %v4 = Reshape(%v, %shape)\n"
         "  %qt = Transpose(%q4) {perm=[0, 2, 1, 3]}\n  %kt = Transpose(%k4) {perm=[0, 2, 3, 1]}\n"
         "  %vt = Transpose(%v4) {perm=[0, 2, 1, 3]}\n  %qs = Mul(%qt, %c)\n  %sc = MatMul(%qs, %kt)\n"
         "  %sm = Add(%sc, %m)\n  %pr = Softmax(%sm) {axis=-1}\n  %o = MatMul(%pr, %vt)\n"
         "  %y = Transpose(%o) {perm=[0, 2, 1, 3]}\n}\n";
}

TEST_F(CudaAttention, ProjectionsSplitOrMergedAreReadAsColumnsOfOneProduct) {
  for (bool split_by_exporter : {true, false})
    for (const char* precision : {"fp32", "bf16", "fp16"}) {
      // head dim 64 in fp16: the Hopper kernel on sm_90 (TMA boxes of column slices)
      const int64_t b = 1, s = 45, h = 4, d = std::string(precision) == "fp16" ? 64 : 32;
      const Graph g = with_constant_weights(parse_graph(projected(b, s, h, d, split_by_exporter)), h * d);
      Options options;
      options.device = "cuda";
      options.precision = precision;
      options.cuda_attention = "on";
      Session gpu = Session::from_graph(g, Mode::compiled, options, {});
      Session cpu = Session::from_graph(g, Mode::compiled, Options{}, {});
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
        Tensor& m = inputs.at("m");
        for (int64_t j = 0; j < s; ++j) m.data<float>()[j] = j % 3 == 0 ? -INFINITY : 0.0f;  // every third key masked
        expect_matches_cpu(gpu.run(inputs).at("y"), cpu.run(inputs).at("y"), precision,
                           fmt::format("split {} {} seed {}", split_by_exporter, precision, seed));
      }
      RunProfile profile;
      gpu.run(make_inputs(gpu.graph(), {}, 9), &profile);
      int attention = 0, products = 0;
      std::string labels;
      for (const StepProfile& st : profile.steps) {
        attention += st.label.find("attention") != std::string::npos;
        for (const char* core : {"matmul", "gemm", "bmm"}) products += st.label.rfind(core, 0) == 0;
        labels += st.label + " ";
      }
      EXPECT_EQ(attention, 1) << labels;
      EXPECT_EQ(products, 1) << "one product for Q, K and V: " << labels;
    }
}

// The product scaled after the MatMul (`scores / sqrt(d)`), with an additive mask.
TEST_F(CudaAttention, AScaleAfterTheProduct) {
  for (const char* precision : {"fp32", "bf16"})
    check(R"(graph g(%q: f32[1,2,37,32], %kt: f32[1,2,32,50], %v: f32[1,2,50,32], %m: f32[1,1,37,50]) -> (%y) {
  const %c: f32[] = [5.656854]
  %s = MatMul(%q, %kt)
  %ss = Div(%s, %c)
  %sm = Add(%ss, %m)
  %p = Softmax(%sm) {axis=-1}
  %y = MatMul(%p, %v)
}
)",
          precision, false);
}

TEST_F(CudaAttention, PlainTensorsWithoutAMask) {
  check(R"(graph g(%q: f32[2,3,45,16], %kt: f32[2,3,16,77], %v: f32[2,3,77,16]) -> (%y) {
  %s = MatMul(%q, %kt)
  %p = Softmax(%s) {axis=-1}
  %y = MatMul(%p, %v)
}
)",
        "fp32", false);
}

}  // namespace
}  // namespace kiln
