// Printing as text and as C++; the C++ form is compiled and run against evaluate().
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "loops/index_expr.h"

namespace kiln::loops {
namespace {

Expr V(const char* name, Expr extent) { return Expr::var(name, std::move(extent)); }

TEST(IndexPrint, Cpp) {
  Expr x0 = V("x0", 4), x1 = V("x1", 768);
  Expr S = Expr::sym("S", -1, 1);
  EXPECT_EQ(to_cpp(x0 * 768 + x1), "(x0 * 768 + x1)");
  EXPECT_EQ(to_cpp(x1 + x0 * 768), "(x0 * 768 + x1)");
  EXPECT_EQ(to_cpp(x0 * S * 4), "(x0 * S * 4)");
  EXPECT_EQ(to_cpp(x0 - x1 * 2 - 5), "(x0 - x1 * 2 - 5)");
  EXPECT_EQ(to_cpp(Expr(5) - x0), "(-x0 + 5)");
  EXPECT_EQ(to_cpp(-x0), "(x0 * -1)");
  EXPECT_EQ(to_cpp(Expr(-3)), "-3");
  EXPECT_EQ(to_cpp(Expr(INT64_MIN)), "(-9223372036854775807 - 1)");
  // Plain / and % only for a numerator proven non-negative.
  EXPECT_EQ(to_cpp(floordiv(x1, 7)), "(x1 / 7)");
  EXPECT_EQ(to_cpp(mod(x1, 7)), "(x1 % 7)");
  EXPECT_EQ(to_cpp(floordiv(x1 - 3, 7)), "kiln_floordiv((x1 - 3), 7)");
  EXPECT_EQ(to_cpp(mod(x1 - 3, 7)), "kiln_mod((x1 - 3), 7)");
  EXPECT_EQ(to_cpp(floordiv(x0 - x1, S)), "kiln_floordiv((x0 - x1), S)");
  // A product as divisor keeps its parentheses: x / S * 2 would mean (x / S) * 2.
  EXPECT_EQ(to_cpp(floordiv(x1, S * 2)), "(x1 / (S * 2))");
  EXPECT_EQ(to_cpp(floordiv(x1, 7) * 768 + mod(x1, 7)), "((x1 / 7) * 768 + (x1 % 7))");
  EXPECT_EQ(to_cpp(minimum(x0, 3)), "kiln_min(x0, 3)");
  EXPECT_EQ(to_cpp(maximum(x0 - 5, 0)), "kiln_max((x0 - 5), 0)");
  CppPrintOptions renamed;
  renamed.leaf_name = [](const Expr& e) { return (e.is_sym() ? "sizes." : "i_") + e.name(); };
  EXPECT_EQ(to_cpp(x0 * S + x1, renamed), "(i_x0 * sizes.S + i_x1)");
}

TEST(IndexPrint, Text) {
  Expr x = V("x", 10);
  EXPECT_EQ(to_string(floordiv(x - 1, 4) + mod(x, 3)), "(((x - 1) // 4) + (x % 3))");
  EXPECT_EQ(to_string(minimum(x, 3)), "min(x, 3)");
  EXPECT_EQ(to_string(maximum(x, 3)), "max(x, 3)");
  std::ostringstream os;
  os << x * 2;
  EXPECT_EQ(os.str(), "(x * 2)");
}

// Random expressions over x (possibly negative after shifting), printed as C++, compiled with the
// system compiler and evaluated at many points: checks the prelude helpers, the choice between
// '/' and kiln_floordiv, and precedence.
Expr random_expr(std::mt19937& rng, const std::vector<Expr>& leaves, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  if (depth == 0 || pick(4) == 0) {
    if (pick(3) == 0) return Expr(pick(13) - 6);
    return leaves[static_cast<size_t>(pick(static_cast<int>(leaves.size())))];
  }
  Expr a = random_expr(rng, leaves, depth - 1), b = random_expr(rng, leaves, depth - 1);
  switch (pick(7)) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * (pick(5) - 2);
    case 3: return floordiv(a, pick(5) + 1);
    case 4: return mod(a, pick(5) + 1);
    case 5: return pick(2) ? minimum(a, b) : maximum(a, b);
    default: return floordiv(a, leaves.back());  // a symbolic divisor
  }
}

TEST(IndexPrint, CompiledCppMatchesEvaluate) {
  if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no C++ compiler";
  Expr S = Expr::sym("S", -1, 1);
  std::vector<Expr> leaves = {V("x", 9), V("y", 5), S};
  std::mt19937 rng(7);
  std::vector<Expr> exprs;
  for (int i = 0; i < 200; ++i) exprs.push_back(simplify(random_expr(rng, leaves, 4)));

  std::string dir = testing::TempDir();
  std::string src = dir + "/kiln_index_print.cpp", bin = dir + "/kiln_index_print";
  {
    std::ofstream f(src);
    f << cpp_index_prelude() << "#include <cstdio>\nint main() {\n"
      << "  for (int64_t S = 1; S <= 4; ++S)\n  for (int64_t x = 0; x < 9; ++x)\n"
      << "  for (int64_t y = 0; y < 5; ++y) {\n";
    for (const Expr& e : exprs) f << "    std::printf(\"%lld\\n\", (long long)" << to_cpp(e) << ");\n";
    f << "  }\n}\n";
  }
  ASSERT_EQ(std::system(("c++ -O0 -w -o " + bin + " " + src).c_str()), 0) << "see " << src;
  std::string out = dir + "/kiln_index_print.txt";
  ASSERT_EQ(std::system((bin + " > " + out).c_str()), 0);
  std::ifstream results(out);
  for (int64_t s = 1; s <= 4; ++s)
    for (int64_t x = 0; x < 9; ++x)
      for (int64_t y = 0; y < 5; ++y)
        for (const Expr& e : exprs) {
          long long got = 0;
          ASSERT_TRUE(results >> got);
          ASSERT_EQ(got, evaluate(e, {{"x", x}, {"y", y}, {"S", s}})) << to_cpp(e) << " at x=" << x << " y=" << y
                                                                       << " S=" << s;
        }
}

}  // namespace
}  // namespace kiln::loops
