#include "hyperpipe/training/loss_scaler.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace hyperpipe::training {
namespace {

TEST(DynamicLossScaler, BacksOffOnEveryNonFiniteStepAndSkipsIt) {
  DynamicLossScaler scaler({1024.0, 2.0, 0.5, 3});
  EXPECT_FALSE(scaler.update(false));
  EXPECT_DOUBLE_EQ(scaler.scale(), 512.0);
  EXPECT_FALSE(scaler.update(false));
  EXPECT_DOUBLE_EQ(scaler.scale(), 256.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_DOUBLE_EQ(scaler.scale(), 256.0);
}

TEST(DynamicLossScaler, GrowsAfterItsIntervalOfCleanStepsInARow) {
  DynamicLossScaler scaler({1024.0, 2.0, 0.5, 3});
  EXPECT_TRUE(scaler.update(true));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_DOUBLE_EQ(scaler.scale(), 1024.0);
  EXPECT_TRUE(scaler.update(true));  // the third in a row
  EXPECT_DOUBLE_EQ(scaler.scale(), 2048.0);
  EXPECT_EQ(scaler.clean_steps(), 0);
  // An overflow restarts the count: two clean steps after it do not grow the scale.
  EXPECT_TRUE(scaler.update(true));
  EXPECT_FALSE(scaler.update(false));
  EXPECT_DOUBLE_EQ(scaler.scale(), 1024.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_DOUBLE_EQ(scaler.scale(), 1024.0);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_DOUBLE_EQ(scaler.scale(), 2048.0);
}

TEST(DynamicLossScaler, RestoresWhereARunLeftOff) {
  DynamicLossScaler scaler({});
  EXPECT_DOUBLE_EQ(scaler.scale(), 65536.0);  // GradScaler's default
  scaler.restore(128.0, 1999);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_DOUBLE_EQ(scaler.scale(), 256.0);  // the 2000th clean step
}

TEST(DynamicLossScaler, RefusesSettingsThatCannotScale) {
  EXPECT_THROW(DynamicLossScaler({0.0, 2.0, 0.5, 10}), std::invalid_argument);
  EXPECT_THROW(DynamicLossScaler({1.0, 1.0, 0.5, 10}), std::invalid_argument);
  EXPECT_THROW(DynamicLossScaler({1.0, 2.0, 1.0, 10}), std::invalid_argument);
  EXPECT_THROW(DynamicLossScaler({1.0, 2.0, 0.5, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace hyperpipe::training
