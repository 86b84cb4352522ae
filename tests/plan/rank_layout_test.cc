#include "hyperpipe/plan/rank_layout.h"

#include <gtest/gtest.h>

#include "hyperpipe/common/error.h"

namespace hyperpipe::plan {
namespace {

TEST(Shard, EvenAsPossibleContiguousAndComplete) {
  for (int64_t b = 1; b <= 13; ++b) {
    for (int dp = 1; dp <= b; ++dp) {
      int64_t next = 0;
      for (int i = 0; i < dp; ++i) {
        const auto range = shard(b, dp, i);
        EXPECT_EQ(range.begin, next);
        EXPECT_TRUE(range.size() == b / dp || range.size() == b / dp + 1);
        if (i > 0) {
          EXPECT_LE(range.size(), shard(b, dp, i - 1).size());
        }
        next = range.end;
      }
      EXPECT_EQ(next, b);
    }
  }
}

TEST(Reshard, EverySampleCrossesOnceBetweenTheRanksHoldingAndNeedingIt) {
  for (int64_t b = 1; b <= 12; ++b) {
    for (int from = 1; from <= b; ++from) {
      for (int to = 1; to <= b; ++to) {
        std::vector<int> crossings(b, 0);
        for (const auto& slice : reshard(b, from, to)) {
          const auto held = shard(b, from, slice.from_index);
          const auto needed = shard(b, to, slice.to_index);
          for (int64_t s = slice.samples.begin; s < slice.samples.end; ++s) {
            ++crossings[s];
            EXPECT_TRUE(held.begin <= s && s < held.end);
            EXPECT_TRUE(needed.begin <= s && s < needed.end);
          }
        }
        for (int64_t s = 0; s < b; ++s) EXPECT_EQ(crossings[s], 1) << b << from << to;
      }
    }
  }
  // Equal dp: rank i sends everything to rank i.
  EXPECT_EQ(reshard(4, 2, 2), (std::vector<Slice>{{0, 0, {0, 2}}, {1, 1, {2, 4}}}));
  // 2 → 3 over 6 samples: [0,3) [3,6) against [0,2) [2,4) [4,6).
  EXPECT_EQ(reshard(6, 2, 3),
            (std::vector<Slice>{{0, 0, {0, 2}}, {0, 1, {2, 3}}, {1, 1, {3, 4}}, {1, 2, {4, 6}}}));
}

TEST(RankLayout, OneProcessPerDeviceGroupByGroup) {
  Plan plan;
  plan.micro_batch_size = 4;
  plan.stages = {{0, 5, {8, 9}, 2, 1, model::Recompute::none},
                 {5, 9, {3}, 1, 1, model::Recompute::none},
                 {9, 14, {0, 1, 2}, 3, 1, model::Recompute::none}};
  const RankLayout layout(plan, "p.json");
  EXPECT_EQ(layout.world_size(), 6);
  EXPECT_EQ(layout.groups(), 3);
  EXPECT_EQ(layout.role(1).device, 9);
  EXPECT_EQ(layout.role(1).dp_index, 1);
  EXPECT_EQ(layout.role(2).group, 1);
  EXPECT_EQ(layout.role(5).dp, 3);
  EXPECT_EQ(layout.rank_of(2, 1), 4);
  EXPECT_EQ(layout.dp_ranks(0, 2), (std::vector<int>{3, 4, 5}));
}

TEST(RankLayout, PipelinesSideBySideFollowThePlansOwn) {
  Plan plan;
  plan.stages = {{0, 7, {0}, 1, 1, model::Recompute::none},
                 {7, 14, {1, 2}, 2, 1, model::Recompute::none}};
  Pipeline replica;
  replica.stages = {{0, 14, {5, 6}, 2, 1, model::Recompute::none}};
  plan.replicas.push_back(replica);
  const RankLayout layout(plan, "p.json");
  EXPECT_EQ(layout.world_size(), 5);
  EXPECT_EQ(layout.pipelines(), 2);
  EXPECT_EQ(layout.groups(1), 1);
  EXPECT_EQ(layout.role(3).pipeline, 1);
  EXPECT_EQ(layout.role(3).device, 5);
  EXPECT_EQ(layout.rank_of(1, 0, 1), 4);
  EXPECT_EQ(layout.dp_ranks(0, 1), (std::vector<int>{1, 2}));
}

// Inside a device group, shards vary fastest: devices[dp_index · tp + tp_index], as the
// plan lists them. dp_ranks pairs the same shard of every data-parallel rank, tp_ranks the
// shards of one.
TEST(RankLayout, ShardsOfOneDataParallelRankAreNeighbours) {
  Plan plan;
  plan.micro_batch_size = 2;
  plan.stages = {{0, 2, {7}, 1, 1, model::Recompute::none},
                 {2, 5, {0, 1, 2, 3}, 2, 2, model::Recompute::none}};
  const RankLayout layout(plan, "p.json");
  EXPECT_EQ(layout.world_size(), 5);
  EXPECT_EQ(layout.role(0).tp, 1);
  const auto& r = layout.role(3);  // group 1: dp 0 tp 0, dp 0 tp 1, dp 1 tp 0, dp 1 tp 1
  EXPECT_EQ(r.group, 1);
  EXPECT_EQ(r.dp_index, 1);
  EXPECT_EQ(r.tp_index, 0);
  EXPECT_EQ(r.tp, 2);
  EXPECT_EQ(r.device, 2);
  EXPECT_EQ(layout.rank_of(0, 1, 1, 1), 4);
  EXPECT_EQ(layout.dp_ranks(0, 1, 1), (std::vector<int>{2, 4}));
  EXPECT_EQ(layout.tp_ranks(0, 1, 1), (std::vector<int>{3, 4}));
  EXPECT_EQ(layout.tp_ranks(0, 0, 0), (std::vector<int>{0}));
  EXPECT_EQ(layout.group_ranks(0, 1), (std::vector<int>{1, 2, 3, 4}));
}

// The chunks of one device group are one shard each: they must share dp and tp.
// The runtime numbers its processes by the plan's one rank order: rank r runs on the r-th
// device of devices_in_rank_order, over pipelines side by side, interleaved chunks and
// groups of dp · tp shards.
TEST(RankLayout, RanksAreThePlansRankOrder) {
  Plan plan;
  plan.chunks = 2;
  plan.stages = {{0, 2, {4, 5, 6, 7}, 2, 2, model::Recompute::none},
                 {2, 4, {0, 1}, 1, 2, model::Recompute::none},
                 {4, 6, {4, 5, 6, 7}, 2, 2, model::Recompute::none},
                 {6, 8, {0, 1}, 1, 2, model::Recompute::none}};
  Pipeline replica;
  replica.stages = {{0, 8, {9, 8}, 2, 1, model::Recompute::none}};
  plan.replicas.push_back(replica);
  const RankLayout layout(plan, "p.json");
  const std::vector<int> devices = devices_in_rank_order(plan);
  ASSERT_EQ(layout.world_size(), static_cast<int>(devices.size()));
  for (int r = 0; r < layout.world_size(); ++r) {
    const ProcessRole& role = layout.role(r);
    EXPECT_EQ(role.device, devices[r]) << r;
    EXPECT_EQ(layout.rank_of(role.pipeline, role.group, role.dp_index, role.tp_index), r);
  }
  EXPECT_EQ(devices, (std::vector<int>{4, 5, 6, 7, 0, 1, 9, 8}));
}

TEST(RankLayout, RefusesChunksSplitUnlikeTheirGroup) {
  Plan chunks;
  chunks.chunks = 2;
  chunks.stages = {{0, 4, {0, 1}, 1, 2, model::Recompute::none},
                   {4, 8, {2}, 1, 1, model::Recompute::none},
                   {8, 11, {0, 1}, 2, 1, model::Recompute::none},
                   {11, 14, {2}, 1, 1, model::Recompute::none}};
  try {
    RankLayout(chunks, "chunks.json");
    FAIL() << "a chunk split unlike its group's first was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("stages[2]"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace hyperpipe::plan
