// `hyperpipe agent` as a user runs it: what it refuses before it offers anything.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_run.h"
#include "hyperpipe/elastic/hosts.h"

namespace hyperpipe::cli {
namespace {

namespace fs = std::filesystem;
using elastic::heartbeat_path;
using elastic::kAgentsDirectory;

// `hyperpipe agent` refuses, before it offers anything, what could not meet the run: no
// shared secret, a name that is no file name (or the leader's), a device twice.
TEST(Agent, RefusesWhatCouldNotMeetTheRun) {
  const std::string dir = hyperpipe::testing::fresh_directory("agent-command-agent-refusals");
  const std::string token = "HYPERPIPE_JOB_TOKEN=secret ";
  const auto agent = [&](const std::string& options, const std::string& prefix) {
    return testing::run_binary(HYPERPIPE_BINARY, "agent --checkpoint-dir " + dir + " " + options,
                               prefix);
  };
  auto result = agent("--devices 2 --name b", "unset HYPERPIPE_JOB_TOKEN; ");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("HYPERPIPE_JOB_TOKEN exported, the same as the leader's"),
            std::string::npos)
      << result.err;
  for (const std::string name : {"leader", "../b", ".b"}) {
    result = agent("--devices 2 --name " + name, token);
    EXPECT_EQ(result.exit_code, 2) << name;
    EXPECT_NE(result.err.find("a name of letters, digits"), std::string::npos) << result.err;
  }
  result = agent("--devices 2,3,2 --name b", token);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("each device once"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(fs::path(dir) / "elastic" / kAgentsDirectory / "b.json"));
#ifdef HYPERPIPE_WORKER_BINARY
  // No leader comes: it says so, and leaves no heartbeat behind.
  result = agent("--devices 2 --name b --wait 0.3", token);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no leader in 0.3 s"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(heartbeat_path(dir + "/elastic", "b")));
#endif
}

}  // namespace
}  // namespace hyperpipe::cli
