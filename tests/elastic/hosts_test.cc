#include "hyperpipe/elastic/hosts.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hyperpipe/elastic/agent.h"
#include "test_files.h"

namespace hyperpipe::elastic {
namespace {

namespace fs = std::filesystem;
using Clock = Liveness::Clock;

Heartbeat beat_of(const std::string& instance, int64_t beat) {
  return {"host-b", instance, "", {2, 3}, "10.0.0.2", beat};
}

// A peer is alive only from a change of its beat seen here, until its beat stands still
// for the timeout; a restarted peer (a new instance) starts over.
TEST(Liveness, APeerIsAliveWhileItsBeatChangesOnThisHostsClock) {
  Liveness liveness(3);
  const auto t0 = Clock::now();
  const auto at = [&](double seconds) {
    return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  EXPECT_FALSE(liveness.alive("host-b", at(0)));
  liveness.see("host-b", beat_of("first", 7), at(0));
  EXPECT_FALSE(liveness.alive("host-b", at(0.1)));  // a file left behind looks like this
  EXPECT_FALSE(liveness.instance("host-b"));
  liveness.see("host-b", beat_of("first", 8), at(0.5));
  EXPECT_TRUE(liveness.alive("host-b", at(0.5)));
  EXPECT_EQ(liveness.instance("host-b"), "first");
  liveness.see("host-b", beat_of("first", 8), at(3.0));
  EXPECT_TRUE(liveness.alive("host-b", at(3.4)));
  EXPECT_FALSE(liveness.alive("host-b", at(3.6)));
  liveness.see("host-b", std::nullopt, at(4));  // the file gone: nothing new
  EXPECT_FALSE(liveness.alive("host-b", at(4)));
  liveness.see("host-b", beat_of("second", 1), at(5));
  EXPECT_FALSE(liveness.alive("host-b", at(5)));
  liveness.see("host-b", beat_of("second", 2), at(5.5));
  EXPECT_TRUE(liveness.alive("host-b", at(5.5)));
  EXPECT_EQ(liveness.instance("host-b"), "second");
}

TEST(ElasticHosts, ARoundReadsBackAsWritten) {
  const std::string dir = hyperpipe::testing::fresh_directory("elastic-hosts-round");
  EXPECT_FALSE(read_round(dir));
  Round round;
  round.run = "run-1";
  round.number = 4;
  round.plan = "elastic/restart-3.plan.json";
  round.directory = "/work/run";
  round.arguments = {"--data", "corpus.txt", "--resume"};
  round.master_address = "10.0.0.2";
  round.port = 29500;
  round.world_size = 3;
  round.assignments = {{5, 0, 1, "host-b", "b1"}, {0, 1, 0, kLeaderName, ""}};
  write_round(dir, round);
  const auto back = read_round(dir);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->run, "run-1");
  EXPECT_EQ(back->number, 4);
  EXPECT_EQ(back->state, RoundState::kRunning);
  EXPECT_EQ(back->plan, round.plan);
  EXPECT_EQ(back->directory, round.directory);
  EXPECT_EQ(back->arguments, round.arguments);
  EXPECT_EQ(back->master_address, "10.0.0.2");
  EXPECT_EQ(back->port, 29500);
  EXPECT_EQ(back->world_size, 3);
  ASSERT_EQ(back->assignments.size(), 2u);
  EXPECT_EQ(back->assignments[0].device, 5);
  EXPECT_EQ(back->assignments[0].rank, 0);
  EXPECT_EQ(back->assignments[0].local_rank, 1);
  EXPECT_EQ(back->assignments[0].host, "host-b");
  EXPECT_EQ(back->assignments[0].instance, "b1");
  EXPECT_EQ(back->assignments[1].host, kLeaderName);

  round.state = RoundState::kEnded;
  round.reason = "no plan fits";
  write_round(dir, round);
  EXPECT_EQ(read_round(dir)->state, RoundState::kEnded);
  EXPECT_EQ(read_round(dir)->reason, "no plan fits");
  // A file cut short (not written by rename) is no round.
  std::ofstream(fs::path(dir) / kRoundFile) << "{\"format\": \"hyperpipe.round/1\", \"run\"";
  EXPECT_FALSE(read_round(dir));
}

TEST(ElasticHosts, StopMarkersAndReportsBelongToOneRoundOfOneRun) {
  const std::string dir = hyperpipe::testing::fresh_directory("elastic-hosts-reports");
  EXPECT_FALSE(round_stop_requested(dir, "run-1", 2));
  request_round_stop(dir, "run-1", 2);
  EXPECT_TRUE(round_stop_requested(dir, "run-1", 2));
  EXPECT_FALSE(round_stop_requested(dir, "run-1", 3));
  EXPECT_FALSE(round_stop_requested(dir, "run-2", 2));

  RoundReport report{"host-b", "b1", 2, {2, 5}, {137, 143}, 2, 137, 1700000000.25};
  write_round_report(dir, "run-1", report);
  EXPECT_FALSE(read_round_report(dir, "run-1", 2, "host-c"));
  EXPECT_FALSE(read_round_report(dir, "run-2", 2, "host-b"));
  const auto back = read_round_report(dir, "run-1", 2, "host-b");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->instance, "b1");
  EXPECT_EQ(back->ranks, (std::vector<int>{2, 5}));
  EXPECT_EQ(back->codes, (std::vector<int>{137, 143}));
  EXPECT_EQ(back->failed_rank, 2);
  EXPECT_EQ(back->exit_code, 137);
  EXPECT_DOUBLE_EQ(back->failure_seen, 1700000000.25);

  clear_rounds(dir);
  EXPECT_FALSE(round_stop_requested(dir, "run-1", 2));
  EXPECT_FALSE(read_round_report(dir, "run-1", 2, "host-b"));
}

// A heartbeat is rewritten with a growing beat while its writer lives, and removed when
// it ends; every agent's is found by name.
TEST(ElasticHosts, AHeartbeaterBeatsUntilItEnds) {
  const std::string dir = hyperpipe::testing::fresh_directory("elastic-hosts-heartbeat");
  const std::string path = heartbeat_path(dir, "host-b");
  {
    const Heartbeater heartbeater(path, beat_of("b1", 0));
    const auto first = read_heartbeat(path);
    ASSERT_TRUE(first);
    std::this_thread::sleep_for(kHeartbeatInterval * 3);
    const auto later = read_heartbeat(path);
    ASSERT_TRUE(later);
    EXPECT_GT(later->beat, first->beat);
    EXPECT_EQ(later->devices, (std::vector<int>{2, 3}));
    EXPECT_EQ(later->address, "10.0.0.2");
    const auto agents = read_agent_heartbeats(dir);
    ASSERT_EQ(agents.size(), 1u);
    EXPECT_EQ(agents.at("host-b").instance, "b1");
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_NE(heartbeat_path(dir, kLeaderName), heartbeat_path(dir, "leader-host"));
}

// An agent's name becomes a file name beside the leader's: letters, digits, '.', '_' and
// '-', not hidden, and never the leader's own.
TEST(Agent, ANameIsAPlainFileNameOtherThanTheLeaders) {
  for (const std::string fine : {"host-b", "node_07", "b.rack2", "B"}) {
    EXPECT_FALSE(agent_name_refusal(fine)) << fine;
  }
  for (const std::string refused : {"", "leader", ".b", "../b", "a/b", "b c", "b*"}) {
    const auto why = agent_name_refusal(refused);
    ASSERT_TRUE(why) << refused;
    EXPECT_NE(why->find("a name of letters, digits"), std::string::npos) << *why;
  }
}

}  // namespace
}  // namespace hyperpipe::elastic
