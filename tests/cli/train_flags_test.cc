// `hyperpipe train`'s options are defined once (launch/train_flags.h): the worker's parser
// defines exactly those, each taking the kind of value the launchers read it as.
#include "hyperpipe/launch/train_flags.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "cli/cli_run.h"

namespace hyperpipe::launch::train_flags {
namespace {

#ifdef HYPERPIPE_WORKER_BINARY
// The worker's `train --help` entries: each option's name and its value's type as CLI11
// prints it ("TEXT", "INT", "FLOAT", "table|json"; "" for a flag), -h,--help aside.
std::map<std::string, std::string> worker_options() {
  const auto help = cli::testing::run_binary(HYPERPIPE_WORKER_BINARY, "train --help");
  EXPECT_EQ(help.exit_code, 0) << help.err;
  std::map<std::string, std::string> options;
  std::istringstream lines(help.out);
  bool in_options = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "Options:") in_options = true;
    if (!in_options || line.rfind("  --", 0) != 0) continue;
    // "  --name TYPE   help": the entry ends where two spaces start the help (or the line).
    const std::string entry = line.substr(2, line.find("  ", 2) - 2);
    const size_t space = entry.find(' ');
    const std::string name = entry.substr(0, space);
    const std::string type = space == std::string::npos ? "" : entry.substr(space + 1);
    options[name] = type.substr(0, type.find_first_of(":= "));
  }
  return options;
}

// A flag renamed or added in the worker alone, or read as another kind of value than the
// worker takes, fails here.
TEST(TrainFlags, TheWorkerDefinesExactlyTheseWithTheirKindsOfValue) {
  const auto defined = worker_options();
  ASSERT_FALSE(defined.empty());
  std::map<std::string, std::string> listed;
  for (const AnyFlag& flag : kAll) listed[std::string(flag.name)] = "";
  for (const auto& [name, type] : defined) {
    EXPECT_TRUE(listed.count(name)) << name << " is defined by the worker but not in train_flags.h";
  }
  for (const AnyFlag& flag : kAll) {
    const auto found = defined.find(std::string(flag.name));
    ASSERT_NE(found, defined.end()) << flag.name << " is listed but the worker lacks it";
    EXPECT_EQ(!found->second.empty(), flag.takes_value) << flag.name << ": " << found->second;
  }
  // Typed: the readers' kinds are the worker's.
  EXPECT_EQ(defined.at(std::string(kSteps.name)), "INT");
  EXPECT_EQ(defined.at(std::string(kAdaptGain.name)), "FLOAT");
  EXPECT_EQ(defined.at(std::string(kCheckpointDir.name)), "TEXT");
  EXPECT_EQ(defined.at(std::string(kResume.name)), "");
}
#endif

// Names are unique and spelled as the worker's parser spells a long option.
TEST(TrainFlags, EachNameOnceAndLong) {
  std::map<std::string_view, int> seen;
  for (const AnyFlag& flag : kAll) {
    EXPECT_EQ(flag.name.rfind("--", 0), 0u) << flag.name;
    EXPECT_FALSE(flag.help.empty()) << flag.name;
    EXPECT_EQ(++seen[flag.name], 1) << flag.name;
  }
}

}  // namespace
}  // namespace hyperpipe::launch::train_flags
