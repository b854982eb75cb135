// The lowering table's promises: fixed handles to replaced lowerings, idempotent registration, no
// self-capture, bounded re-entry. The lowering signature here is a toy (a string trace), since the
// table does not depend on the loop IR.
#include <gtest/gtest.h>

#include "lower/lowering_table.h"

namespace kiln::lower {
namespace {

using Table = LoweringTable<std::string(int)>;

Table::MakeOverride wrap(const std::string& tag) {
  return [tag](Table::Fn previous) -> Table::Fn {
    return [tag, previous](int x) { return tag + "(" + (previous ? previous(x) : std::string("none")) + ")"; };
  };
}

TEST(LoweringTable, BaseAndOverrideChain) {
  Table t;
  t.set_base(OpKind::Softmax, "generic", [](int x) { return "generic" + std::to_string(x); });
  EXPECT_TRUE(t.add_override(OpKind::Softmax, "cpu.route", wrap("route")));
  EXPECT_EQ(t.call(OpKind::Softmax, 3), "route(generic3)");
  EXPECT_EQ(t.describe(OpKind::Softmax), "generic > cpu.route");
}

TEST(LoweringTable, RegisteringTwiceIsIdempotent) {
  // The seed bug: the second registration captured the override itself as "the original".
  Table t;
  t.set_base(OpKind::Softmax, "generic", [](int) { return std::string("generic"); });
  auto register_backend = [&] { return t.add_override(OpKind::Softmax, "cpu.route", wrap("route")); };
  EXPECT_TRUE(register_backend());
  EXPECT_FALSE(register_backend());
  EXPECT_FALSE(register_backend());
  EXPECT_EQ(t.call(OpKind::Softmax, 0), "route(generic)");  // not route(route(generic))
  t.set_base(OpKind::Softmax, "generic", [](int) { return std::string("other"); });  // same name: no-op
  EXPECT_EQ(t.call(OpKind::Softmax, 0), "route(generic)");
}

TEST(LoweringTable, NestedOverridesEachGetTheirFixedPredecessor) {
  Table t;
  t.set_base(OpKind::Add, "base", [](int) { return std::string("base"); });
  t.add_override(OpKind::Add, "a", wrap("a"));
  t.add_override(OpKind::Add, "b", wrap("b"));
  t.add_override(OpKind::Add, "a", wrap("a"));  // again: changes nothing
  EXPECT_EQ(t.call(OpKind::Add, 0), "b(a(base))");
  EXPECT_EQ(t.describe(OpKind::Add), "base > a > b");
}

TEST(LoweringTable, OverridesDoNotLeakAcrossOps) {
  Table t;
  t.set_base(OpKind::Add, "base", [](int) { return std::string("add"); });
  t.set_base(OpKind::Mul, "base", [](int) { return std::string("mul"); });
  t.add_override(OpKind::Add, "x", wrap("x"));
  EXPECT_EQ(t.call(OpKind::Mul, 0), "mul");
  EXPECT_FALSE(t.has(OpKind::Sub));
  EXPECT_THROW(t.call(OpKind::Sub, 0), InternalError);
}

TEST(LoweringTable, TwoBasesForOneOpIsAnInternalError) {
  Table t;
  t.set_base(OpKind::Add, "one", [](int) { return std::string(); });
  EXPECT_THROW(t.set_base(OpKind::Add, "two", [](int) { return std::string(); }), InternalError);
  Table u;
  u.add_override(OpKind::Add, "early", wrap("early"));  // an override sees an empty predecessor
  EXPECT_EQ(u.call(OpKind::Add, 0), "early(none)");
  EXPECT_THROW(u.set_base(OpKind::Add, "late", [](int) { return std::string(); }), InternalError);
}

TEST(LoweringTable, BoundedNestedLoweringIsAllowed) {
  // A decomposition may lower a smaller instance of the same op (a Concat of halves).
  Table t;
  t.set_base(OpKind::Concat, "halves", [&t](int n) -> std::string {
    return n <= 1 ? "leaf" : "[" + t.call(OpKind::Concat, n / 2) + "," + t.call(OpKind::Concat, n - n / 2) + "]";
  });
  EXPECT_EQ(t.call(OpKind::Concat, 3), "[leaf,[leaf,leaf]]");
}

TEST(LoweringTable, RunawayReentryIsAnInternalErrorNotAStackOverflow) {
  // A lowering that looks itself up instead of using its fixed predecessor recurses forever.
  Table t;
  t.set_base(OpKind::Expand, "base", [](int) { return std::string("base"); });
  t.add_override(OpKind::Expand, "broken", [&t](Table::Fn) -> Table::Fn {
    return [&t](int x) { return t.call(OpKind::Expand, x); };
  });
  try {
    t.call(OpKind::Expand, 1);
    FAIL() << "expected an internal error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("re-entered itself"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("base > broken"), std::string::npos) << e.what();
  }
  // The depth counter unwound: a well-behaved op still lowers afterwards.
  t.set_base(OpKind::Add, "base", [](int) { return std::string("ok"); });
  EXPECT_EQ(t.call(OpKind::Add, 0), "ok");
}

}  // namespace
}  // namespace kiln::lower
