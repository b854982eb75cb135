// SiLU (Mul(x, Sigmoid(x))) and HardSwish (the ONNX op, decomposed before fusion) after a Conv join its
// library call as oneDNN post-ops (swish, hardswish): the plan shows them in the Conv groups, and the
// compiled net matches the fp64 reference, NaN and infinities included; after a MatMul they stay out.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/temp_dir.h"
#include "kiln/builder.h"
#include "kiln/session.h"

namespace kiln {
namespace {

Graph net() {
  GraphBuilder b("acts");
  ValueId x = b.input("x", DType::f32, {2, 8, 10, 10});
  auto conv = [&](ValueId in, int64_t c_in, int64_t c_out, uint64_t seed) {
    ValueId w = b.constant(random_uniform(DType::f32, {c_out, c_in, 3, 3}, -0.3, 0.3, seed));
    ValueId bias = b.constant(random_uniform(DType::f32, {c_out}, -0.3, 0.3, seed + 1));
    return b.op(OpKind::Conv, {in, w, bias}, {{"pads", {1, 1, 1, 1}}});
  };
  ValueId h = b.op(OpKind::HardSwish, {conv(x, 8, 16, 1)});
  ValueId c = conv(h, 16, 16, 3);
  ValueId s = b.op(OpKind::Mul, {b.op(OpKind::Sigmoid, {c}), c});  // Sigmoid first: either order matches
  ValueId m = b.op(OpKind::MatMul, {s, b.constant(random_uniform(DType::f32, {10, 6}, -0.3, 0.3, 5))});
  b.output(b.op(OpKind::Mul, {m, b.op(OpKind::Sigmoid, {m})}), "y");
  return b.build();
}

TEST(ConvActivations, SiluAndHardSwishJoinTheConvCall) {
  test_common::TempDir dir("kiln-conv-acts");
  Options o;
  o.cache_dir = (dir.root() / "cache").string();
  const Graph g = net();
  Session compiled = Session::from_graph(g, Mode::compiled, o);
  Session reference = Session::from_graph(g, Mode::reference, o);
  std::vector<std::string> library;
  for (const FusionGroup& grp : compiled.graph().groups)
    if (grp.kind == "library") library.push_back(grp.label);
  EXPECT_NE(std::find_if(library.begin(), library.end(), [](const std::string& l) { return l.rfind("conv+hard_swish", 0) == 0; }),
            library.end()) << fmt::format("{}", fmt::join(library, "; "));
  EXPECT_NE(std::find_if(library.begin(), library.end(), [](const std::string& l) { return l.rfind("conv+silu", 0) == 0; }),
            library.end()) << fmt::format("{}", fmt::join(library, "; "));
  for (const std::string& l : library) EXPECT_EQ(l.find("matmul+silu"), std::string::npos) << l;

  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::uniform_real_distribution<double> p(0.0, 1.0);
  for (double specials : {0.0, 0.01}) {
    Tensor x = Tensor::empty(DType::f32, {2, 8, 10, 10});
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double q = p(rng);
      x.data<float>()[i] = q < specials / 3 ? NAN : q < 2 * specials / 3 ? INFINITY : q < specials ? -INFINITY : u(rng);
    }
    const Tensor got = compiled.run({{"x", x}}).at("y"), want = reference.run({{"x", x}}).at("y");
    int bad = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double gv = got.as_double(i), wv = want.as_double(i);
      const bool ok = std::isnan(wv) ? std::isnan(gv) : std::isinf(wv) ? gv == wv : std::fabs(gv - wv) <= 1e-4 * std::max(1.0, std::fabs(wv));
      if (!ok && ++bad <= 3) ADD_FAILURE() << "specials " << specials << ": element " << i << " got " << gv << " want " << wv;
    }
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
}  // namespace kiln
