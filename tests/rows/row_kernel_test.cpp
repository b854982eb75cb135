// The row-kernel IR (checks, readable form) and the emitter's two strategies on a hand-built softmax:
// forced split and per-row paths against a double-precision loop, one compile run at several sizes.
#include <gtest/gtest.h>

#include <limits>

#include "kiln/errors.h"
#include "loops/row_kernel.h"
#include "rows_test_util.h"

namespace kiln::rows_test {
namespace {

using loops::Expr;
using loops::RowKernel;
using loops::RowReduceKind;
using loops::ScalarExpr;

// softmax over x[n, w] (both symbolic), as fuse_rows builds it.
RowKernel softmax_kernel() {
  RowKernel k;
  k.name = "softmax";
  k.domain = {Expr::sym("n"), Expr::sym("w")};
  k.row_rank = 1;
  k.inputs = {{DType::f32, k.domain}};
  k.output = {DType::f32, k.domain};
  ScalarExpr x = loops::load_broadcast(k, 0);
  k.reductions.push_back({RowReduceKind::Max, x});
  ScalarExpr e = loops::unary(loops::UnaryOp::Exp, loops::sub(x, loops::row_result(0, DType::f32)));
  k.reductions.push_back({RowReduceKind::Sum, e});
  k.output_body = loops::div(e, loops::row_result(1, DType::f32));
  return k;
}

void check_softmax(const CompiledKernel& ck, int64_t n, int64_t w, uint32_t seed) {
  Tensor x = random_with_specials(DType::f32, {n, w}, seed, w > 8 ? 61 : 0);
  if (n > 1) fill_row(x, n - 1, w, -INFINITY);
  std::vector<float> out(static_cast<size_t>(n * w), -7.0f);
  call(ck, "softmax", {x.raw()}, out.data(), {n, w});
  const float* xs = x.data<float>();
  for (int64_t r = 0; r < n; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < w; ++c) m = (xs[r * w + c] > m || std::isnan(xs[r * w + c])) ? xs[r * w + c] : m;
    for (int64_t c = 0; c < w; ++c) sum += std::exp(xs[r * w + c] - m);
    for (int64_t c = 0; c < w; ++c) {
      double want = std::exp(xs[r * w + c] - m) / sum, got = out[size_t(r * w + c)];
      bool ok = std::isnan(want) ? std::isnan(got) : std::fabs(got - want) <= 1e-6 + 2e-5 * want;
      ASSERT_TRUE(ok) << "n " << n << " w " << w << " at [" << r << ", " << c << "]: got " << got << " want " << want;
    }
  }
}

TEST(RowKernelEmit, SplitAndPerRowPathsAgreeWithALoopAtSeveralSizes) {
  TestCache cache;
  codegen::cpu::RowEmitOptions split;
  split.split_min_cols = 1;   // every row is split...
  split.split_part_cols = 7;  // ...into parts of 7 columns (odd, so parts end inside a lane block)
  codegen::cpu::RowEmitOptions per_row;
  per_row.split_min_cols = std::numeric_limits<int64_t>::max();
  RowKernel k = softmax_kernel();
  std::string split_code = codegen::cpu::emit_row_cpp(k, split).source.code;
  std::string per_row_code = codegen::cpu::emit_row_cpp(k, per_row).source.code;
  // Symbolic cols: both paths are emitted, the threshold picks one at run time.
  EXPECT_NE(split_code.find("if (cols < 1) {"), std::string::npos);
  EXPECT_NE(per_row_code.find("if (cols < 9223372036854775807) {"), std::string::npos);
  std::vector<CompiledKernel> ck = codegen::cpu::compile_kernels(
      {codegen::cpu::emit_row_cpp(k, split).source, codegen::cpu::emit_row_cpp(k, per_row).source}, cache.options());
  for (const CompiledKernel& c : ck)
    for (auto [n, w] : {std::pair<int64_t, int64_t>{1, 1}, {3, 3}, {4, 17}, {2, 64}, {3, 1000}, {200, 130}})
      check_softmax(c, n, w, static_cast<uint32_t>(n + w));
}

TEST(RowKernelEmit, SoftmaxReadsItsExpBackInsteadOfRecomputingIt) {
  std::string code = codegen::cpu::emit_row_cpp(softmax_kernel()).source.code;
  EXPECT_NE(code.find("out[o * cols + c] = v"), std::string::npos) << code;  // stored by reduce1
  EXPECT_EQ(code.find("fast-math"), std::string::npos);
  // exp appears in reduce1 only: the output pass divides the stored value. Its argument, x - max(x),
  // is never positive, so it is the exp without the overflow guard.
  size_t output_pass = code.find("static inline void write_elements(");
  ASSERT_NE(output_pass, std::string::npos);
  EXPECT_NE(code.find("kiln_exp_nonpos(v"), std::string::npos) << code;
  EXPECT_EQ(code.find("kiln_exp(v"), std::string::npos) << code;
  EXPECT_EQ(code.find("kiln_exp", output_pass), std::string::npos) << code;
}

TEST(RowKernelEmit, ConstantEmptyRowsReduceToTheIdentity) {
  // max over x[3, 0] per row: no column is ever read, every row gives -inf.
  RowKernel k;
  k.name = "empty_max";
  k.domain = {Expr(3), Expr(0)};
  k.row_rank = 1;
  k.inputs = {{DType::f32, k.domain}};
  k.output = {DType::f32, {Expr(3)}};
  k.output_kind = loops::RowOutput::rows;
  k.reductions.push_back({RowReduceKind::Max, loops::load_broadcast(k, 0)});
  k.output_body = loops::row_result(0, DType::f32);
  TestCache cache;
  std::vector<CompiledKernel> ck = compile_rows({k}, cache);
  std::vector<float> out(3, 1.0f);
  call(ck[0], "empty_max", {nullptr}, out.data(), {});
  for (float v : out) EXPECT_EQ(v, -INFINITY);
  k.output_kind = loops::RowOutput::elements;  // no elements at all: an empty function
  k.output.sizes = k.domain;
  EXPECT_EQ(codegen::cpu::emit_row_cpp(k).source.code.find("for ("), std::string::npos);
}

TEST(RowKernelIr, ValidateRejectsMistakes) {
  RowKernel k = softmax_kernel();
  EXPECT_NO_THROW(loops::validate(k));
  RowKernel bad = k;
  bad.reductions[0].body = loops::row_result(1, DType::f32);  // reads a later reduction
  EXPECT_THROW(loops::validate(bad), InternalError);
  bad = k;
  bad.output_kind = loops::RowOutput::rows;  // the output then has n elements and must not read columns
  bad.output.sizes = {Expr::sym("n")};
  EXPECT_THROW(loops::validate(bad), InternalError);
  bad.output_body = loops::row_result(1, DType::f32);
  EXPECT_NO_THROW(loops::validate(bad));
  bad.output.sizes = {Expr::sym("n"), Expr(2)};  // 2n elements for n rows
  EXPECT_THROW(loops::validate(bad), InternalError);
  bad = k;
  bad.reductions[1].body = loops::cast(DType::i64, bad.reductions[1].body);  // integer accumulator
  EXPECT_THROW(loops::validate(bad), InternalError);
  bad = k;
  bad.output_body = loops::cast(DType::f32, loops::row_result(1, DType::f64));  // an f32 result read as f64
  EXPECT_THROW(loops::validate(bad), InternalError);
  bad = k;
  bad.name = "bad name";
  EXPECT_THROW(codegen::cpu::emit_row_cpp(bad), InternalError);
}

TEST(RowKernelIr, ReadableForm) {
  RowKernel k = softmax_kernel();
  k.output_body = loops::div(k.output_body, loops::row_length(DType::f32));
  EXPECT_EQ(loops::to_string(k),
            "row kernel softmax: rows [n] x cols [w]\n"
            "  r0 = max(load0[(x0 * w + x1)])\n"
            "  r1 = sum(exp(sub(load0[(x0 * w + x1)], r0)))\n"
            "  out[element] = div(div(exp(sub(load0[(x0 * w + x1)], r0)), r1), cols)\n");
  std::vector<std::string> symbols;
  for (const Expr& s : loops::kernel_symbols(k)) symbols.push_back(s.name());
  EXPECT_EQ(symbols, (std::vector<std::string>{"n", "w"}));
}

}  // namespace
}  // namespace kiln::rows_test
