#include "hyperpipe/schedule/op.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace hyperpipe::schedule {
namespace {

// kOpKindCount counts every kind: each value below it is a kind with its own letter, and
// the value it names is none (a kind added after optimizer_step fails here).
TEST(OpKinds, TheCountCoversEveryKindAndNoMore) {
  std::set<std::string_view> letters;
  for (size_t i = 0; i < kOpKindCount; ++i) {
    const std::string_view name = letter(static_cast<OpKind>(i));
    EXPECT_NE(name, "?") << i;
    letters.insert(name);
  }
  EXPECT_EQ(letters.size(), kOpKindCount);
  EXPECT_EQ(letter(static_cast<OpKind>(kOpKindCount)), "?");
}

TEST(OpKinds, ATableIsHandledOnlyWhenEveryKindHasAnEntry) {
  OpKindTable<const char*> table{};
  for (size_t i = 0; i < kOpKindCount; ++i) table[i] = "handler";
  EXPECT_TRUE(every_kind_handled(table));
  table[op_index(OpKind::global_norm)] = nullptr;
  EXPECT_FALSE(every_kind_handled(table));
}

}  // namespace
}  // namespace hyperpipe::schedule
