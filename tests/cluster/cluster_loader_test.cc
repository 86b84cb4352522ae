#include "hyperpipe/cluster/cluster_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <random>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"
#include "test_files.h"

namespace hyperpipe::cluster {
namespace {

using hyperpipe::testing::BadInputCase;
using hyperpipe::testing::error_message;
using hyperpipe::testing::write_temp_file;

const std::string kClusters = std::string(HYPERPIPE_EXAMPLES) + "/clusters/";

// Device ids of the a100-v100-t4 example: A100s 0-3, V100s 4-11, T4s 12-15.
TEST(ExampleClusters, MixedClusterDevicesAndLinks) {
  const Cluster cluster = load_cluster(kClusters + "a100-v100-t4.yaml");
  ASSERT_EQ(cluster.devices().size(), 16u);
  EXPECT_EQ(cluster.device_type(0).name, "A100-40GB");
  EXPECT_EQ(cluster.device_type(4).name, "V100-16GB");
  EXPECT_EQ(cluster.device_type(15).name, "T4");
  EXPECT_EQ(cluster.count_devices_of_type("V100-16GB"), 8);
  EXPECT_EQ(cluster.used_gpu_types(), (std::vector<std::string>{"A100-40GB", "V100-16GB", "T4"}));

  EXPECT_EQ(cluster.level_between(0, 3), LinkLevel::intra_node);
  EXPECT_EQ(cluster.level_between(4, 12), LinkLevel::intra_island);
  EXPECT_EQ(cluster.level_between(0, 4), LinkLevel::inter_island);
  EXPECT_DOUBLE_EQ(cluster.link_between(0, 1).bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(cluster.link_between(4, 5).bandwidth, 150e9);    // NVLink 2 override
  EXPECT_DOUBLE_EQ(cluster.link_between(12, 13).bandwidth, 12e9);   // PCIe override
  EXPECT_DOUBLE_EQ(cluster.link_between(5, 13).bandwidth, 12.5e9);  // InfiniBand EDR
  EXPECT_DOUBLE_EQ(cluster.link_between(13, 5).bandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(cluster.link_between(2, 9).bandwidth, 1.25e9);  // 10 Gbit/s Ethernet
  EXPECT_DOUBLE_EQ(cluster.link_between(2, 9).latency, 50e-6);
  // A ring through an A100, two V100s and a T4 is held back by the Ethernet hop.
  const Link ring = cluster.slowest_ring_link({0, 4, 5, 12});
  EXPECT_DOUBLE_EQ(ring.bandwidth, 1.25e9);
  EXPECT_DOUBLE_EQ(ring.latency, 50e-6);
}

// The ring's slowest link skips pairs on the nodes of the pair before (a link is a
// function of the two nodes): the same as folding every pair, on random rings (repeats
// included) over clusters with node and island overrides.
TEST(ExampleClusters, SlowestRingLinkEqualsEveryPairFolded) {
  std::mt19937 rng(7);
  for (const char* file : {"a100-v100-t4.yaml", "h100-a100-islands.yaml", "far-island.yaml"}) {
    const Cluster cluster = load_cluster(kClusters + file);
    const int devices = static_cast<int>(cluster.devices().size());
    std::uniform_int_distribution<int> device(0, devices - 1);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int> ring;
      const int size = 2 + trial % 12;
      // Runs of neighbours, as groups are, with jumps and repeats between them.
      for (int d = device(rng); static_cast<int>(ring.size()) < size;) {
        ring.push_back(d);
        d = trial % 3 == 0 ? device(rng) : (d + (rng() % 4 == 0 ? 0 : 1)) % devices;
      }
      Link expected{std::numeric_limits<double>::infinity(), 0.0};
      for (size_t i = 0; i < ring.size(); ++i) {
        expected =
            slower_link(expected, cluster.link_between(ring[i], ring[(i + 1) % ring.size()]));
      }
      const Link got = cluster.slowest_ring_link(ring);
      EXPECT_EQ(got.bandwidth, expected.bandwidth) << file << " trial " << trial;
      EXPECT_EQ(got.latency, expected.latency) << file << " trial " << trial;
    }
  }
}

TEST(ExampleClusters, IslandOverridesDoNotLeakIntoNodes) {
  const Cluster cluster = load_cluster(kClusters + "h100-a100-islands.yaml");
  ASSERT_EQ(cluster.devices().size(), 32u);
  EXPECT_DOUBLE_EQ(cluster.link_between(0, 1).bandwidth, 450e9);    // inside h100-0
  EXPECT_DOUBLE_EQ(cluster.link_between(0, 8).bandwidth, 50e9);     // NDR between H100 nodes
  EXPECT_DOUBLE_EQ(cluster.link_between(16, 24).bandwidth, 25e9);   // HDR between A100 nodes
  EXPECT_DOUBLE_EQ(cluster.link_between(16, 17).bandwidth, 300e9);  // inside a100-0
  EXPECT_DOUBLE_EQ(cluster.link_between(0, 16).bandwidth, 25e9 / 8);
}

TEST(ExampleClusters, BuiltInNamesLoadWithoutFiles) {
  for (const auto& [name, text] : builtin_clusters()) {
    const Cluster cluster = load_cluster(name);
    EXPECT_EQ(cluster.name(), name);
    EXPECT_GT(cluster.devices().size(), 0u);
  }
  EXPECT_EQ(load_cluster("a100x8").devices().size(), 8u);
  EXPECT_EQ(builtin_clusters().size(), 9u);
  // The network lab's islands: 100 times slower between than inside.
  const Cluster lab = load_cluster("lab-two-islands");
  EXPECT_DOUBLE_EQ(lab.link_between(0, 1).bandwidth, 100 * lab.link_between(1, 2).bandwidth);
  // The far island sits behind a link 100 times slower than its own InfiniBand.
  const Cluster far = load_cluster("far-island");
  EXPECT_DOUBLE_EQ(far.link_between(0, 8).bandwidth, 100 * far.link_between(0, 16).bandwidth);
  // Four stand-ins in one node, so tensor parallelism can pair them.
  const Cluster one_node = load_cluster("cpu-one-node");
  EXPECT_EQ(one_node.devices().size(), 4u);
  EXPECT_EQ(one_node.devices()[3].node, one_node.devices()[0].node);
  EXPECT_DOUBLE_EQ(one_node.device_type(0).speed.value_or(0), 0.4);
  // The CPU stand-in cluster: speeds relative to the host.
  const Cluster emulated = load_cluster("cpu-emulated");
  EXPECT_EQ(emulated.devices().size(), 3u);
  EXPECT_DOUBLE_EQ(emulated.device_type(2).speed.value_or(0), 0.2);
}

TEST(ClusterYaml, GpuTypesCanBeAddedAndChanged) {
  const std::string path = write_temp_file("custom.yaml", R"(
gpu_types:
  - name: T4
    speed: 0.25
  - name: MyAccel
    memory: 48 GiB
    memory_bandwidth: 900 GB/s
    peak: {fp32: 40 TFLOP/s, fp16: 160}
nodes:
  - {name: a, gpu: t4, count: 2, memory: 15 GiB}
  - {name: b, gpu: MyAccel, count: 1}
links:
  intra_node: {bandwidth: 16 GB/s, latency: 5 us}
  intra_island: {bandwidth: 1 GB/s, latency: 1 ms}
)");
  const Cluster cluster = load_cluster(path);
  EXPECT_EQ(cluster.name(), std::filesystem::path(path).stem().string());  // no name: file stem
  EXPECT_DOUBLE_EQ(*cluster.gpu_type("T4").speed, 0.25);
  EXPECT_DOUBLE_EQ(cluster.gpu_type("T4").peak.fp16, 65e12);  // the rest from the catalogue
  EXPECT_DOUBLE_EQ(cluster.device_memory(0), 15 * kGiB);
  const GpuType& mine = cluster.gpu_type("MyAccel");
  EXPECT_DOUBLE_EQ(mine.peak.bf16, 160e12);  // bf16 defaults to fp16
  EXPECT_DOUBLE_EQ(mine.peak.tf32, 40e12);   // tf32 defaults to fp32
  EXPECT_DOUBLE_EQ(cluster.device_memory(2), 48 * kGiB);
  EXPECT_EQ(cluster.islands().size(), 1u);  // no islands listed: one holds every node
  EXPECT_DOUBLE_EQ(cluster.link_between(0, 2).latency, 1e-3);
}

TEST(ClusterYaml, LinksCarryTheirEfficiencyAndMeasuredTable) {
  const std::string path = write_temp_file("tabled.yaml", R"(
gpu_types:
  - {name: T4, reserved_memory: 600 MiB, compute_capability: 8, multiprocessors: 46}
nodes:
  - {name: a, gpu: T4, count: 2}
  - {name: b, gpu: T4, count: 1}
links:
  intra_node: {bandwidth: 16 GB/s, latency: 5 us, efficiency: 0.9}
  intra_island:
    bandwidth: 1 Gbit/s
    latency: 200 us
    table:
      - {bytes: 4 KiB, one_way: 250 us, all_reduce: 600 us}
      - {bytes: 1 MiB, one_way: 9 ms, all_reduce: 18 ms}
)");
  const Cluster cluster = load_cluster(path);
  EXPECT_DOUBLE_EQ(cluster.gpu_type("T4").reserved_memory.value_or(0), 600 * kMiB);
  EXPECT_EQ(cluster.gpu_type("T4").compute_capability, 8);  // the catalogue's 7 changed
  EXPECT_EQ(cluster.gpu_type("T4").multiprocessors, 46);    // the catalogue's 40 changed
  EXPECT_DOUBLE_EQ(cluster.link_between(0, 1).efficiency.value_or(0), 0.9);
  EXPECT_TRUE(cluster.link_between(0, 1).table.empty());
  const Link between = cluster.link_between(0, 2);
  EXPECT_FALSE(between.efficiency.has_value());
  ASSERT_EQ(between.table.size(), 2u);
  EXPECT_DOUBLE_EQ(between.table[1].bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(between.table[1].all_reduce, 18e-3);
  EXPECT_TRUE(between.has_all_reduce_table());
}

TEST(LinkTable, InterpolatesInLogSizeAndExtrapolatesAtTheLastRate) {
  const std::vector<LinkSample> table{{1000, 1.0, 3.0}, {100000, 3.0, 7.0}, {200000, 5.0, 9.0}};
  EXPECT_DOUBLE_EQ(table_seconds(table, 10, false), 1.0);     // below: the smallest's time
  EXPECT_DOUBLE_EQ(table_seconds(table, 1000, false), 1.0);   // on a row: its time
  EXPECT_DOUBLE_EQ(table_seconds(table, 10000, false), 2.0);  // halfway in log size
  EXPECT_DOUBLE_EQ(table_seconds(table, 10000, true), 5.0);
  EXPECT_DOUBLE_EQ(table_seconds(table, 200000, false), 5.0);
  // Past the end: 2 s per 100000 bytes, the last two rows' marginal rate.
  EXPECT_DOUBLE_EQ(table_seconds(table, 400000, false), 9.0);
  EXPECT_DOUBLE_EQ(table_seconds({{1000, 2.0, 0.0}}, 3000, false), 6.0);  // one row: its rate
}

TEST(LinkTable, TheSlowerLinkKeepsItsOwnTable) {
  Link fast(10e9, 5e-6);
  Link slow(1e9, 1e-6);
  slow.table = {{1000, 1e-3, 0.0}};
  slow.efficiency = 0.5;
  const Link both = slower_link(fast, slow);
  EXPECT_DOUBLE_EQ(both.bandwidth, 1e9);
  EXPECT_DOUBLE_EQ(both.latency, 5e-6);  // the higher latency of the two
  EXPECT_EQ(both.table.size(), 1u);
  EXPECT_DOUBLE_EQ(both.efficiency.value_or(0), 0.5);
}

class BadClusterYaml : public ::testing::TestWithParam<hyperpipe::testing::BadInputCase> {};

TEST_P(BadClusterYaml, SaysWhereAndWhat) {
  const std::string path = write_temp_file("bad-cluster.yaml", GetParam().text);
  const std::string message = error_message<InputError>([&] { load_cluster(path); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().expected_fragment), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadClusterYaml,
    ::testing::Values(
        BadInputCase{"nodes: [\n", "not valid YAML"},
        BadInputCase{"gpu_types:\n  - {name: T4, multiprocessors: 0}\n"
                     "nodes:\n  - {name: a, gpu: T4, count: 1}\nlinks: {}\n",
                     "field 'gpu_types[0].multiprocessors': expected a count of streaming "
                     "multiprocessors "
                     "from 1 to 4096, got '0'"},
        BadInputCase{"", "expected a mapping with 'nodes' and 'links'"},
        BadInputCase{"nodes: []\nlinks: {}\n",
                     "field 'nodes': expected a list of at least 1 item, got a list"},
        BadInputCase{"links: {}\n", "missing required field 'nodes'"},
        BadInputCase{"nodes:\n  - {name: a, gpu: B200, count: 8}\nlinks: {}\n",
                     "line 2, field 'nodes[0].gpu': expected a GPU type"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 99999999999}\nlinks: {}\n",
                     "field 'nodes[0].count': expected a positive integer up to 1024"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 0}\nlinks: {}\n",
                     "field 'nodes[0].count': expected a positive integer up to 1024, got '0'"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2, memory: -3 GiB}\nlinks: {}\n",
                     "field 'nodes[0].memory': expected a positive size"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, gpus: 2}\nlinks: {}\n",
                     "unknown field 'gpus'"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2}\n  - {name: a, gpu: T4, count: 2}\n"
                     "links: {}\n",
                     "field 'nodes[1].name': expected a node name not used before"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2}\nlinks: {}\n",
                     "field 'links': missing required field 'intra_node'"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 1}\n  - {name: b, gpu: T4, count: 1}\n"
                     "islands:\n  - {name: x, nodes: [a]}\n  - {name: y, nodes: [b]}\nlinks: {}\n",
                     "missing required field 'inter_island'"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 1}\n  - {name: b, gpu: T4, count: 1}\n"
                     "islands:\n  - {name: x, nodes: [a]}\nlinks: {}\n",
                     "node 'b' belongs to no island"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 1}\n"
                     "islands:\n  - {name: x, nodes: [a]}\n  - {name: y, nodes: [a]}\nlinks: {}\n",
                     "expected a node that belongs to no other island"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 1}\n"
                     "islands:\n  - {name: x, nodes: [c]}\nlinks: {}\n",
                     "expected the name of a node listed under 'nodes'"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2}\n"
                     "links:\n  intra_node: {bandwidth: 10 GB, latency: 1}\n",
                     "field 'links.intra_node.bandwidth': expected a positive bandwidth"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2}\n"
                     "links:\n  intra_node: {bandwidth: 10, latency: 1}\n  overrides:\n"
                     "    - {between: [a, zz], bandwidth: 1, latency: 1}\n",
                     "expected the name of a node or an island"},
        BadInputCase{"gpu_types:\n  - {name: X1, memory: 8 GiB}\n"
                     "nodes:\n  - {name: a, gpu: X1, count: 1}\nlinks: {}\n",
                     "missing required field 'memory_bandwidth'"},
        BadInputCase{"gpu_types:\n  - {name: T4, speed: 0}\n"
                     "nodes:\n  - {name: a, gpu: T4, count: 1}\nlinks: {}\n",
                     "field 'gpu_types[0].speed': expected a positive number"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2}\n"
                     "links:\n  intra_node: {bandwidth: 10, latency: 1, efficiency: 1.5}\n",
                     "field 'links.intra_node.efficiency': expected a fraction in (0, 1]"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2}\n"
                     "links:\n  intra_node: {bandwidth: 10, latency: 1, table: [\n"
                     "    {bytes: 4 KiB, one_way: 1 ms}, {bytes: 4 KiB, one_way: 2 ms}]}\n",
                     "expected a positive size larger than the row before's"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2}\n"
                     "links:\n  intra_node: {bandwidth: 10, latency: 1, table: [\n"
                     "    {bytes: 4 KiB, one_way: 1 ms, all_reduce: 2 ms}, {bytes: 8 KiB, "
                     "one_way: 2 ms}]}\n",
                     "`all_reduce` in every row of the table or in none"},
        BadInputCase{"nodes:\n  - {name: a, gpu: T4, count: 2}\n"
                     "links:\n  intra_node: {bandwidth: 10, latency: 1, table: [\n"
                     "    {bytes: 4 KiB, one_way: 0 ms}]}\n",
                     "expected a positive time"}));

TEST(LoadCluster, UnknownNameListsBuiltIns) {
  const std::string message = error_message<InputError>([] { load_cluster("nowhere"); });
  EXPECT_NE(message.find("--cluster"), std::string::npos) << message;
  EXPECT_NE(message.find("a100-v100-t4"), std::string::npos) << message;
}

}  // namespace
}  // namespace hyperpipe::cluster
