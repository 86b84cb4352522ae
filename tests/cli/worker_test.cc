// `hyperpipe` stays free of libtorch; the commands that need it reach hyperpipe-worker.
#include "hyperpipe/cli/worker.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cli/cli_run.h"
#include "test_files.h"

namespace hyperpipe::cli {
namespace {

using testing::Result;
using testing::run;
using testing::run_binary;

// The shared libraries an executable names in its dynamic section (readelf, binutils).
std::string needed_libraries(const std::string& binary) {
  const Result r = run_binary("readelf", "-d " + binary);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string needed;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("(NEEDED)") != std::string::npos) needed += line + "\n";
  }
  return needed;
}

bool names_libtorch(const std::string& text) {
  return text.find("libtorch") != std::string::npos || text.find("libc10") != std::string::npos;
}

TEST(Executables, HyperpipeDoesNotLinkLibtorch) {
  const std::string needed = needed_libraries(HYPERPIPE_BINARY);
  ASSERT_NE(needed.find("libc.so"), std::string::npos) << needed;  // readelf did list them
  EXPECT_FALSE(names_libtorch(needed)) << needed;
}

TEST(Executables, PlanningCommandsLoadNoLibtorch) {
  // The dynamic loader's own account of every library the process opened, dlopen too.
  const Result r = run_binary(HYPERPIPE_BINARY, "describe --model gpt3-2.7b", "LD_DEBUG=files ");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.err.find("libstdc++"), std::string::npos) << "LD_DEBUG printed nothing";
  EXPECT_FALSE(names_libtorch(r.err));
}

#ifdef HYPERPIPE_WORKER_BINARY
TEST(Executables, TheWorkerLinksLibtorch) {
  EXPECT_TRUE(names_libtorch(needed_libraries(HYPERPIPE_WORKER_BINARY)));
}

TEST(Executables, TrainHelpIsTheWorkers) {
  const Result r = run("train --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Usage: hyperpipe train"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--checkpoint-dir"), std::string::npos) << r.out;
}

// `hyperpipe help COMMAND` for the worker's commands is the worker's help, as for every
// other command, not the program's examples.
TEST(Executables, HelpForTheWorkersCommandsIsTheirs) {
  for (const char* command : {"train", "profile", "export-checkpoint"}) {
    const Result help = run(std::string("help ") + command);
    ASSERT_EQ(help.exit_code, 0) << command << ": " << help.err;
    EXPECT_EQ(help.out, run(std::string(command) + " --help").out) << command;
    EXPECT_NE(help.out.find(std::string("Usage: hyperpipe ") + command), std::string::npos)
        << help.out;
  }
  EXPECT_NE(run("help train").out.find("--checkpoint-dir"), std::string::npos);
}

// What a launch accepts beyond its own options is train's: its help lists them, each once
// (train's --plan and --help are launch's own).
TEST(Executables, LaunchHelpListsTheOptionsItPassesToTrain) {
  const Result help = run("launch --help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  const std::string train = run("train --help").out;
  for (const char* option : {"--data TEXT REQUIRED", "--steps INT", "--checkpoint-dir TEXT",
                             "--dtype TEXT", "--metrics TEXT", "--format"}) {
    ASSERT_NE(train.find(option), std::string::npos) << option;
    EXPECT_NE(help.out.find(option), std::string::npos) << option << ":\n" << help.out;
  }
  const auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = help.out.find(needle); at != std::string::npos;
         at = help.out.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("\n  --plan TEXT REQUIRED"), 1) << help.out;
  EXPECT_EQ(count("-h,--help"), 1) << help.out;
  EXPECT_EQ(count("\n  --elastic "), 1) << help.out;  // launch's own, listed once
  // A wrapped description stays with its option.
  EXPECT_NE(help.out.find("--weight-decay FLOAT:NONNEGATIVE=0.1\n                              "
                          "AdamW weight decay"),
            std::string::npos)
      << help.out;
}

TEST(Executables, TrainArgumentsReachTheWorker) {
  // The worker's own validation answers, so the arguments arrived unchanged.
  const Result r = run("--log-level error train --plan /nonexistent/plan.json --data x.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/plan.json"), std::string::npos) << r.err;
}

TEST(Executables, VersionNamesTheRuntime) {
  const Result r = run("--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hyperpipe " + hyperpipe_version()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runtime: libtorch "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CUDA: "), std::string::npos) << r.out;
}
#endif

// A copy of `hyperpipe` alone in a directory: what a planning-only build is.
class WithoutWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = hyperpipe::testing::temp_path("planning-only");
    std::filesystem::create_directories(directory_);
    binary_ = directory_ + "/hyperpipe";
    std::filesystem::copy_file(HYPERPIPE_BINARY, binary_,
                               std::filesystem::copy_options::overwrite_existing);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::string directory_;
  std::string binary_;
};

TEST_F(WithoutWorker, VersionSaysPlanningOnly) {
  const Result r = run_binary(binary_, "--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("planning only"), std::string::npos) << r.out;
}

TEST_F(WithoutWorker, TrainAndLaunchExitTwoNamingTheWorker) {
  for (const char* args : {"train --plan p.json --data d.txt",
                           "launch --plan " HYPERPIPE_EXAMPLES "/plans/tiny-gpt-3stage.json"}) {
    const Result r = run_binary(binary_, args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find(kWorkerName), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("plans only"), std::string::npos) << r.err;
  }
  const Result help = run_binary(binary_, "help train");
  EXPECT_EQ(help.exit_code, 2);
  EXPECT_NE(help.err.find("plans only"), std::string::npos) << help.err;
  const Result planning = run_binary(binary_, "schedule --kind 1f1b --stages 2 --micro-batches 2");
  EXPECT_EQ(planning.exit_code, 0) << planning.err;
}

}  // namespace
}  // namespace hyperpipe::cli
