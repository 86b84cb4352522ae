#include "hyperpipe/cluster/device_subset.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "hyperpipe/cluster/cluster_loader.h"

namespace hyperpipe::cluster {
namespace {

// Every pair of kept devices sees the same type, memory and link as in the whole cluster.
void expect_same_as_whole(const Cluster& whole, const DeviceSubset& subset) {
  const auto& part = subset.cluster;
  ASSERT_EQ(part.devices().size(), subset.original.size());
  for (size_t a = 0; a < subset.original.size(); ++a) {
    const int i = static_cast<int>(a);
    EXPECT_EQ(part.device_type(i).name, whole.device_type(subset.original[a]).name) << a;
    EXPECT_EQ(part.device_memory(i), whole.device_memory(subset.original[a])) << a;
    for (size_t b = 0; b < subset.original.size(); ++b) {
      const int j = static_cast<int>(b);
      const Link mine = part.link_between(i, j);
      const Link theirs = whole.link_between(subset.original[a], subset.original[b]);
      EXPECT_EQ(mine.bandwidth, theirs.bandwidth) << a << "-" << b;
      EXPECT_EQ(mine.latency, theirs.latency) << a << "-" << b;
      EXPECT_EQ(part.level_between(i, j),
                whole.level_between(subset.original[a], subset.original[b]));
    }
  }
}

TEST(DeviceSubset, KeptDevicesSeeTheLinksTheyHadInTheWhole) {
  const Cluster whole = load_cluster("three-islands");
  // One H100 lost in the middle of its node, a whole A100 node but one, one V100 node.
  std::vector<int> kept;
  for (int id = 0; id < 32; ++id) {
    const bool lost = id == 3 || (id >= 8 && id < 15) || id >= 24;
    if (!lost) kept.push_back(id);
  }
  const DeviceSubset subset = keep_devices(whole, kept);
  EXPECT_EQ(subset.original, kept);
  expect_same_as_whole(whole, subset);
  ASSERT_EQ(subset.cluster.nodes().size(), 3u);
  EXPECT_EQ(subset.cluster.nodes()[0].gpu_count, 7);
  EXPECT_EQ(subset.cluster.nodes()[1].gpu_count, 1);
  EXPECT_EQ(subset.cluster.nodes()[2].name, "v100-0");
  EXPECT_EQ(subset.cluster.count_devices_of_type("V100-32GB"), 8);
}

TEST(DeviceSubset, AnIslandWithNoNodeLeftGoes) {
  const Cluster whole = load_cluster("three-islands");
  // Hopper and one Volta node only, given out of order.
  std::vector<int> kept{30, 1, 0, 27};
  const DeviceSubset subset = keep_devices(whole, kept);
  EXPECT_EQ(subset.original, (std::vector<int>{0, 1, 27, 30}));
  expect_same_as_whole(whole, subset);
  ASSERT_EQ(subset.cluster.islands().size(), 2u);
  EXPECT_EQ(subset.cluster.islands()[0].name, "hopper");
  EXPECT_EQ(subset.cluster.islands()[1].name, "volta");
  EXPECT_EQ(subset.cluster.islands()[1].nodes, std::vector<int>{1});
  EXPECT_EQ(subset.cluster.nodes()[1].name, "v100-1");
}

TEST(DeviceSubset, RefusesNothingRepeatsAndStrangers) {
  const Cluster whole = load_cluster("cpu-emulated");
  EXPECT_THROW(keep_devices(whole, {}), std::invalid_argument);
  EXPECT_THROW(keep_devices(whole, {1, 1}), std::invalid_argument);
  EXPECT_THROW(keep_devices(whole, {3}), std::invalid_argument);
  EXPECT_THROW(keep_devices(whole, {-1}), std::invalid_argument);
  const DeviceSubset two = keep_devices(whole, {0, 2});
  EXPECT_EQ(two.cluster.device_type(1).name, "T4");
  EXPECT_EQ(two.cluster.device_type(1).speed, 0.2);
}

}  // namespace
}  // namespace hyperpipe::cluster
