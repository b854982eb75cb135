// passes/narrow_floats.cpp (--precision bf16 / fp16) as IR text in, IR text out, and the compiler's
// refusal of a half precision where the backend computes in fp32 only.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <regex>
#include <vector>

#include "common/interpreter_backend.h"
#include "compiler/compile.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/errors.h"
#include "passes/passes.h"

namespace kiln {
namespace {

std::string narrowed(const std::string& text, DType to) {
  Graph g = parse_graph(text);
  Options options;
  infer_shapes(g, options);
  narrow_floats(g, options, to);
  std::string out = print_graph(g);
  EXPECT_EQ(print_graph(parse_graph(out)), out) << "the narrowed IR does not parse back";
  // Node names (" @Add_0": the parser's, kept as the nodes move) are not what is tested here.
  return std::regex_replace(out, std::regex(" @[A-Za-z0-9_]+\n"), "\n");
}

// The interface keeps f32 (a Cast where each input enters and each output leaves), every value and
// constant inside is bf16, an int input and a Cast to f32 follow.
TEST(NarrowFloats, InsideIsBf16AndTheInterfaceStaysF32) {
  EXPECT_EQ(narrowed(R"(graph g(%x: f32[2,3], %i: i64[2]) -> (%y, %z) {
  const %w: f32[3] = [0.5, 1.5, -2]
  const %one: i64[1] = [1]
  %a = Add(%x, %w)
  %c = Cast(%i) {to="f32"}
  %u = Unsqueeze(%c, %one)
  %y = Mul(%a, %u)
  %z = Relu(%a)
}
)",
                     DType::bf16),
            R"(graph g(%x: f32[2,3], %i: i64[2]) -> (%y, %z) {
  const %w: bf16[3] = [0.5, 1.5, -2]
  const %one: i64[1] = [1]
  %x_bf16: bf16[2,3] = Cast(%x) {to="bf16"}
  %a: bf16[2,3] = Add(%x_bf16, %w)
  %c: bf16[2] = Cast(%i) {to="bf16"}
  %u: bf16[2,1] = Unsqueeze(%c, %one)
  %y_bf16: bf16[2,3] = Mul(%a, %u)
  %z_bf16: bf16[2,3] = Relu(%a)
  %y: f32[2,3] = Cast(%y_bf16) {to="f32"}
  %z: f32[2,3] = Cast(%z_bf16) {to="f32"}
}
)");
}

// A mask of finfo(f32).min would be -inf in bf16 (and 0 * -inf = NaN): it saturates to the largest
// finite value; in f16 so does 1e5, and a tiny non-zero value stays non-zero. NaN and Inf stay.
TEST(NarrowFloats, ConstantsSaturateInsteadOfOverflowing) {
  const std::string text = R"(graph g(%x: f32[5]) -> (%y) {
  const %c: f32[5] = [-3.4028234663852886e+38, 100000, 1e-12, nan, inf]
  %y = Add(%x, %c)
}
)";
  Graph g = parse_graph(text);
  Options options;
  infer_shapes(g, options);
  narrow_floats(g, options, DType::f16);
  const Tensor& c = *g.value(*g.find_value("c")).constant;
  ASSERT_EQ(c.dtype(), DType::f16);
  EXPECT_EQ(c.as_double(0), -65504.0);
  EXPECT_EQ(c.as_double(1), 65504.0);
  EXPECT_GT(c.as_double(2), 0.0);
  EXPECT_TRUE(std::isnan(c.as_double(3)));
  EXPECT_EQ(c.as_double(4), INFINITY);

  Graph b = parse_graph(text);
  infer_shapes(b, options);
  narrow_floats(b, options, DType::bf16);
  const Tensor& cb = *b.value(*b.find_value("c")).constant;
  EXPECT_TRUE(std::isfinite(cb.as_double(0)));
  EXPECT_LT(cb.as_double(0), -3.3e38);
  EXPECT_EQ(cb.as_double(1), 99840.0);  // the nearest bf16
}

// A weight large enough to be narrowed by several threads: every element as the one-element rule
// gives it (clamped, then rounded), NaN, infinities, overflow and tiny values spread through it.
TEST(NarrowFloats, ALargeWeightIsNarrowedElementByElement) {
  const int64_t n = 300007;  // past the parallel threshold, no multiple of a thread count
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float special[] = {NAN, INFINITY, -INFINITY, 1e30f, -3e38f, 1e-30f, -0.0f};
    w[size_t(i)] = i % 97 == 0 ? special[(i / 97) % 7] : std::sin(float(i)) * float(1 + i % 1000);
  }
  for (DType to : {DType::bf16, DType::f16}) {
    Graph g = parse_graph(R"(graph g(%x: f32[300007]) -> (%y) {
  const %w: f32[1] = [0]
  %y = Add(%x, %w)
}
)");
    // The weight put in place of the text's one number (300007 of them would be a long text).
    Value& wv = g.value(*g.find_value("w"));
    wv.constant = std::make_shared<const Tensor>(Tensor::from_vector<float>(DType::f32, {n}, w));
    wv.type = TensorType{DType::f32, {Dim::fixed(n)}};
    Options options;
    infer_shapes(g, options);
    narrow_floats(g, options, to);
    const Tensor& c = *g.value(*g.find_value("w")).constant;
    ASSERT_EQ(c.dtype(), to);
    // The one-element rule, written again: finite values clamped into the type's range, then rounded.
    const float max = to == DType::f16 ? 65504.0f : 3.38953139e38f;
    const float min = to == DType::f16 ? 5.96046448e-08f : std::numeric_limits<float>::denorm_min();
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i) {
      float v = w[size_t(i)];
      if (std::isfinite(v) && std::fabs(v) > max) v = std::copysign(max, v);
      else if (std::isfinite(v) && v != 0 && std::fabs(v) < min) v = std::copysign(min, v);
      const uint16_t want = to == DType::bf16 ? float_to_bf16(v) : float_to_half(v);
      differ += c.data<uint16_t>()[i] != want;
    }
    EXPECT_EQ(differ, 0) << dtype_name(to);
  }
}

TEST(NarrowFloats, AnInputThatIsAlsoAnOutputLeavesAsItCame) {
  EXPECT_EQ(narrowed(R"(graph g(%x: f32[2]) -> (%x, %y) {
  %y = Neg(%x)
}
)",
                     DType::f16),
            R"(graph g(%x: f32[2]) -> (%x, %y) {
  %x_f16: f16[2] = Cast(%x) {to="f16"}
  %y_f16: f16[2] = Neg(%x_f16)
  %y: f32[2] = Cast(%y_f16) {to="f32"}
}
)");
}

TEST(NarrowFloats, APrecisionTheBackendCannotRunIsAUserError) {
  const Graph g = parse_graph("graph g(%x: f32[2]) -> (%y) {\n  %y = Neg(%x)\n}\n");
  testing_backend::InterpreterBackend backend;  // fuses in f32 and f64 only, like the CPU backend
  Options options;
  options.precision = "bf16";
  try {
    compiler::compile(g, backend, options, Mode::compiled);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("precision bf16"), std::string::npos) << e.what();
  }
  options.precision = "fp8";
  EXPECT_THROW(compiler::compile(g, backend, options, Mode::compiled), UserError);
  options.precision = "bf16";  // the fp64 oracle ignores it
  EXPECT_NO_THROW(compiler::compile(g, backend, options, Mode::reference));
}

}  // namespace
}  // namespace kiln
