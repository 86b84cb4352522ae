#include "hyperpipe/schedule/passes.h"

#include <gtest/gtest.h>

#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::schedule {
namespace {

TEST(InsertCommunication, ReceivesBeforeAndSendsAfter) {
  const Schedule s = insert_communication(one_f_one_b(3, 2));
  EXPECT_EQ(format_schedule(s, true),
            "F0 SF0>1 F1 SF1>1 RB0<1 BW0 RB1<1 BW1\n"
            "RF0<0 F0 SF0>2 RF1<0 F1 SF1>2 RB0<2 BW0 SB0>0 RB1<2 BW1 SB1>0\n"
            "RF0<1 F0 BW0 SB0>1 RF1<1 F1 BW1 SB1>1\n");
}

// Evaluation's schedule: each rank's forwards with their transfers, in the training
// order, then the loss's sum over every rank.
TEST(ForwardsOnly, KeepsTheForwardHalfInOrderThenTheLossSum) {
  const Schedule s = forwards_only(insert_communication(one_f_one_b(3, 2)));
  EXPECT_EQ(format_schedule(s, true),
            "F0 SF0>1 F1 SF1>1 GN\n"
            "RF0<0 F0 SF0>2 RF1<0 F1 SF1>2 GN\n"
            "RF0<1 F0 RF1<1 F1 GN\n");
}

TEST(InsertCommunication, InterleavedWrapsFromLastRankToFirst) {
  const Schedule s = insert_communication(interleaved_1f1b(2, 2, 2));
  // Chunk 1 of rank 0 (stage 2) takes its input from rank 1 (stage 1).
  bool found = false;
  for (const Op& op : s.ops[0]) {
    if (op.kind == OpKind::recv_forward && op.chunk == 1) {
      EXPECT_EQ(op.peer, 1);
      found = true;
    }
    EXPECT_FALSE(op.kind == OpKind::recv_forward && op.chunk == 0);  // stage 0 reads data
  }
  EXPECT_TRUE(found);
}

TEST(InsertCommunication, OneRankWithChunksNeedsNone) {
  const Schedule s = insert_communication(interleaved_1f1b(1, 3, 2));
  for (const Op& op : s.ops[0]) EXPECT_TRUE(is_compute(op.kind));
  EXPECT_FALSE(validate(s));
}

TEST(Validate, FindsADeadlock) {
  Schedule s = one_f_one_b(2, 2);
  // Rank 1 wants the backward of micro-batch 1 before running its forward.
  s.ops[1] = {
      {OpKind::forward, 0}, {OpKind::backward, 1}, {OpKind::forward, 1}, {OpKind::backward, 0}};
  const auto error = validate(s);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("deadlock"), std::string::npos) << *error;
  EXPECT_NE(error->find("rank 1 waits at BW1 for F1 of the same stage"), std::string::npos)
      << *error;
}

TEST(Validate, FindsACrossStageDeadlock) {
  Schedule s = one_f_one_b(2, 3);
  s.ops[0] = {{OpKind::forward, 0}, {OpKind::backward, 0}, {OpKind::forward, 1},
              {OpKind::forward, 2}, {OpKind::backward, 1}, {OpKind::backward, 2}};
  s.ops[1] = {{OpKind::forward, 0},  {OpKind::forward, 1}, {OpKind::backward, 0},
              {OpKind::backward, 1}, {OpKind::forward, 2}, {OpKind::backward, 2}};
  const auto error = validate(insert_communication(s));
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("rank 0 waits at RB0<1"), std::string::npos) << *error;
  EXPECT_NE(error->find("rank 1 waits at RF1<0"), std::string::npos) << *error;
}

TEST(Validate, FindsMissingAndDuplicateOps) {
  Schedule missing = gpipe(2, 2);
  missing.ops[1].pop_back();
  EXPECT_NE(validate(missing)->find("needs one BW or one B and one W"), std::string::npos);
  Schedule twice = gpipe(2, 2);
  twice.ops[0].push_back({OpKind::forward, 1});
  EXPECT_NE(validate(twice)->find("F1 appears 2 times"), std::string::npos);
}

TEST(Validate, FindsUnmatchedAndMisdirectedMessages) {
  Schedule extra = insert_communication(gpipe(2, 1));
  extra.ops[0].push_back({OpKind::send_forward, 0, 0, 1});
  EXPECT_NE(validate(extra)->find("never received"), std::string::npos) << *validate(extra);

  Schedule misdirected = insert_communication(gpipe(3, 1));
  for (Op& op : misdirected.ops[0]) {
    if (op.kind == OpKind::send_forward) op.peer = 2;
  }
  EXPECT_NE(validate(misdirected)->find("does not run the neighbouring stage"), std::string::npos);

  Schedule unsent = insert_communication(gpipe(2, 1));
  std::erase_if(unsent.ops[0], [](const Op& op) { return op.kind == OpKind::send_forward; });
  EXPECT_NE(validate(unsent)->find("rank 1 waits at RF0<0 for a message that is never sent"),
            std::string::npos)
      << *validate(unsent);
}

}  // namespace
}  // namespace hyperpipe::schedule
