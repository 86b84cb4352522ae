#include "hyperpipe/planner/device_class.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"

namespace hyperpipe::planner {
namespace {

TEST(DeviceClasses, OneGpuTypePerIsland) {
  const auto classes = device_classes(cluster::load_cluster("a100-v100-t4"));
  ASSERT_EQ(classes.size(), 3u);
  EXPECT_EQ(classes[0].name, "A100-40GB@ampere");
  EXPECT_EQ(classes[1].devices, (std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(classes[1].node_size, 8);
  EXPECT_EQ(classes[2].name, "T4@legacy");
  const auto islands = device_classes(cluster::load_cluster("h100-a100-islands"));
  ASSERT_EQ(islands.size(), 2u);
  EXPECT_EQ(islands[0].nodes, 2);
  EXPECT_EQ(islands[0].count(), 16);
}

TEST(DeviceClasses, ShapesKeepTensorParallelismInANode) {
  const auto classes = device_classes(cluster::load_cluster("h100-a100-islands"));
  const auto shapes = class_shapes(classes[0], 32, 64);  // 2 nodes of 8
  for (const Shape& shape : shapes) {
    EXPECT_LE(shape.tp, 8);
    EXPECT_TRUE(shape.size() <= 8 ? 8 % shape.size() == 0 : shape.size() % 8 == 0);
  }
  EXPECT_NE(std::find(shapes.begin(), shapes.end(), Shape{2, 8}), shapes.end());  // both nodes
  EXPECT_EQ(std::find(shapes.begin(), shapes.end(), Shape{3, 1}), shapes.end());
  // At most max_dp data-parallel ranks, tp dividing the heads.
  for (const Shape& shape : class_shapes(classes[0], 12, 2)) {
    EXPECT_LE(shape.dp, 2);
    EXPECT_EQ(12 % shape.tp, 0);
  }
}

TEST(AssignDevices, LargestFirstAndAligned) {
  const auto classes = device_classes(cluster::load_cluster("h100-a100-islands"));
  // Sizes 2, 8, 4, 2 of 16 devices over two nodes: the 8 takes a whole node, the others
  // share the second without straddling.
  const auto groups = assign_devices(classes[0], {2, 8, 4, 2});
  EXPECT_EQ(groups[1], (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(groups[2], (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(groups[0], (std::vector<int>{12, 13}));
  EXPECT_EQ(groups[3], (std::vector<int>{14, 15}));
  EXPECT_THROW(assign_devices(classes[0], {16, 1}), std::invalid_argument);
}

TEST(AssignDevices, GroupsStayInsideNodesOfSix) {
  const std::string text =
      "nodes:\n  - {name: a, gpu: T4, count: 6}\n  - {name: b, gpu: T4, count: 6}\n"
      "links:\n  intra_node: {bandwidth: 16, latency: 5}\n  intra_island: {bandwidth: 1, "
      "latency: 50}\n";
  const auto cluster = cluster::read_cluster_yaml(YamlField::load_string(text, "six"));
  const auto classes = device_classes(cluster);
  // 3 + 2 fill node a up to 5; the next 2 must not take device 5 and 6 across the nodes.
  const auto groups = assign_devices(classes[0], {3, 2, 2, 3});
  for (const auto& group : groups) {
    for (int device : group) {
      EXPECT_EQ(cluster.devices()[device].node, cluster.devices()[group.front()].node)
          << "group starting at " << group.front();
    }
  }
  EXPECT_EQ(groups[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(groups[3], (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(groups[1], (std::vector<int>{6, 7}));
  EXPECT_EQ(groups[2], (std::vector<int>{8, 9}));
}

}  // namespace
}  // namespace hyperpipe::planner
