// Bias + GELU (erf form) over symbolic [batch, seq, 64]: one compiled kernel run at several sizes,
// checked against a double-precision loop, and the golden snapshot of its generated source.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "codegen/cpu/subprocess.h"
#include "codegen/cpu/toolchain.h"
#include "codegen/cpu/vector_math.h"
#include "kiln/errors.h"
#include "pointwise_test_util.h"

namespace kiln::loops::testing {
namespace {

constexpr int64_t kHidden = 64;

PointwiseKernel bias_gelu_kernel() {
  Expr batch = Expr::sym("batch"), seq = Expr::sym("seq");
  PointwiseKernel k;
  k.name = "bias_gelu";
  k.inputs = {{DType::f32, {batch, seq, Expr(kHidden)}}, {DType::f32, {Expr(kHidden)}}};
  k.output = {DType::f32, {batch, seq, Expr(kHidden)}};
  ScalarExpr v = add(load_broadcast(k, 0), load_broadcast(k, 1));
  k.body = mul(mul(f32(0.5), v), add(f32(1.0), erf(div(v, f32(std::sqrt(2.0))))));
  return k;
}

void run_and_check(const CompiledKernel& ck, int64_t batch, int64_t seq, uint32_t seed) {
  const size_t n = static_cast<size_t>(batch * seq * kHidden);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> x(n), bias(kHidden), out(n, -12345.0f);
  for (float& v : x) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  if (n > 3) {
    x[0] = NAN;
    x[1] = INFINITY;
    x[2] = -INFINITY;  // 0.5 * -inf * (1 + erf(-inf)) = -inf * 0 = NaN
  }
  call(ck, "bias_gelu", {x.data(), bias.data()}, out.data(), {batch, seq});
  for (size_t i = 0; i < n; ++i) {
    double v = static_cast<double>(x[i]) + static_cast<double>(bias[i % kHidden]);
    double want = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    ASSERT_TRUE(same_float(out[i], want, 2e-6)) << "batch " << batch << " seq " << seq << " at " << i << ": got "
                                                << out[i] << " want " << want;
  }
}

TEST(PointwiseBiasGelu, OneCompiledKernelRunsAtSeveralSymbolicSizes) {
  TempCache cache;
  codegen::cpu::PointwiseSource src = codegen::cpu::emit_pointwise_cpp(bias_gelu_kernel());
  EXPECT_EQ(src.symbols, (std::vector<std::string>{"batch", "seq"}));
  EXPECT_EQ(src.source.entry_points, (std::vector<std::string>{"bias_gelu"}));
  std::vector<CompiledKernel> ck = codegen::cpu::compile_kernels({src.source}, cache.options());
  ASSERT_EQ(ck.size(), 1u);
  run_and_check(ck[0], 2, 3, 1);      // below the parallel threshold
  run_and_check(ck[0], 4, 201, 2);    // above it: runs on OpenMP threads
  run_and_check(ck[0], 1, 1, 3);
  // No elements: nothing may be read or written (null pointers would crash otherwise).
  call(ck[0], "bias_gelu", {nullptr, nullptr}, nullptr, {0, 7});
  call(ck[0], "bias_gelu", {nullptr, nullptr}, nullptr, {5, 0});
}

fs::path snapshot_path() { return fs::path(KILN_SOURCE_DIR) / "tests/pointwise/snapshots/bias_gelu.cpp.txt"; }

TEST(PointwiseBiasGelu, GeneratedSourceMatchesTheSnapshot) {
  std::string code = codegen::cpu::emit_pointwise_cpp(bias_gelu_kernel()).source.code;
  // Deterministic: a second, separately built kernel gives the same bytes.
  EXPECT_EQ(code, codegen::cpu::emit_pointwise_cpp(bias_gelu_kernel()).source.code);
  EXPECT_EQ(code.find("fast-math"), std::string::npos);
  EXPECT_NE(code.find("kiln_erf("), std::string::npos);
  EXPECT_EQ(code.find("std::erf("), std::string::npos);
  // The vector math prelude is in the kernel once, and left out of the snapshot (it has its own tests
  // in tests/codegen/vector_math_test.cpp, and changes there should not churn this file).
  const std::string prelude(codegen::cpu::vector_math_prelude());
  const size_t at = code.find(prelude);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(code.find(prelude, at + 1), std::string::npos);
  code.replace(at, prelude.size(), "// <vector math prelude>\n");
  const char* update = std::getenv("KILN_UPDATE_SNAPSHOTS");
  if (update && std::string(update) == "1") {
    std::ofstream(snapshot_path(), std::ios::binary) << code;
    GTEST_SKIP() << "rewrote " << snapshot_path();
  }
  std::ifstream in(snapshot_path(), std::ios::binary);
  ASSERT_TRUE(in) << "missing snapshot " << snapshot_path() << " (run with KILN_UPDATE_SNAPSHOTS=1)";
  std::ostringstream want;
  want << in.rdbuf();
  if (code == want.str()) return;
  // Name the first line that differs rather than printing both files.
  std::istringstream got_lines(code), want_lines(want.str());
  std::string got_line, want_line;
  int line = 1;
  while (std::getline(got_lines, got_line) && std::getline(want_lines, want_line) && got_line == want_line) ++line;
  ADD_FAILURE() << "generated source differs from " << snapshot_path() << " at line " << line << ":\n  got:  "
                << got_line << "\n  want: " << want_line << "\nif intended, rerun with KILN_UPDATE_SNAPSHOTS=1";
}

// The element loop (under `omp simd`) must be vectorised with kiln's own flags: erf comes from the
// vector math prelude, and GCC's report (-fopt-info-vec-optimized) names the loop's line.
TEST(PointwiseBiasGelu, ElementLoopIsVectorised) {
  TempCache dir;
  const std::string code = codegen::cpu::emit_pointwise_cpp(bias_gelu_kernel()).source.code;
  const size_t pragma = code.find("#pragma omp simd\n");
  ASSERT_NE(pragma, std::string::npos);
  // GCC names the loop by a line of its body: any line from the `for` to the store counts.
  auto line_of = [&](size_t offset) {
    return static_cast<int>(std::count(code.begin(), code.begin() + offset, '\n')) + 1;
  };
  const int first_line = line_of(pragma) + 1, last_line = line_of(code.find("out[", pragma));
  const fs::path source = dir.root() / "bias_gelu.cpp";
  std::ofstream(source, std::ios::binary) << code;
  std::vector<std::string> argv = {Options().cxx};
  for (std::string& f : codegen::cpu::compile_flags(codegen::cpu::detect_cpu_features())) argv.push_back(f);
  argv.insert(argv.end(), {"-fopt-info-vec-optimized", source.string(), "-o", (dir.root() / "k.so").string()});
  codegen::cpu::ProcessResult r = codegen::cpu::run_process(argv);
  ASSERT_TRUE(r.ok()) << r.status_text() << "\n" << r.output.substr(0, 4000);
  bool vectorised = false;
  for (int line = first_line; line <= last_line; ++line) {
    const std::string mark = "bias_gelu.cpp:" + std::to_string(line) + ":";
    for (size_t at = r.output.find(mark); at != std::string::npos; at = r.output.find(mark, at + 1))
      vectorised = vectorised ||
                   r.output.substr(at, r.output.find('\n', at) - at).find("loop vectorized") != std::string::npos;
  }
  EXPECT_TRUE(vectorised) << "lines " << first_line << "-" << last_line << " not reported vectorised:\n"
                          << r.output.substr(0, 4000);
}

TEST(PointwiseIr, DtypesAreCheckedAndKnown) {
  ScalarExpr a = load(0, Expr(0), DType::f32);
  ScalarExpr i = load(1, Expr(0), DType::i64);
  EXPECT_EQ(binary(BinaryOp::Less, a, a).dtype(), DType::boolean);
  EXPECT_EQ(is_nan(a).dtype(), DType::boolean);
  EXPECT_EQ(cast(DType::f64, i).dtype(), DType::f64);
  EXPECT_EQ(where(is_nan(a), a, a).dtype(), DType::f32);
  EXPECT_THROW(add(a, i), InternalError);
  EXPECT_THROW(unary(UnaryOp::Exp, i), InternalError);
  EXPECT_THROW(unary(UnaryOp::Not, a), InternalError);
  EXPECT_THROW(where(a, a, a), InternalError);
  EXPECT_THROW(constant(0.5, DType::i64), InternalError);
  EXPECT_THROW(constant(2.0, DType::boolean), InternalError);
  EXPECT_EQ(constant(0.1, DType::f32).constant_value(), static_cast<double>(0.1f));

  PointwiseKernel k = bias_gelu_kernel();
  k.output.dtype = DType::f64;  // the body is f32
  EXPECT_THROW(codegen::cpu::emit_pointwise_cpp(k), InternalError);
  k = bias_gelu_kernel();
  k.body = load(2, Expr(0), DType::f32);  // no input 2
  EXPECT_THROW(codegen::cpu::emit_pointwise_cpp(k), InternalError);
  k = bias_gelu_kernel();
  k.name = "bad name";
  EXPECT_THROW(codegen::cpu::emit_pointwise_cpp(k), InternalError);
}

TEST(PointwiseIr, LoadBroadcastIndexAndReadableForm) {
  PointwiseKernel k = bias_gelu_kernel();
  EXPECT_EQ(to_string(load_broadcast(k, 1)), "load1[x2]");
  EXPECT_EQ(to_string(add(load_broadcast(k, 1), f32(1.5))), "add(load1[x2], 1.5:f32)");
  std::vector<std::string> symbols;
  for (const Expr& s : kernel_symbols(k)) symbols.push_back(s.name());
  EXPECT_EQ(symbols, (std::vector<std::string>{"batch", "seq"}));
}

TEST(PointwiseIr, ConstantsArePrintedExactly) {
  PointwiseKernel k;
  k.name = "consts";
  k.output = {DType::f64, {Expr(4)}};
  k.body = add(add(constant(0.1, DType::f64), constant(-INFINITY, DType::f64)), constant(NAN, DType::f64));
  std::string code = codegen::cpu::emit_pointwise_cpp(k).source.code;
  EXPECT_NE(code.find("0x1.999999999999ap-4"), std::string::npos) << code;  // 0.1 to the last bit
  EXPECT_NE(code.find("(-__builtin_inf())"), std::string::npos) << code;
  EXPECT_NE(code.find("__builtin_nan(\"\")"), std::string::npos) << code;
}

TEST(PointwiseIr, ConstantZeroSizeEmitsAnEmptyFunction) {
  PointwiseKernel k;
  k.name = "empty";
  k.inputs = {{DType::f32, {Expr(3)}}};
  k.output = {DType::f32, {Expr::sym("n"), Expr(0), Expr(3)}};
  k.body = add(load_broadcast(k, 0), f32(1.0));
  std::string code = codegen::cpu::emit_pointwise_cpp(k).source.code;
  EXPECT_EQ(code.find("for ("), std::string::npos) << code;
  EXPECT_EQ(code.find("out["), std::string::npos) << code;
}

}  // namespace
}  // namespace kiln::loops::testing
