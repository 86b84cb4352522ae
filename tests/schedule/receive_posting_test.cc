#include "hyperpipe/schedule/receive_posting.h"

#include <gtest/gtest.h>

#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/schedule/passes.h"

namespace hyperpipe::schedule {
namespace {

TEST(ReceivePosting, OneComputeAheadWhereWarmUpsStepByOne) {
  for (const Schedule& s : {one_f_one_b(4, 8), gpipe(3, 4), zb_h1(3, 6), interleaved_1f1b(2, 4, 2),
                            hetero_1f1b(8, {4, 3, 2, 1})}) {
    for (int r = 0; r < s.ranks; ++r) EXPECT_EQ(receive_lookahead(s, r), 1) << to_string(s.kind);
  }
}

TEST(ReceivePosting, BothEndsOfADeeperWarmUpLookFurther) {
  // Depths 6, 2, 1: stage 0 keeps 3 more micro-batches beyond stage 1's than 1F1B does.
  const Schedule s = hetero_1f1b(12, {6, 2, 1});
  EXPECT_EQ(receive_lookahead(s, 0), 7);
  EXPECT_EQ(receive_lookahead(s, 1), 7);
  EXPECT_EQ(receive_lookahead(s, 2), 1);
}

TEST(ReceivePosting, PostsTheReceivesBeforeTheNextComputeOps) {
  // The last of 2 stages in 1F1B: RF0 F0 BW0 SB0 RF1 F1 ...
  const Schedule s = insert_communication(one_f_one_b(2, 3));
  const auto& ops = s.ops[1];
  ASSERT_EQ(ops[0].kind, OpKind::recv_forward);
  ASSERT_EQ(ops[1].kind, OpKind::forward);
  // At F0: nothing before BW0 to receive; at BW0: RF1, which comes before F1.
  EXPECT_TRUE(receives_posted_at(s, 1, 1).empty());
  const auto at_backward = receives_posted_at(s, 1, 2);
  ASSERT_EQ(at_backward.size(), 1u);
  EXPECT_EQ(ops[at_backward[0]].kind, OpKind::recv_forward);
  EXPECT_EQ(ops[at_backward[0]].micro_batch, 1);
  // Deeper: stage 1 of depths 3, 1 posts three compute ops ahead, so at F0 already RF1
  // (before F1, the second compute op after F0); stage 0 then RB0 and RB1 at F2.
  const Schedule deep = insert_communication(hetero_1f1b(4, {3, 1}));
  const auto ahead = receives_posted_at(deep, 1, 1);
  ASSERT_EQ(ahead.size(), 1u);
  EXPECT_EQ(deep.ops[1][ahead[0]].micro_batch, 1);
  size_t third_forward = 0;
  while (deep.ops[0][third_forward].kind != OpKind::forward ||
         deep.ops[0][third_forward].micro_batch != 2) {
    ++third_forward;
  }
  const auto gradients = receives_posted_at(deep, 0, third_forward);
  ASSERT_EQ(gradients.size(), 2u);
  EXPECT_EQ(deep.ops[0][gradients[0]].kind, OpKind::recv_backward);
  EXPECT_EQ(deep.ops[0][gradients[1]].micro_batch, 1);
}

}  // namespace
}  // namespace hyperpipe::schedule
