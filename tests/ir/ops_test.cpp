#include <gtest/gtest.h>

#include "kiln/graph.h"
#include "kiln/options.h"

namespace kiln {

// Count tripwire: a new op in ops.def needs its registration, tests and this number bumped.
TEST(Ops, CountTripwire) { EXPECT_EQ(kNumOps, 113); }

TEST(Ops, NamesRoundTrip) {
  for (int i = 0; i < kNumOps; ++i) {
    auto op = static_cast<OpKind>(i);
    auto back = op_from_name(op_name(op));
    ASSERT_TRUE(back.has_value()) << op_name(op);
    EXPECT_EQ(*back, op);
  }
  EXPECT_FALSE(op_from_name("NoSuchOp").has_value());
}

TEST(Settings, EnvironmentAndSet) {
  Options o;
  o.set("max_rank", "8");
  EXPECT_EQ(o.max_rank, 8);
  EXPECT_THROW(o.set("max_rank", "eight"), std::exception);
  EXPECT_THROW(o.set("no_such_setting", "1"), std::exception);
  o.set("debug", "ir,fusion");
  EXPECT_TRUE(o.debug_on("fusion"));
  EXPECT_FALSE(o.debug_on("ops"));
  EXPECT_THROW(o.set("debug", "ir,shapes"), std::exception);  // no such channel
  EXPECT_TRUE(o.debug_on("fusion"));                           // and the refused value left it alone
  EXPECT_FALSE(settings_table().empty());
}

}  // namespace kiln
