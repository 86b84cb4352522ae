#include "hyperpipe/planner/layer_split.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace hyperpipe::planner {
namespace {

TEST(UniformSplit, EqualBlocksEmbeddingFirstHeadLast) {
  // 34 layers = embedding + 32 blocks + head.
  EXPECT_EQ(uniform_split(34, 4), (std::vector<int>{9, 17, 25, 34}));
  // 10 blocks over 4 stages: 3, 3, 2, 2.
  EXPECT_EQ(uniform_split(12, 4), (std::vector<int>{4, 7, 9, 12}));
  EXPECT_EQ(uniform_split(12, 1), (std::vector<int>{12}));
  EXPECT_THROW(uniform_split(12, 11), std::invalid_argument);
}

TEST(BalancedSplit, MinimisesTheLargestPart) {
  // Brute force over every split of a small list agrees.
  const std::vector<double> weights{5, 1, 1, 1, 4, 2, 2, 6};
  const auto ends = balanced_split(weights, 3);
  const auto largest = [&](const std::vector<int>& cut) {
    double worst = 0;
    int start = 0;
    for (int end : cut) {
      double sum = 0;
      for (int i = start; i < end; ++i) sum += weights[i];
      worst = std::max(worst, sum);
      start = end;
    }
    return worst;
  };
  double best = 1e9;
  for (int a = 1; a < 7; ++a) {
    for (int b = a + 1; b < 8; ++b) best = std::min(best, largest({a, b, 8}));
  }
  EXPECT_DOUBLE_EQ(largest(ends), best);
  EXPECT_EQ(ends.back(), 8);
}

TEST(ProportionalSplit, BlocksFollowTheShares) {
  // 12 blocks, shares 3 : 1 → 9 and 3 blocks; embedding and head added at the ends.
  EXPECT_EQ(proportional_split(14, {3, 1}), (std::vector<int>{10, 14}));
  // Every stage keeps at least one block.
  EXPECT_EQ(proportional_split(6, {100, 1, 1}), (std::vector<int>{3, 4, 6}));
  const auto ends = proportional_split(34, {312, 125, 125, 65});
  EXPECT_EQ(ends.back(), 34);
  for (size_t s = 1; s < ends.size(); ++s) EXPECT_GT(ends[s], ends[s - 1]);
}

}  // namespace
}  // namespace hyperpipe::planner
