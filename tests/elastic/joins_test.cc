#include "hyperpipe/elastic/joins.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hyperpipe/cluster/cluster_loader.h"
#include "test_files.h"

namespace hyperpipe::elastic {
namespace {

namespace fs = std::filesystem;

struct JoinDir {
  std::string dir = hyperpipe::testing::temp_path("elastic-join-files");
  JoinDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~JoinDir() { fs::remove_all(dir); }
};

TEST(ElasticJoin, ARequestIsPendingUntilAnswered) {
  JoinDir at;
  EXPECT_TRUE(join_requests(at.dir).empty());  // no joins/ directory yet
  request_join(at.dir, 5);
  request_join(at.dir, 2);
  EXPECT_EQ(join_requests(at.dir), (std::vector<int>{2, 5}));
  EXPECT_FALSE(join_answer(at.dir, 2));
  answer_join(at.dir, 2, {true, "after the next checkpoint"});
  EXPECT_EQ(join_requests(at.dir), (std::vector<int>{5}));
  const auto answer = join_answer(at.dir, 2);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->accepted);
  EXPECT_EQ(answer->message, "after the next checkpoint");
  answer_join(at.dir, 5, {false, "no such device"});
  EXPECT_FALSE(join_answer(at.dir, 5)->accepted);
  EXPECT_TRUE(join_requests(at.dir).empty());
}

TEST(ElasticJoin, ANewRequestForADeviceForgetsItsOldAnswer) {
  JoinDir at;
  request_join(at.dir, 1);
  answer_join(at.dir, 1, {false, "in the run already"});
  request_join(at.dir, 1);  // offered again, later
  EXPECT_EQ(join_requests(at.dir), (std::vector<int>{1}));
  EXPECT_FALSE(join_answer(at.dir, 1));
}

TEST(ElasticJoin, WithdrawnAndClearedRequestsAreGone) {
  JoinDir at;
  request_join(at.dir, 1);
  request_join(at.dir, 3);
  answer_join(at.dir, 3, {true, ""});
  withdraw_join(at.dir, 1);
  withdraw_join(at.dir, 3);
  EXPECT_TRUE(join_requests(at.dir).empty());
  EXPECT_FALSE(join_answer(at.dir, 3));
  request_join(at.dir, 4);
  clear_joins(at.dir);
  EXPECT_TRUE(join_requests(at.dir).empty());
}

TEST(ElasticJoin, FilesThatAreNotRequestsAreIgnored) {
  JoinDir at;
  request_join(at.dir, 1);
  const fs::path joins = fs::path(at.dir) / kJoinsDirectory;
  std::ofstream(joins / "device-2.request.json") << "{\"format\": \"hyperpipe.join/1\", \"dev";
  std::ofstream(joins / "device-3.request.json") << R"({"format": "other/1", "device": 3})";
  std::ofstream(joins / "notes.txt") << "device 4";
  EXPECT_EQ(join_requests(at.dir), (std::vector<int>{1}));
}

TEST(ElasticJoin, OnlyDevicesOfTheClusterNotInTheRunMayJoin) {
  const auto cluster = cluster::read_cluster_yaml(YamlField::load_string(R"(name: four
nodes:
  - {name: n0, gpu: A100-80GB, count: 2}
  - {name: n1, gpu: T4, count: 2}
links:
  intra_node: {bandwidth: 100 GB/s, latency: 5 us}
  intra_island: {bandwidth: 10 GB/s, latency: 20 us}
)",
                                                                         "four"));
  const std::vector<int> in_run{0, 2};
  EXPECT_FALSE(join_refusal(cluster, in_run, 1));
  EXPECT_FALSE(join_refusal(cluster, in_run, 3));
  EXPECT_EQ(join_refusal(cluster, in_run, 2), "device 2 is in the run already");
  EXPECT_EQ(join_refusal(cluster, in_run, 4),
            "the run's cluster four has devices 0 to 3; there is no device 4");
  EXPECT_TRUE(join_refusal(cluster, in_run, -1));
}

TEST(ElasticJoin, AHandoverIsRequestedUntilCleared) {
  JoinDir at;
  EXPECT_FALSE(handover_requested(at.dir));
  request_handover(at.dir, "device 1 joined");
  EXPECT_EQ(handover_requested(at.dir), "device 1 joined");
  clear_handover(at.dir);
  EXPECT_FALSE(handover_requested(at.dir));
}

}  // namespace
}  // namespace hyperpipe::elastic
