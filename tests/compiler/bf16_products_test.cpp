// precision bf16 on the CPU: a compiled transformer block whose library products (the tuned ones too)
// read bf16 operands meets the low-precision rule against the fp64 reference and is not the fp32
// compile's result; eager bf16 and CPU fp16 are user errors, and so is bf16 on a CPU without native
// bf16 kernels.
#include <gtest/gtest.h>

#include "common/temp_dir.h"
#include "kernels/onednn/fused.h"
#include "kiln/builder.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

// LayerNorm, a product with bias and tanh (64 x 256 x 256: tuned), a product with bias and residual,
// Softmax: the rows stay f32, the products read bf16.
Graph block() {
  GraphBuilder b("block");
  const int64_t rows = 64, width = 256;
  ValueId x = b.input("x", DType::f32, {rows, width});
  ValueId h = b.op(OpKind::LayerNormalization,
                   {x, b.constant("g", random_uniform(DType::f32, {width}, 0.5, 1.5, 1)),
                    b.constant("be", random_uniform(DType::f32, {width}, -0.5, 0.5, 2))},
                   {{"axis", int64_t{-1}}});
  auto linear = [&](ValueId in, uint64_t seed) {
    ValueId w = b.constant(random_uniform(DType::f32, {width, width}, -0.1, 0.1, seed));
    return b.op(OpKind::Add, {b.op(OpKind::MatMul, {in, w}), b.constant(random_uniform(DType::f32, {width}, -0.1, 0.1, seed + 1))});
  };
  ValueId u = b.op(OpKind::Tanh, {linear(h, 10)});
  ValueId y = b.op(OpKind::Add, {linear(u, 20), x});
  b.output(b.op(OpKind::Softmax, {y}, {{"axis", int64_t{-1}}}), "y");
  return b.build();
}

Options options_for(const test_common::TempDir& dir, const char* precision, const char* autotune) {
  Options o;
  o.cache_dir = (dir.root() / "cache").string();
  o.precision = precision;
  o.autotune = autotune;
  return o;
}

TEST(Bf16Products, CompiledBlockMeetsTheLowPrecisionRule) {
  if (!onednn::has_native_bf16_matmul()) GTEST_SKIP() << "SKIPPED: this CPU has no AVX512_BF16 or AMX";
  test_common::TempDir dir("kiln-bf16-products");
  const Graph g = block();
  Session reference = Session::from_graph(g, Mode::reference, options_for(dir, "fp32", "off"));
  Session fp32 = Session::from_graph(g, Mode::compiled, options_for(dir, "fp32", "off"));
  const std::map<std::string, Tensor> in = make_inputs(fp32.graph(), {}, 3);
  const Tensor want = reference.run(in).at("y"), f32_got = fp32.run(in).at("y");
  for (const char* autotune : {"off", "fast"}) {  // fast: the tuner checks the bf16 oneDNN candidate too
    Session bf16 = Session::from_graph(g, Mode::compiled, options_for(dir, "bf16", autotune));
    EXPECT_EQ(bf16.stats().library_kernels, fp32.stats().library_kernels) << autotune;
    const Tensor got = bf16.run(in).at("y");
    const LowPrecisionResult r = low_precision_rule(got, want);
    EXPECT_TRUE(r.pass) << autotune << ": " << r.detail;
    if (std::string(autotune) == "off") {  // oneDNN for every product: bf16 operands change the result
      bool differs = false;
      for (int64_t i = 0; i < got.numel() && !differs; ++i) differs = got.data<float>()[i] != f32_got.data<float>()[i];
      EXPECT_TRUE(differs) << "the bf16 compile gave the fp32 compile's bits";
    }
  }
}

TEST(Bf16Products, RefusalsAreUserErrors) {
  test_common::TempDir dir("kiln-bf16-refusals");
  const Graph g = block();
  auto message = [&](Mode mode, const char* precision) {
    try {
      Session::from_graph(g, mode, options_for(dir, precision, "off"));
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message(Mode::eager, "bf16").find("eager mode runs fp32 only"), std::string::npos);
  EXPECT_NE(message(Mode::compiled, "fp16").find("no fp16 products"), std::string::npos);
  if (!onednn::has_native_bf16_matmul()) {
    EXPECT_NE(message(Mode::compiled, "bf16").find("AVX512_BF16 or AMX"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln
