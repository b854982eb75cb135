// A float-to-integer Cast in a generated kernel gives what kiln's Cast node kernel gives (truncated,
// saturated at the type's bounds, NaN 0): out-of-range values and NaN are undefined in C++ and in ONNX,
// so both routes must pick the same answer (the generated kernels gave the type's minimum before).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "kiln/builder.h"
#include "kiln/session.h"

namespace kiln {
namespace {

void check(DType from, DType to, const std::vector<double>& values) {
  GraphBuilder b("cast_to_int");
  const int64_t n = static_cast<int64_t>(values.size());
  ValueId x = b.input("x", from, {n}), zero = b.input("zero", from, {n});
  // x + 0 then the Cast: two pointwise nodes, one generated kernel (a lone node stays on its node kernel).
  ValueId sum = b.op(OpKind::Add, {x, zero});
  b.output(b.op(OpKind::Cast, {sum}, {{"to", Attribute{std::string(dtype_name(to))}}}), "y");
  const Graph g = b.build();
  Options o;
  o.cache_dir = (std::filesystem::temp_directory_path() / ("kiln_cast_to_int_" + std::to_string(getpid()))).string();
  Session compiled = Session::from_graph(g, Mode::compiled, o), eager = Session::from_graph(g, Mode::eager, o);
  EXPECT_EQ(compiled.stats().fused_kernels, 1);
  const std::map<std::string, Tensor> in = {{"x", Tensor::from_vector<double>(from, {n}, values)},
                                            {"zero", Tensor::from_vector<double>(from, {n}, std::vector<double>(values.size(), 0.0))}};
  const Tensor got = compiled.run(in).at("y"), want = eager.run(in).at("y");
  ASSERT_EQ(got.dtype(), to);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(got.as_double(i), want.as_double(i)) << dtype_name(from) << " " << values[size_t(i)] << " -> " << dtype_name(to);
  std::filesystem::remove_all(o.cache_dir);
}

TEST(CastToInt, GeneratedKernelsSaturateAndGiveZeroForNanAsTheNodeKernel) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {nan,  -nan, inf,    -inf,   3e9,   -3e9,  1e20,  -1e20, 2.7,   -2.7,  0.0,
                                      -0.0, 1.0,  2147483520.0, -2147483648.0, 4e18, -9.3e18, 9.3e18, 1e300, -1e300};
  check(DType::f32, DType::i32, values);
  check(DType::f32, DType::i64, values);
  check(DType::f64, DType::i32, values);
  check(DType::f64, DType::i64, values);
  // The node kernel's answers themselves, so that both routes cannot agree on something else.
  GraphBuilder b("node");
  ValueId x = b.input("x", DType::f32, {4});
  b.output(b.op(OpKind::Cast, {x}, {{"to", Attribute{std::string(dtype_name(DType::i32))}}}), "y");
  Session s = Session::from_graph(b.build(), Mode::eager, Options{});
  const Tensor y = s.run({{"x", Tensor::from_vector<double>(DType::f32, {4}, {nan, 3e9, -3e9, -2.7})}}).at("y");
  EXPECT_EQ(y.as_double(0), 0);
  EXPECT_EQ(y.as_double(1), 2147483647);
  EXPECT_EQ(y.as_double(2), -2147483648.0);
  EXPECT_EQ(y.as_double(3), -2);
}

}  // namespace
}  // namespace kiln
