#include "hyperpipe/elastic/blame.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "hyperpipe/common/exit_codes.h"

namespace hyperpipe::elastic {
namespace {

launch::LaunchResult ended(int exit_code, int failed_rank, std::vector<int> codes, int signal = 0,
                           bool stopped = false) {
  launch::LaunchResult result;
  result.exit_code = exit_code;
  result.failed_rank = failed_rank;
  result.codes = std::move(codes);
  result.signal = signal;
  result.stopped = stopped;
  return result;
}

// Each way a round ends, as the supervisor reads it.
TEST(Blame, ARoundEndIsReadFromItsRanksCodes) {
  EXPECT_EQ(read_round_end(ended(0, -1, {0, 0}), kExitPlanSwitch), RoundEnd::kFinished);
  EXPECT_EQ(read_round_end(ended(0, -1, {kExitPlanSwitch, 0}), kExitPlanSwitch),
            RoundEnd::kHandedOver);
  // A rank that failed outweighs another's hand-over.
  EXPECT_EQ(read_round_end(ended(137, 1, {kExitPlanSwitch, 137}), kExitPlanSwitch),
            RoundEnd::kRankLost);
  EXPECT_EQ(read_round_end(ended(128 + SIGINT, -1, {130, 130}, SIGINT), kExitPlanSwitch),
            RoundEnd::kStopped);
  EXPECT_EQ(read_round_end(ended(0, -1, {143, 143}, 0, true), kExitPlanSwitch),
            RoundEnd::kUnblamed);
  EXPECT_EQ(read_round_end(ended(kExitBadInput, 0, {2, 143}), kExitPlanSwitch),
            RoundEnd::kInputsRefused);
  EXPECT_EQ(read_round_end(ended(1, 0, {1, 143}), kExitPlanSwitch), RoundEnd::kRankLost);
}

// The rounds a run does not go on from end it with the reason and exit code a user reads;
// the others (finished, handed over, a rank lost) end nothing.
TEST(Blame, TheRoundsARunEndsAfterSayWhy) {
  auto ending = ending_of(RoundEnd::kStopped, ended(130, -1, {130, 130}, SIGINT));
  ASSERT_TRUE(ending);
  EXPECT_EQ(ending->code(), 130);
  EXPECT_NE(std::string(ending->what()).find("every worker stopped after its step"),
            std::string::npos)
      << ending->what();
  ending = ending_of(RoundEnd::kUnblamed, ended(0, -1, {143, 143}, 0, true));
  ASSERT_TRUE(ending);
  EXPECT_EQ(ending->code(), kExitInternalError);
  ending = ending_of(RoundEnd::kInputsRefused, ended(kExitBadInput, 3, {143, 2}));
  ASSERT_TRUE(ending);
  EXPECT_EQ(ending->code(), kExitBadInput);
  EXPECT_NE(std::string(ending->what())
                .find("rank 3 refused its inputs (exit code 2); not "
                      "restarting"),
            std::string::npos)
      << ending->what();
  for (const RoundEnd goes_on : {RoundEnd::kFinished, RoundEnd::kHandedOver, RoundEnd::kRankLost}) {
    EXPECT_FALSE(ending_of(goes_on, ended(137, 1, {0, 137})));
  }
}

// Only a signal other than the launchers' stop is a process's own end.
TEST(Blame, AnOwnSignalIsAnyButTheStop) {
  EXPECT_TRUE(ended_by_own_signal(128 + SIGKILL));
  EXPECT_TRUE(ended_by_own_signal(128 + SIGSEGV));
  EXPECT_FALSE(ended_by_own_signal(128 + SIGTERM));
  EXPECT_FALSE(ended_by_own_signal(1));
  EXPECT_FALSE(ended_by_own_signal(kExitBadInput));
}

// Across hosts the rank blamed is one killed outright, even if seen after another's
// failure (which most likely followed from it); else the first seen.
TEST(Blame, TheRankKilledOutrightIsBlamedThenTheFirstSeen) {
  EXPECT_FALSE(failure_to_blame({}));
  auto blamed = failure_to_blame({{3, 1, 10.0}, {5, 128 + SIGKILL, 12.0}, {1, 1, 11.0}});
  ASSERT_TRUE(blamed);
  EXPECT_EQ(blamed->rank, 5);
  blamed = failure_to_blame({{3, 1, 10.5}, {5, 128 + SIGTERM, 10.0}, {1, 1, 11.0}});
  EXPECT_EQ(blamed->rank, 5);
  blamed = failure_to_blame({{2, 128 + SIGSEGV, 20.0}, {6, 128 + SIGKILL, 19.0}});
  EXPECT_EQ(blamed->rank, 6);
  EXPECT_EQ(blamed->exit_code, 128 + SIGKILL);
  EXPECT_DOUBLE_EQ(blamed->seen, 19.0);
}

}  // namespace
}  // namespace hyperpipe::elastic
