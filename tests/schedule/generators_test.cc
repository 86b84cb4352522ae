#include "hyperpipe/schedule/generators.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "hyperpipe/schedule/passes.h"

namespace hyperpipe::schedule {
namespace {

std::vector<std::string> lines(const Schedule& s) {
  std::vector<std::string> result;
  std::string text = format_schedule(s);
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    result.push_back(text.substr(start, end - start));
  }
  return result;
}

using Lines = std::vector<std::string>;

TEST(Gpipe, AllForwardsThenAllBackwards) {
  EXPECT_EQ(lines(gpipe(2, 3)), (Lines{"F0 F1 F2 BW0 BW1 BW2", "F0 F1 F2 BW0 BW1 BW2"}));
}

TEST(OneFOneB, MegatronOrder) {
  EXPECT_EQ(lines(one_f_one_b(4, 8)),
            (Lines{"F0 F1 F2 F3 BW0 F4 BW1 F5 BW2 F6 BW3 F7 BW4 BW5 BW6 BW7",
                   "F0 F1 F2 BW0 F3 BW1 F4 BW2 F5 BW3 F6 BW4 F7 BW5 BW6 BW7",
                   "F0 F1 BW0 F2 BW1 F3 BW2 F4 BW3 F5 BW4 F6 BW5 F7 BW6 BW7",
                   "F0 BW0 F1 BW1 F2 BW2 F3 BW3 F4 BW4 F5 BW5 F6 BW6 F7 BW7"}));
}

TEST(OneFOneB, FewerMicroBatchesThanStages) {
  EXPECT_EQ(lines(one_f_one_b(4, 2)),
            (Lines{"F0 F1 BW0 BW1", "F0 F1 BW0 BW1", "F0 F1 BW0 BW1", "F0 BW0 F1 BW1"}));
}

TEST(Hetero1F1B, DeeperWarmUpInFrontOfASlowLink) {
  EXPECT_EQ(lines(hetero_1f1b(6, {5, 3, 3, 1})),
            (Lines{"F0 F1 F2 F3 F4 BW0 F5 BW1 BW2 BW3 BW4 BW5",
                   "F0 F1 F2 BW0 F3 BW1 F4 BW2 F5 BW3 BW4 BW5",
                   "F0 F1 F2 BW0 F3 BW1 F4 BW2 F5 BW3 BW4 BW5",
                   "F0 BW0 F1 BW1 F2 BW2 F3 BW3 F4 BW4 F5 BW5"}));
}

TEST(Hetero1F1B, OneFOneBIsTheSpecialCase) {
  const Schedule a = one_f_one_b(5, 7);
  const Schedule b = hetero_1f1b(7, {5, 4, 3, 2, 1});
  EXPECT_EQ(a.ops, b.ops);
}

TEST(Hetero1F1B, RejectsDepthsThatWouldDeadlock) {
  EXPECT_THROW(hetero_1f1b(6, {2, 3, 1}), std::invalid_argument);
  EXPECT_THROW(hetero_1f1b(6, {2, 0}), std::invalid_argument);
  EXPECT_THROW(hetero_1f1b(0, {2, 1}), std::invalid_argument);
}

TEST(ZbH1, SplitsBackwardAndDefersWeightGradients) {
  EXPECT_EQ(lines(zb_h1(3, 4)),
            (Lines{"F0 F1 F2 B0 W0 F3 B1 W1 B2 W2 B3 W3", "F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3",
                   "F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 W2 W3"}));
}

TEST(Interleaved, MegatronOrderWithTwoChunks) {
  EXPECT_EQ(lines(interleaved_1f1b(2, 4, 2)),
            (Lines{"F0.0 F1.0 F0.1 F1.1 F2.0 BW0.1 F3.0 BW1.1 F2.1 BW0.0 F3.1 BW1.0 BW2.1 BW3.1 "
                   "BW2.0 BW3.0",
                   "F0.0 F1.0 F0.1 BW0.1 F1.1 BW1.1 F2.0 BW0.0 F3.0 BW1.0 F2.1 BW2.1 F3.1 BW3.1 "
                   "BW2.0 BW3.0"}));
}

TEST(Interleaved, FewerMicroBatchesThanStagesRunsAllForwardsFirst) {
  EXPECT_EQ(lines(interleaved_1f1b(3, 2, 2)),
            (Lines{"F0.0 F1.0 F0.1 F1.1 BW0.1 BW1.1 BW0.0 BW1.0",
                   "F0.0 F1.0 F0.1 F1.1 BW0.1 BW1.1 BW0.0 BW1.0",
                   "F0.0 F1.0 F0.1 F1.1 BW0.1 BW1.1 BW0.0 BW1.0"}));
}

// As many micro-batches as stages follows Megatron-LM's warm-up rule (schedules.py,
// get_pp_rank_microbatches: 2(S − r − 1) + (v − 1)·S forwards, at most m·v): the last
// rank holds (v − 1)·S + 1 chunk activations at once, not all m·v.
TEST(Interleaved, AsManyMicroBatchesAsStagesWarmsUpAsMegatron) {
  const Schedule s = interleaved_1f1b(4, 4, 3);
  EXPECT_EQ(peak_in_flight(s), (std::vector<int>{12, 12, 11, 9}));
  EXPECT_EQ(lines(s).back(),
            "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F0.2 BW0.2 F1.2 BW1.2 F2.2 BW2.2 F3.2 BW3.2 "
            "BW0.1 BW1.1 BW2.1 BW3.1 BW0.0 BW1.0 BW2.0 BW3.0");
}

TEST(MakeSchedule, ChunksOnlyForInterleaved) {
  EXPECT_THROW(make_schedule(ScheduleKind::gpipe, 2, 4, 2), std::invalid_argument);
  EXPECT_EQ(make_schedule(ScheduleKind::interleaved, 2, 4, 2).chunks, 2);
  EXPECT_THROW(make_schedule(ScheduleKind::hetero_1f1b, 3, 4, 1, {2, 1}), std::invalid_argument);
}

struct GridCase {
  ScheduleKind kind;
  int chunks;
};

class EveryGenerator : public ::testing::TestWithParam<GridCase> {};

// Every generator, over a grid of sizes including fewer micro-batches than stages,
// yields a schedule that validates with and without communication ops.
TEST_P(EveryGenerator, ValidatesOverAGrid) {
  const auto [kind, chunks] = GetParam();
  for (int ranks = 1; ranks <= 6; ++ranks) {
    for (int micro_batches = 1; micro_batches <= 20; ++micro_batches) {
      const Schedule s = make_schedule(kind, ranks, micro_batches, chunks);
      const auto plain = validate(s);
      EXPECT_FALSE(plain) << to_string(kind) << " S=" << ranks << " m=" << micro_batches
                          << " v=" << chunks << ": " << *plain;
      const auto with_comm = validate(insert_communication(s));
      EXPECT_FALSE(with_comm) << to_string(kind) << " S=" << ranks << " m=" << micro_batches
                              << " v=" << chunks << ": " << *with_comm;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, EveryGenerator,
                         ::testing::Values(GridCase{ScheduleKind::gpipe, 1},
                                           GridCase{ScheduleKind::one_f_one_b, 1},
                                           GridCase{ScheduleKind::hetero_1f1b, 1},
                                           GridCase{ScheduleKind::zb_h1, 1},
                                           GridCase{ScheduleKind::interleaved, 1},
                                           GridCase{ScheduleKind::interleaved, 2},
                                           GridCase{ScheduleKind::interleaved, 3}),
                         [](const auto& info) {
                           std::string name(to_string(info.param.kind));
                           for (auto& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name + "_v" + std::to_string(info.param.chunks);
                         });

TEST(HeteroDepths, ValidateForMonotoneDepths) {
  for (const auto& depths : std::vector<std::vector<int>>{
           {8, 8, 8, 1}, {6, 5, 2, 2, 1}, {3, 3, 3}, {10, 1}, {4, 4, 4, 4}}) {
    for (int m = 1; m <= 12; ++m) {
      const auto error = validate(insert_communication(hetero_1f1b(m, depths)));
      EXPECT_FALSE(error) << *error;
    }
  }
}

TEST(InFlight, TextbookValues) {
  const int S = 5, m = 9;
  EXPECT_EQ(peak_in_flight(gpipe(S, m)), std::vector<int>(S, m));
  EXPECT_EQ(peak_in_flight(one_f_one_b(S, m)), (std::vector<int>{5, 4, 3, 2, 1}));
  EXPECT_EQ(peak_in_flight(zb_h1(S, m)), peak_in_flight(one_f_one_b(S, m)));
  EXPECT_EQ(peak_in_flight(one_f_one_b(S, 3)), (std::vector<int>{3, 3, 3, 2, 1}));
  EXPECT_EQ(peak_in_flight(hetero_1f1b(m, {7, 5, 5, 2, 1})), (std::vector<int>{7, 5, 5, 2, 1}));
}

TEST(LinkAwareWarmup, CoversTheRoundTripWithinMemory) {
  // Stage times 10; the link after stage 1 takes 12 one way: the round trip of 24 needs
  // ceil(24 / 10) = 3 extra micro-batches in flight in front of it, and every stage
  // before it keeps one more than the next, as in 1F1B.
  EXPECT_EQ(link_aware_warmup({10, 10, 10, 10}, {0, 12, 0}, {99, 99, 99, 99}),
            (std::vector<int>{7, 6, 2, 1}));
  // Free links: plain 1F1B.
  EXPECT_EQ(link_aware_warmup({1, 2, 3}, {0, 0}, {9, 9, 9}), (std::vector<int>{3, 2, 1}));
  // Memory caps the depth, and no stage may go deeper than the one before it.
  EXPECT_EQ(link_aware_warmup({10, 10, 10, 10}, {0, 12, 0}, {3, 99, 99, 99}),
            (std::vector<int>{3, 3, 2, 1}));
  EXPECT_THROW(link_aware_warmup({1, 1}, {0}, {1, 0}), std::invalid_argument);
}

// The rule the planner costs activations with before a schedule exists is what the
// generated 1F1B (and ZB-H1, whose in-flight counts are 1F1B's) holds at each rank's peak.
TEST(OneFOneBInFlight, IsWhatTheGeneratedScheduleHolds) {
  for (int ranks = 1; ranks <= 6; ++ranks) {
    for (int micro_batches = 1; micro_batches <= 10; ++micro_batches) {
      for (const Schedule& s : {one_f_one_b(ranks, micro_batches), zb_h1(ranks, micro_batches)}) {
        const std::vector<int> peak = peak_in_flight(s);
        for (int r = 0; r < ranks; ++r) {
          EXPECT_EQ(one_f_one_b_in_flight(ranks - r, micro_batches), peak[r])
              << to_string(s.kind) << " S=" << ranks << " m=" << micro_batches << " r=" << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hyperpipe::schedule
