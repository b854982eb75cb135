// Pow(x, 3) in f32 generated kernels (GPT-2's tanh GELU) is computed in double, not by a scalar powf
// call: within 1 ulp of the exact cube everywhere, exact on the special values, and vectorised.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "codegen/cpu/scalar_cpp.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "loops/pointwise.h"

namespace kiln {
namespace {

TEST(PowCube, CompiledMatchesTheExactCubeAndPowOnSpecialValues) {
  GraphBuilder b("cube");
  ValueId x = b.input("x", DType::f32, {4096});
  // Times one (exact for every value) so that the pass fuses it: a lone node stays eager.
  b.output(b.op(OpKind::Mul, {b.op(OpKind::Pow, {x, b.scalar(DType::f32, 3.0)}), b.scalar(DType::f32, 1.0)}), "y");
  Options o;
  o.cache_dir = (std::filesystem::temp_directory_path() / ("kiln_pow_cube_" + std::to_string(getpid()))).string();
  Session s = Session::from_graph(b.build(), Mode::compiled, o);
  EXPECT_EQ(s.stats().fused_kernels, 1);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> in = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 0.0f, -0.0f, 1e13f, -1e13f, 1e-20f,
                           -1e-20f, 1e-40f, std::numeric_limits<float>::denorm_min(), 1.0f, -1.0f, 3.0f};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-100.0f, 100.0f);
  while (in.size() < 4096) in.push_back(d(rng) * std::exp2(float(int(rng() % 40)) - 20.0f));
  Tensor got = s.run({{"x", Tensor::from_vector<float>(DType::f32, {4096}, in)}}).at("y");
  for (size_t i = 0; i < in.size(); ++i) {
    const float y = got.data<float>()[i];
    const float want = std::pow(in[i], 3.0f);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y)) << in[i];
      continue;
    }
    if (std::isinf(want) || want == 0.0f) {  // infinities, overflow, zeros with their sign: exactly pow's
      EXPECT_EQ(std::memcmp(&y, &want, sizeof y), 0) << std::hexfloat << in[i] << ": " << y << " vs " << want;
      continue;
    }
    // Within one ulp of the exact cube (the spacing of floats at its binade; below FLT_MIN, the subnormal one).
    const long double exact = static_cast<long double>(in[i]) * in[i] * in[i];
    int e = 0;
    std::frexp(exact, &e);
    const long double ulp = std::ldexp(1.0L, std::max(e - 1, std::numeric_limits<float>::min_exponent - 1) - 23);
    EXPECT_LE(std::fabs(static_cast<long double>(y) - exact), ulp) << std::hexfloat << in[i] << ": " << y;
  }
  std::filesystem::remove_all(o.cache_dir);
}

TEST(PowCube, EmittedWithoutAScalarPowCall) {
  loops::ScalarExpr x = loops::load(0, loops::Expr(0), DType::f32);
  loops::ScalarExpr cube = loops::binary(loops::BinaryOp::Pow, x, loops::constant(3.0, DType::f32));
  std::string text = codegen::cpu::operation_cpp(cube, {"v0", "3.0f"});
  EXPECT_EQ(text.find("pow"), std::string::npos) << text;
  loops::ScalarExpr other = loops::binary(loops::BinaryOp::Pow, x, loops::constant(2.5, DType::f32));
  EXPECT_NE(codegen::cpu::operation_cpp(other, {"v0", "2.5f"}).find("std::pow"), std::string::npos);
}

}  // namespace
}  // namespace kiln
