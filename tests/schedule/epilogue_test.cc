#include "hyperpipe/schedule/epilogue.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/schedule/passes.h"

namespace hyperpipe::schedule {
namespace {

Schedule with_epilogue(const Schedule& compute, const EpilogueOptions& options) {
  return add_epilogue(insert_communication(compute), options);
}

// The ops of a rank from the first epilogue op on, as text.
std::string tail(const Schedule& s, int rank, size_t count) {
  std::string text;
  const auto& ops = s.ops[rank];
  for (size_t i = ops.size() - count; i < ops.size(); ++i) {
    text += (text.empty() ? "" : " ") + to_string(ops[i], s.chunks > 1);
  }
  return text;
}

TEST(Epilogue, EndsEveryRankWithTheSumsTheNormAndTheStep) {
  const Schedule s = with_epilogue(one_f_one_b(3, 4), {false, true, true});
  EXPECT_FALSE(validate(s));
  // The tied embedding is summed between the first and the last stage only.
  EXPECT_EQ(tail(s, 0, 5), "AR RS TE GN OPT");
  EXPECT_EQ(tail(s, 1, 4), "AR RS GN OPT");
  EXPECT_EQ(tail(s, 2, 5), "AR RS TE GN OPT");
  EXPECT_EQ(collective_ranks(s, OpKind::tied_embedding), (std::vector<int>{0, 2}));
}

TEST(Epilogue, EveryScheduleKindStaysValid) {
  for (const Schedule& compute :
       {gpipe(4, 6), one_f_one_b(4, 6), interleaved_1f1b(2, 4, 2), zb_h1(4, 6),
        hetero_1f1b(6, {4, 3, 2, 1}), interleaved_1f1b(1, 3, 2)}) {
    for (const bool overlap : {false, true}) {
      const Schedule s = with_epilogue(compute, {overlap, true, true});
      EXPECT_FALSE(validate(s)) << to_string(compute.kind) << " overlap " << overlap << ": "
                                << validate(s).value_or("");
    }
  }
}

// Where chunk `chunk`'s AR sits on `rank`, and where its last weight gradient does.
std::pair<size_t, size_t> positions(const Schedule& s, int rank, int chunk) {
  const auto& ops = s.ops[rank];
  size_t all_reduce = ops.size();
  size_t last_weight = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].chunk != chunk) continue;
    if (ops[i].kind == OpKind::all_reduce) all_reduce = i;
    if (ops[i].kind == OpKind::backward || ops[i].kind == OpKind::backward_weight) {
      last_weight = i;
    }
  }
  return {all_reduce, last_weight};
}

TEST(Epilogue, AnOverlappedBucketStartsRightAfterItsChunksLastWeightGradient) {
  const Schedule s = with_epilogue(interleaved_1f1b(2, 4, 2), {true, false, false});
  for (int rank = 0; rank < 2; ++rank) {
    for (int chunk = 0; chunk < 2; ++chunk) {
      const auto [all_reduce, last_weight] = positions(s, rank, chunk);
      // Right after it, or after the send of that backward's gradient.
      EXPECT_GE(all_reduce, last_weight + 1);
      EXPECT_LE(all_reduce, last_weight + 2);
      for (size_t i = last_weight + 1; i < all_reduce; ++i) {
        EXPECT_EQ(s.ops[rank][i].kind, OpKind::send_backward);
      }
    }
    // Chunk 1 (the later stages) finishes first: its bucket goes out before chunk 0's
    // last backwards, which it overlaps.
    EXPECT_LT(positions(s, rank, 1).first, positions(s, rank, 0).second);
  }
  // Without overlap both buckets wait for the rank's last op, in the order they finished.
  const Schedule plain = with_epilogue(interleaved_1f1b(2, 4, 2), {false, false, false});
  EXPECT_EQ(tail(plain, 0, 4), "AR.1 AR.0 GN OPT");
}

TEST(Epilogue, ValidationFindsABrokenEpilogue) {
  const Schedule good = with_epilogue(one_f_one_b(2, 2), {false, true, false});
  ASSERT_FALSE(validate(good));
  const auto broken = [&](auto&& change) {
    Schedule s = good;
    change(s);
    return validate(s).value_or("");
  };
  // A bucket all-reduced before its chunk's last backward.
  EXPECT_NE(broken([](Schedule& s) {
              auto& ops = s.ops[1];
              const auto ar = std::find_if(ops.begin(), ops.end(), [](const Op& op) {
                return op.kind == OpKind::all_reduce;
              });
              std::rotate(ops.begin() + 2, ar, ar + 1);
            }).find("after the all-reduce"),
            std::string::npos);
  // A chunk never all-reduced.
  EXPECT_NE(broken([](Schedule& s) {
              auto& ops = s.ops[0];
              ops.erase(std::find_if(ops.begin(), ops.end(),
                                     [](const Op& op) { return op.kind == OpKind::all_reduce; }));
            }).find("never all-reduced"),
            std::string::npos);
  // The tied embedding summed on one end only.
  EXPECT_NE(broken([](Schedule& s) {
              auto& ops = s.ops[1];
              ops.erase(std::find_if(ops.begin(), ops.end(), [](const Op& op) {
                return op.kind == OpKind::tied_embedding;
              }));
            }).find("one end only"),
            std::string::npos);
  // The optimizer before the norm.
  EXPECT_NE(broken([](Schedule& s) {
              std::swap(s.ops[0].back(), s.ops[0][s.ops[0].size() - 2]);
            }).find("GN and then one OPT"),
            std::string::npos);
}

TEST(Epilogue, CollectivesInAnotherOrderDeadlock) {
  // Rank 0 sums the tied embedding before the pipelines, rank 1 after: each waits for the
  // other at a different collective.
  Schedule s = with_epilogue(one_f_one_b(2, 2), {false, true, true});
  auto& ops = s.ops[0];
  const auto rs = std::find_if(ops.begin(), ops.end(),
                               [](const Op& op) { return op.kind == OpKind::sync_replicas; });
  std::iter_swap(rs, rs + 1);  // RS TE → TE RS
  const std::string why = validate(s).value_or("");
  EXPECT_NE(why.find("deadlock"), std::string::npos) << why;
  EXPECT_NE(why.find("rank 0 waits at TE for rank 1 to reach TE"), std::string::npos) << why;
}

}  // namespace
}  // namespace hyperpipe::schedule
