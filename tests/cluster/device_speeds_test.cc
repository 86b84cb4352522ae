#include "hyperpipe/cluster/device_speeds.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "hyperpipe/cluster/cluster_loader.h"

namespace hyperpipe::cluster {
namespace {

TEST(DeviceSpeeds, SlowedDevicesKeepTheirLinksAndGetATypeScaledByTheirFactor) {
  const Cluster whole = load_cluster("three-islands");
  // Two H100s at half speed, one at a quarter, one at twice its datasheet's; one V100 of
  // the second Volta node at half.
  const std::map<int, double> factors{{3, 0.5}, {5, 0.5}, {6, 0.25}, {7, 2.0}, {30, 0.5}};
  const SlowedCluster slowed = slow_devices(whole, factors);
  ASSERT_EQ(slowed.original.size(), whole.devices().size());
  const auto& part = slowed.cluster;
  for (size_t a = 0; a < slowed.original.size(); ++a) {
    const int i = static_cast<int>(a);
    const int was = slowed.original[a];
    const auto found = factors.find(was);
    const double factor = found == factors.end() ? 1.0 : found->second;
    const GpuType& type = part.device_type(i);
    const GpuType& before = whole.device_type(was);
    EXPECT_DOUBLE_EQ(type.peak.bf16, before.peak.bf16 * factor) << was;
    EXPECT_DOUBLE_EQ(type.memory_bandwidth, before.memory_bandwidth * factor) << was;
    EXPECT_EQ(part.device_memory(i), whole.device_memory(was));
    if (factor != 1) {
      EXPECT_EQ(type.name, slowed_type_name(before.name, factor));
    } else {
      EXPECT_EQ(type.name, before.name);
    }
    for (size_t b = 0; b < slowed.original.size(); ++b) {
      const Link mine = part.link_between(i, static_cast<int>(b));
      const Link theirs = whole.link_between(was, slowed.original[b]);
      EXPECT_EQ(mine.bandwidth, theirs.bandwidth) << was << "-" << slowed.original[b];
      EXPECT_EQ(mine.latency, theirs.latency) << was << "-" << slowed.original[b];
    }
  }
  ASSERT_EQ(slowed.types.size(), 4u);
  EXPECT_EQ(slowed.types.at(slowed_type_name("H100-SXM", 2.0)).factor, 2.0);
  EXPECT_EQ(slowed.types.at(slowed_type_name("H100-SXM", 0.25)).factor, 0.25);
  EXPECT_EQ(slowed.types.at(slowed_type_name("V100-32GB", 0.5)).original, "V100-32GB");
  EXPECT_EQ(part.islands().size(), whole.islands().size());
}

TEST(DeviceSpeeds, AStandInsSpeedIsScaledToo) {
  const SlowedCluster slowed = slow_devices(load_cluster("cpu-emulated"), {{1, 0.5}});
  EXPECT_DOUBLE_EQ(*slowed.cluster.device_type(1).speed, 0.2);
  EXPECT_DOUBLE_EQ(*slowed.cluster.device_type(0).speed, 1.0);
  EXPECT_EQ(slowed.original, (std::vector<int>{0, 1, 2}));
}

TEST(DeviceSpeeds, RefusesStrangersAndFactorsThatAreNotPositive) {
  const Cluster whole = load_cluster("cpu-emulated");
  EXPECT_THROW(slow_devices(whole, {{3, 0.5}}), std::invalid_argument);
  EXPECT_THROW(slow_devices(whole, {{0, 0.0}}), std::invalid_argument);
  EXPECT_THROW(slow_devices(whole, {{0, -1.0}}), std::invalid_argument);
  EXPECT_THROW(slow_devices(whole, {{0, std::numeric_limits<double>::infinity()}}),
               std::invalid_argument);
  EXPECT_NO_THROW(slow_devices(whole, {{0, 1.5}}));
}

}  // namespace
}  // namespace hyperpipe::cluster
