// Malformed texts: each fails with a UserError that points at the right line and column.
#include <random>

#include "irtext_helpers.h"

namespace kiln {
namespace {
using namespace testing_irtext;

struct BadText {
  const char* text;
  const char* where;    // "IR text L:C:"
  const char* message;  // a fragment of the message
};

const BadText kBadTexts[] = {
    {"", "1:1:", "expected 'graph'"},
    {"graph g(%x: f32[2]) -> (%y) {\n  %y = Relu(%x) in 0\n}", "2:20:", "expected the number of a declared group"},
    {"graph g(%x: f32[2]) -> (%x) {\n  group 1 = row \"r\"\n}", "2:9:", "expected group number 0"},
    {"graph g(%x: f32[2]) -> (%x) {\n  group 0 = row r\n}", "2:17:", "expected the group's label as a string"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = NoSuchOp(%x)\n}", "2:8:", "unknown op 'NoSuchOp'"},
    {"graph g(%x: f99[2]) -> (%x) {}", "1:13:", "unknown dtype 'f99'"},
    {"graph g(%x: f32[2]) -> (%y) {\n  %y = Relu(%x)\n  %y = Neg(%x)\n}", "3:3:", "defined twice"},
    {"graph g(%x: f32[2], %x: f32[3]) -> () {}", "1:21:", "defined twice"},
    {"graph g(%x: f32[2]) -> (%z) {\n  %y = Relu(%z)\n  %z = Neg(%x)\n}", "2:13:", "not defined"},
    {"graph g(%x: f32[2]) -> (%nope) {\n}", "1:25:", "graph output %nope is not defined"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x\n}", "3:1:", "expected ',' or ')'"},
    {"graph g(%x: f32[2]) -> (%x) {\n  const %c: f32[2] = [1, 2, 3]\n}", "2:29:", "more than the 2 values"},
    {"graph g(%x: f32[2]) -> (%x) {\n  const %c: f32[3] = [1, 2]\n}", "2:22:", "2 values for f32[3]"},
    {"graph g(%x: f32[2]) -> (%x) {\n  const %c: i8[1] = [300]\n}", "2:22:", "does not fit i8"},
    {"graph g(%x: f32[2]) -> (%x) {\n  const %c: i64[1] = [99999999999999999999]\n}", "2:23:", "does not fit in 64 bits"},
    {"graph g(%x: f32[2]) -> (%x) {\n  const %c: f32[1] = [1e999]\n}", "2:23:", "out of range"},
    {"graph g(%x: f32[n]) -> (%x) {\n  const %c: f32[n] = [1]\n}", "2:13:", "static type"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x) {a=1, a=2}\n}", "2:23:", "attribute 'a' is given twice"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x) {a=\"unterminated}\n}", "2:20:", "unterminated string"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x) {a=\"bad \\q\"}\n}", "2:25:", "unknown escape"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x) {a=[\"s\", 1]}\n}", "2:26:", "expected a string"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x) {a=ints[1.5]}\n}", "2:25:", "expected an integer"},
    {"graph g(%x: f32[-2]) -> (%x) {}", "1:17:", "dimension -2 is negative"},
    {"graph g(%x: f32[9223372036854775807,9223372036854775807] = [1]) -> (%x) {}", "1:13:", "overflows"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x) $\n}", "2:17:", "unexpected character '$'"},
    {"graph g(%x: f32[2]) -> (%x) {\n}\ntrailing", "3:1:", "after the graph"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %\"\" = Relu(%x)\n}", "2:3:", "must not be empty"},
    {"graph g(%x: f32[2]) -> (%x) {\n  const %c: f32[2] = <elided 8 bytes fnv=0011>\n}", "2:22:", "inline_all"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x) {a=1} @\n}", "3:1:", "expected a node name"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y: f32[seq~-1] = Relu(%x)\n}", "2:15:", "size hint -1 is negative"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y = Relu(%x) {a=bogus}\n}", "2:20:", "expected an attribute value"},
    {"graph g(%x: f32[2]) -> (%x) {\n  %y, %y = Split(%x)\n}", "2:7:", "defined twice"},
    {"graph g(%x\xff: f32[2]) -> (%x) {}", "1:11:", "unexpected byte 0xff"},
};

TEST(IrTextParseErrors, LineAndColumn) {
  for (const BadText& bad : kBadTexts) {
    SCOPED_TRACE(bad.text);
    try {
      parse_graph(bad.text);
      ADD_FAILURE() << "parsed";
    } catch (const UserError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(std::string("IR text ") + bad.where), std::string::npos) << msg;
      EXPECT_NE(msg.find(bad.message), std::string::npos) << msg;
    }
  }
}

// Every prefix of a valid text fails cleanly (or, for the whole text, parses).
TEST(IrTextParseErrors, EveryPrefix) {
  std::string text = R"(graph g(%x: f32[n~2,3]) -> (%y) {
  const %c: f16[2] = [0.5, -inf]
  %y: f32[n,3], _ = Split(%x, _) {axis=1, s="a\"b", l=[1.5, 2.0], t=i64[1] [3]} @"sp"
})";
  for (size_t n = 0; n < text.size(); ++n) {
    try {
      parse_graph(std::string_view(text).substr(0, n));
      ADD_FAILURE() << "prefix of " << n << " bytes parsed";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("IR text "), std::string::npos);
    }
  }
  EXPECT_NO_THROW(parse_graph(text));
}

// A deterministic robustness loop: mutations of a valid text either parse into a graph that verifies
// and round-trips, or fail with a UserError; nothing else (no crash, hang or other exception).
TEST(IrTextParseErrors, RandomMutationsOnlyThrowUserError) {
  GraphBuilder b("fuzz");
  ValueId x = b.input("x", DType::f32, {Dim::sym("batch", 2), Dim::fixed(4)});
  ValueId w = b.constant("w", Tensor::from_vector<double>(DType::f32, {4, 2}, {1, -2, 0.5, 1e-3, -0.0, 3e38, 7, 8}));
  ValueId h = b.constant("h", Tensor::from_vector<double>(DType::f16, {2}, {0.25, -65504}));
  ValueId y = b.op(OpKind::MatMul, {x, w});
  b.set_type(y, TensorType{DType::f32, {Dim::sym("batch", 2), Dim::fixed(2)}});
  auto parts = b.op_named(OpKind::Split, {y, kNoValue}, {"a", ""}, {{"axis", 1}, {"num_outputs", 2}}, "split/0");
  ValueId z = b.op(OpKind::Add, {parts[0], h}, {{"f", 0.5}, {"s", "q\"\n"}, {"l", {1, 2}}, {"t", Tensor::scalar<int>(DType::i8, 3)}});
  b.output(z, "out");
  const std::string base = print_graph(b.build());

  const std::string alphabet = "%\"\\_,:=()[]{}<>~@?-+.eE0123456789abcfinx \n\t/";
  std::mt19937 rng(12345);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % (n ? n : 1)); };
  int parsed = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string t = base;
    int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits && !t.empty(); ++e) {
      size_t at = pick(t.size());
      switch (pick(6)) {
        case 0: t.erase(at, 1 + pick(8)); break;
        case 1: t.insert(at, 1, alphabet[pick(alphabet.size())]); break;
        case 2: t[at] = static_cast<char>(rng() & 0xff); break;
        case 3: t.insert(at, t.substr(pick(t.size()), pick(30))); break;  // duplicate a piece
        case 4: t.resize(at); break;
        case 5: t.insert(at, pick(2) ? "99999999999999999999" : "-9223372036854775808"); break;
      }
    }
    try {
      Graph g = parse_graph(t);
      ++parsed;
      verify_graph(g, "fuzz");  // a graph the parser accepts is well formed...
      std::string again = print_graph(g, all_values());
      EXPECT_EQ(print_graph(parse_graph(again), all_values()), again);  // ...and prints stably
    } catch (const UserError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << ": " << e.what() << "\n" << t;
    }
  }
  EXPECT_GT(parsed, 10);  // the loop also reaches texts that parse, not only the first error
}

}  // namespace
}  // namespace kiln
