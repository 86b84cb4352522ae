// The learning-rate schedule against its closed forms (Megatron-LM's, written out here
// step by step); tests/oracles/lr_schedule_oracle.py holds it against Megatron-core's own
// OptimizerParamScheduler.
#include "hyperpipe/training/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "hyperpipe/common/error.h"

namespace hyperpipe::training {
namespace {

LrSchedule schedule(LrDecayStyle style, int64_t warmup, int64_t decay) {
  LrSchedule s;
  s.max_lr = 3e-4;
  s.min_lr = 3e-5;
  s.warmup_iters = warmup;
  s.decay_iters = decay;
  s.style = style;
  return s;
}

TEST(LrSchedule, WarmsUpLinearlyFromZero) {
  const auto s = schedule(LrDecayStyle::cosine, 4, 20);
  for (int64_t done = 0; done <= 4; ++done) {
    EXPECT_DOUBLE_EQ(s.at(done), 3e-4 * static_cast<double>(done) / 4) << done;
  }
}

TEST(LrSchedule, DecaysLinearlyOrAlongACosineToTheMinimumAndHoldsIt) {
  const auto linear = schedule(LrDecayStyle::linear, 4, 20);
  const auto cosine = schedule(LrDecayStyle::cosine, 4, 20);
  for (int64_t done = 5; done <= 20; ++done) {
    const double ratio = (done - 4) / 16.0;
    EXPECT_DOUBLE_EQ(linear.at(done), 3e-5 + (1 - ratio) * 2.7e-4) << done;
    EXPECT_NEAR(cosine.at(done), 3e-5 + 0.5 * (std::cos(std::numbers::pi * ratio) + 1) * 2.7e-4,
                1e-18)
        << done;
  }
  EXPECT_DOUBLE_EQ(cosine.at(12), 3e-5 + 0.5 * 2.7e-4);  // half way: half the drop
  for (int64_t done : {21, 22, 1000}) {
    EXPECT_EQ(linear.at(done), 3e-5);
    EXPECT_EQ(cosine.at(done), 3e-5);
  }
}

TEST(LrSchedule, ConstantIsTheRateAfterAnyWarmUp) {
  EXPECT_EQ(schedule(LrDecayStyle::constant, 0, 0).at(0), 3e-4);
  EXPECT_EQ(schedule(LrDecayStyle::constant, 0, 0).at(500), 3e-4);
  EXPECT_EQ(schedule(LrDecayStyle::constant, 2, 0).at(1), 1.5e-4);
  EXPECT_EQ(schedule(LrDecayStyle::constant, 2, 0).at(3), 3e-4);
}

TEST(LrSchedule, NumbersThatMakeNoScheduleAreRefusedNamingTheOption) {
  const auto refused = [](const LrSchedule& s) {
    try {
      s.check();
    } catch (const InputError& error) {
      return error.source();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused(schedule(LrDecayStyle::cosine, 4, 20)), "accepted");
  EXPECT_EQ(refused(schedule(LrDecayStyle::cosine, 20, 20)), "--lr-decay-iters");
  EXPECT_EQ(refused(schedule(LrDecayStyle::constant, 20, 5)), "accepted");
  auto above = schedule(LrDecayStyle::linear, 0, 10);
  above.min_lr = 1e-3;
  EXPECT_EQ(refused(above), "--min-lr");
}

TEST(LrSchedule, AResumeWithAnotherScheduleIsRefusedAndTheSameOneAccepted) {
  const auto s = schedule(LrDecayStyle::cosine, 4, 20);
  const nlohmann::json manifest{{"lr_schedule", nlohmann::json::parse(s.to_json().dump())}};
  EXPECT_NO_THROW(training::require_same_schedule(s, manifest, "ck/step-00000005/manifest.json"));
  EXPECT_NO_THROW(training::require_same_schedule(s, nlohmann::json::object(), "old manifest"));
  auto longer = s;
  longer.decay_iters = 40;
  try {
    training::require_same_schedule(longer, manifest, "ck/step-00000005/manifest.json");
    FAIL() << "accepted another schedule";
  } catch (const InputError& error) {
    EXPECT_EQ(error.where(), "lr_schedule");
    EXPECT_NE(std::string(error.what()).find("\"decay_iters\":20"), std::string::npos)
        << error.what();
  }
  // Without decay, a longer run (a larger default --lr-decay-iters) is the same schedule.
  auto constant = schedule(LrDecayStyle::constant, 2, 10);
  const nlohmann::json constant_manifest{{"lr_schedule", constant.to_json()}};
  constant.decay_iters = 30;
  EXPECT_NO_THROW(training::require_same_schedule(constant, constant_manifest, "manifest"));
  constant.warmup_iters = 3;
  EXPECT_THROW(training::require_same_schedule(constant, constant_manifest, "manifest"),
               InputError);
  EXPECT_EQ(training::parse_lr_decay_style("cosine"), LrDecayStyle::cosine);
  EXPECT_EQ(training::parse_lr_decay_style("WSD"), std::nullopt);
}

}  // namespace
}  // namespace hyperpipe::training
