#include "hyperpipe/runtime/dropout.h"

#include <gtest/gtest.h>

namespace hyperpipe::runtime {
namespace {

const DropoutPlace kPlace{7, 3, 0};

// Outside a scope nothing is dropped; inside, about kDropoutRate of the elements are zero
// and the rest scaled by 1/(1 − rate), so the expectation is kept.
TEST(Dropout, DropsTheRateAndKeepsTheExpectation) {
  const auto x = torch::ones({8, 64, 128});
  EXPECT_TRUE(torch::equal(dropout(x, 1, DropoutSite::mlp_residual), x));
  const DropoutScope scope(kPlace);
  const auto y = dropout(x, 1, DropoutSite::mlp_residual);
  const double zeros = (y == 0).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(zeros, kDropoutRate, 0.005);  // 65536 draws: the standard error is 0.0012
  EXPECT_NEAR(y.mean().item<double>(), 1.0, 0.01);
  EXPECT_TRUE(torch::allclose(y.masked_select(y != 0), torch::full({1}, 1 / (1 - kDropoutRate))));
}

// A mask belongs to its sample of the global batch: the same rows draw the same masks
// whichever micro-batch or data-parallel share carries them; other layers, sites and
// steps draw others.
TEST(Dropout, MasksFollowTheSampleNotTheBatch) {
  const auto x = torch::ones({4, 16, 32});
  torch::Tensor whole, tail, other_layer, other_site, other_step;
  {
    const DropoutScope scope(kPlace);
    whole = dropout(x, 2, DropoutSite::attention_residual);
    other_layer = dropout(x, 3, DropoutSite::attention_residual);
    other_site = dropout(x, 2, DropoutSite::mlp_residual);
  }
  {
    const DropoutScope scope(DropoutPlace{kPlace.seed, kPlace.step, kPlace.first_sample + 2});
    tail = dropout(x.narrow(0, 0, 2), 2, DropoutSite::attention_residual);
  }
  {
    const DropoutScope scope(DropoutPlace{kPlace.seed, kPlace.step + 1, kPlace.first_sample});
    other_step = dropout(x, 2, DropoutSite::attention_residual);
  }
  EXPECT_TRUE(torch::equal(tail, whole.narrow(0, 2, 2)));
  EXPECT_FALSE(torch::equal(whole.narrow(0, 0, 2), whole.narrow(0, 2, 2)));
  EXPECT_FALSE(torch::equal(other_layer, whole));
  EXPECT_FALSE(torch::equal(other_site, whole));
  EXPECT_FALSE(torch::equal(other_step, whole));
}

// A tensor-parallel shard holding heads 2 and 3 of four draws the whole layer's masks of
// those heads.
TEST(Dropout, AShardDrawsItsHeadsMasks) {
  const auto probabilities = torch::ones({2, 4, 8, 8});
  const DropoutScope scope(kPlace);
  const auto whole = attention_dropout(probabilities, 1, 0);
  const auto shard = attention_dropout(probabilities.narrow(1, 2, 2), 1, 2);
  EXPECT_TRUE(torch::equal(shard, whole.narrow(1, 2, 2)));
  EXPECT_FALSE(torch::equal(whole.narrow(1, 0, 2), whole.narrow(1, 2, 2)));
}

}  // namespace
}  // namespace hyperpipe::runtime
