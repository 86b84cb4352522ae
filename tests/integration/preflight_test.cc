// A launch checks what every process would check alone (options, data and its token ids,
// checkpoint directory, plan, dtype) once, before any process starts: a mistake gets one
// message and exit 2, not one per rank after the ranks have met.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include "hyperpipe/datasets/indexed_dataset.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

// How often `needle` occurs in `text`.
int occurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

struct Refused {
  int code = 0;
  std::string log;
};

// `hyperpipe launch` of DIR/plan.json with `options`, expected to be refused.
Refused launch_refused(const std::string& dir, const std::string& options) {
  const std::string log = dir + "/log.txt";
  const int code = run_command(fmt::format("{} launch --plan {}/plan.json {} {} > {} 2>&1", kBinary,
                                           dir, options, device_options(), log));
  return {code, slurp(log)};
}

// Refused once, with exit 2, saying `message`, and no process of the run ever started.
void expect_refused_before_start(const Refused& refused, const std::string& message) {
  EXPECT_EQ(refused.code, 2) << refused.log;
  EXPECT_EQ(occurrences(refused.log, message), 1) << refused.log;
  EXPECT_EQ(occurrences(refused.log, "error:"), 1) << refused.log;
  EXPECT_EQ(refused.log.find("[rank"), std::string::npos) << refused.log;
  EXPECT_EQ(refused.log.find("launching"), std::string::npos) << refused.log;
}

TEST(Preflight, AMistypedOptionIsRefusedOnceWithTheOptionItMeant) {
  const std::string dir = prepare("preflight-typo", kTinyGpt, kThreeStages);
  expect_refused_before_start(launch_refused(dir, "--data " + kCorpus + " --stpes 3"),
                              "unknown option --stpes for train; did you mean '--steps'?");
}

TEST(Preflight, MissingDataIsRefusedOnce) {
  const std::string dir = prepare("preflight-no-data", kTinyGpt, kThreeStages);
  const auto refused = launch_refused(dir, "--steps 3");
  EXPECT_EQ(refused.code, 2) << refused.log;
  EXPECT_EQ(occurrences(refused.log, "--data is required"), 1) << refused.log;
  EXPECT_EQ(refused.log.find("[rank"), std::string::npos) << refused.log;
}

TEST(Preflight, DataThatCannotBeReadIsRefusedOnceNamingIt) {
  const std::string dir = prepare("preflight-bad-data", kTinyGpt, kThreeStages);
  expect_refused_before_start(launch_refused(dir, "--data /nonexistent/corpus.txt --steps 2"),
                              "/nonexistent/corpus.txt: cannot open the training data");
}

TEST(Preflight, TokenIdsBeyondTheVocabularyAreFoundBeforeTheRunStarts) {
  const std::string dir = prepare("preflight-vocab", kTinyGpt, kThreeStages);
  std::vector<std::vector<int64_t>> sequences(64, std::vector<int64_t>(16, 7));
  sequences[40][3] = 300;  // the test model has 256 ids; a window the first steps may not draw
  datasets::write_indexed_dataset(dir + "/big-ids", sequences, datasets::TokenDtype::kU16, {0});
  expect_refused_before_start(
      launch_refused(dir, fmt::format("--data {}/big-ids --steps 1", dir)),
      "big-ids.bin: sequence 40: token ids from 0 to 255 (the model's vocabulary); "
      "found 300 at token 3 of the sequence");
}

TEST(Preflight, ACheckpointDirectoryOfAnEarlierRunIsRefusedBeforeTheRunStarts) {
  const std::string dir = prepare("preflight-used-checkpoints", kTinyGpt, kThreeStages);
  std::filesystem::create_directories(dir + "/checkpoints/step-00000004");
  expect_refused_before_start(
      launch_refused(
          dir, fmt::format("--data {} --steps 2 --checkpoint-dir {}/checkpoints", kCorpus, dir)),
      "holds 1 checkpoint of an earlier run; --resume to continue it, --overwrite to replace it");
  // Nothing was removed or locked by the check.
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoints/step-00000004"));
}

TEST(Preflight, ACheckpointDirectoryAnotherRunHoldsIsRefusedBeforeTheRunStarts) {
  const std::string dir = prepare("preflight-held-checkpoints", kTinyGpt, kThreeStages);
  std::filesystem::create_directories(dir + "/checkpoints");
  // This test holds the directory's lock as a running run's rank 0 does.
  const int lock = ::open((dir + "/checkpoints/.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(flock(lock, LOCK_EX | LOCK_NB), 0);
  const std::string holder = "pid 1234 on somewhere";
  ASSERT_EQ(::write(lock, holder.data(), holder.size()), static_cast<ssize_t>(holder.size()));
  const auto refused = launch_refused(
      dir, fmt::format("--data {} --steps 2 --checkpoint-dir {}/checkpoints", kCorpus, dir));
  ::close(lock);
  expect_refused_before_start(refused, "in use by another run (pid 1234 on somewhere)");
}

TEST(Preflight, ResumingAnotherRunsCheckpointIsRefusedBeforeTheRunStarts) {
  const std::string dir = prepare("preflight-resume", kTinyGpt, kThreeStages);
  launch_into(dir, "--data " + kCorpus, 1, "first");
  expect_refused_before_start(
      launch_refused(dir, fmt::format("--data {} --steps 2 --seed 7 --resume --checkpoint-dir "
                                      "{}/first/checkpoints",
                                      kCorpus, dir)),
      "--resume continues the run that wrote this checkpoint");
}

TEST(Preflight, MoreValidationThanTheDataHoldsIsRefusedBeforeTheRunStarts) {
  const std::string dir = prepare("preflight-validation", kTinyGpt, kThreeStages);
  expect_refused_before_start(
      launch_refused(dir, "--data " + kCorpus + " --steps 2 --eval-interval 1 --eval-iters 100000"),
      "--eval-iters: 100000: from 1 to 416: each validation batch holds a global batch (6 "
      "windows of 17 tokens)");
}

TEST(Preflight, AnOptionThatNeedsAnotherIsRefusedBeforeTheRunStarts) {
  const std::string dir = prepare("preflight-resume-alone", kTinyGpt, kThreeStages);
  expect_refused_before_start(launch_refused(dir, "--data " + kCorpus + " --steps 2 --resume"),
                              "--resume: a --checkpoint-dir to resume from");
}

}  // namespace
}  // namespace hyperpipe::runtime
