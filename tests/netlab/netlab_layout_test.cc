#include "netlab_layout.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/yaml_reader.h"
#include "test_files.h"

namespace hyperpipe::netlab {
namespace {

using hyperpipe::testing::error_message;

const std::string kExamples = HYPERPIPE_EXAMPLES;

cluster::Cluster lab_cluster() {
  return cluster::load_cluster(kExamples + "/clusters/lab-two-islands.yaml");
}

TEST(NetlabLayout, OneNamespacePerNodeOneSubnetPerIsland) {
  const LabLayout layout = make_lab_layout(lab_cluster(), nullptr, "42");
  EXPECT_EQ(layout.switch_netns, "hp42-switch");
  ASSERT_EQ(layout.islands.size(), 2u);
  EXPECT_EQ(layout.islands[1].subnet, "10.213.1.0/24");
  EXPECT_EQ(layout.islands[1].gateway, "10.213.1.1");
  EXPECT_EQ(layout.islands[1].bridge, "hp42b1");
  ASSERT_EQ(layout.hosts.size(), 4u);
  // v1 is the second host of the second island.
  EXPECT_EQ(layout.hosts[3].node, "v1");
  EXPECT_EQ(layout.hosts[3].island, 1);
  EXPECT_EQ(layout.hosts[3].address, "10.213.1.11");
  EXPECT_EQ(layout.hosts[3].netns, "hp42-h3");
  EXPECT_EQ(layout.hosts[3].host_veth, "hp42h3");
  EXPECT_EQ(layout.hosts[3].switch_veth, "hp42s3");
  // Without a plan, one rank per device: the four hosts' single devices in order.
  ASSERT_EQ(layout.ranks.size(), 4u);
  EXPECT_EQ(layout.ranks[2].host, 2);
}

TEST(NetlabLayout, LinksShapedToTheClusterFigures) {
  const LabLayout layout = make_lab_layout(lab_cluster(), nullptr, "7");
  // 10 Gbit/s and 100 us on every host's veth; 100 Mbit/s and 200 us into each island.
  EXPECT_DOUBLE_EQ(layout.hosts[0].link.rate_bits_per_second, 10e9);
  EXPECT_DOUBLE_EQ(layout.hosts[0].link.delay_microseconds, 100);
  EXPECT_DOUBLE_EQ(layout.islands[0].entering.rate_bits_per_second, 100e6);
  EXPECT_DOUBLE_EQ(layout.islands[0].entering.delay_microseconds, 200);
  const std::string text = format_lab_layout(layout);
  EXPECT_NE(text.find("island 1 slow hp7b1 10.213.1.1 10.213.1.0/24 100000000 200\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("host 2 v0 1 hp7-h2 10.213.1.10 hp7h2 hp7s2 10000000000 100\n"),
            std::string::npos)
      << text;
}

TEST(NetlabLayout, OneIslandNeedsNoRouterShaping) {
  const auto cluster = cluster::read_cluster_yaml(YamlField::load_string(R"(
    name: one-island
    nodes: [{name: a, gpu: T4, count: 2}, {name: b, gpu: T4, count: 2}]
    links:
      intra_node: {bandwidth: 10 GB/s, latency: 20 us}
      intra_island: {bandwidth: 1 Gbit/s, latency: 100 us})",
                                                                         "one-island.yaml"));
  const LabLayout layout = make_lab_layout(cluster, nullptr, "1");
  ASSERT_EQ(layout.islands.size(), 1u);
  EXPECT_EQ(layout.islands[0].entering.rate_bits_per_second, 0);
  EXPECT_DOUBLE_EQ(layout.hosts[1].link.rate_bits_per_second, 1e9);
}

TEST(NetlabLayout, RanksRunOnTheirDevicesHosts) {
  const auto plan = plan::read_plan(YamlField::load_string(R"({
    "format": "hyperpipe.plan/1", "model": "tiny-gpt", "cluster": "lab-two-islands.yaml",
    "micro_batch_size": 2, "micro_batches": 4,
    "stages": [{"layers": [0, 2], "devices": [2, 3]}, {"layers": [2, 5], "devices": [0]},
               {"layers": [5, 6], "devices": [1]}]})",
                                                           "plan.json"));
  const LabLayout layout = make_lab_layout(lab_cluster(), &plan, "9");
  ASSERT_EQ(layout.ranks.size(), 4u);
  EXPECT_EQ(layout.ranks[0].host, 2);  // device 2 is v0's
  EXPECT_EQ(layout.ranks[1].host, 3);
  EXPECT_EQ(layout.ranks[2].host, 0);
  EXPECT_EQ(layout.ranks[3].host, 1);
  EXPECT_NE(format_lab_layout(layout).find("rank 3 1 0\n"), std::string::npos);
}

TEST(NetlabLayout, WhatTheLabCannotShapeIsRefused) {
  const auto with_override = cluster::read_cluster_yaml(YamlField::load_string(R"(
    name: override
    nodes: [{name: a, gpu: T4, count: 1}, {name: b, gpu: T4, count: 1}]
    links:
      intra_island: {bandwidth: 1 Gbit/s, latency: 100 us}
      overrides: [{between: [a, b], bandwidth: 1 GB/s, latency: 1 us}])",
                                                                               "override.yaml"));
  EXPECT_NE(error_message<InputError>([&] {
              make_lab_layout(with_override, nullptr, "1");
            }).find("only links inside one node"),
            std::string::npos);
  EXPECT_NE(error_message<InputError>([&] {
              make_lab_layout(lab_cluster(), nullptr, "Lab!");
            }).find("1-6 characters of a-z and 0-9"),
            std::string::npos);
  const auto far = plan::read_plan(YamlField::load_string(R"({
    "format": "hyperpipe.plan/1", "model": "tiny-gpt", "cluster": "x",
    "micro_batch_size": 1, "micro_batches": 1,
    "stages": [{"layers": [0, 6], "devices": [9]}]})",
                                                          "far.json"));
  EXPECT_NE(error_message<InputError>([&] {
              make_lab_layout(lab_cluster(), &far, "1");
            }).find("devices of cluster 'lab-two-islands' (0-3), got 9"),
            std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::netlab
