#include "hyperpipe/cost/profile_db.h"

#include <gtest/gtest.h>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe::cost {
namespace {

using hyperpipe::testing::BadInputCase;
using hyperpipe::testing::error_message;
using hyperpipe::testing::write_temp_file;

ProfileKey block_key(const std::string& device = "A100-40GB", int64_t tp = 1) {
  return {"gpt3-2.7b", model::LayerKind::decoder_block, device, model::DType::fp16, tp, 2048};
}

ProfileDb two_points() {
  ProfileDb db;
  db.add({block_key(), 2, {0.010, 0.012, 0.008, 1000.0, std::nullopt, std::nullopt}});
  db.add({block_key(), 8, {0.034, 0.042, 0.026, 4000.0, std::nullopt, std::nullopt}});
  return db;
}

TEST(ProfileDb, ExactPointWins) {
  const auto found = two_points().find(block_key(), 2);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->match, ProfileMatch::exact);
  EXPECT_DOUBLE_EQ(found->times.forward, 0.010);
}

TEST(ProfileDb, InterpolatesLinearlyBetweenMeasuredSizes) {
  const auto found = two_points().find(block_key(), 4);  // a third of the way from 2 to 8
  ASSERT_TRUE(found);
  EXPECT_EQ(found->match, ProfileMatch::interpolated);
  EXPECT_DOUBLE_EQ(found->times.forward, 0.010 + (0.034 - 0.010) / 3);
  EXPECT_DOUBLE_EQ(found->times.backward_input, 0.012 + (0.042 - 0.012) / 3);
  EXPECT_DOUBLE_EQ(found->times.backward_weight, 0.008 + (0.026 - 0.008) / 3);
  EXPECT_DOUBLE_EQ(*found->times.activation_bytes, 2000.0);
}

TEST(ProfileDb, ExtrapolatesInProportionOutsideTheRange) {
  const auto above = two_points().find(block_key(), 16);
  ASSERT_TRUE(above);
  EXPECT_EQ(above->match, ProfileMatch::extrapolated);
  EXPECT_DOUBLE_EQ(above->times.forward, 0.034 * 2);
  const auto below = two_points().find(block_key(), 1);
  EXPECT_DOUBLE_EQ(below->times.backward_input, 0.012 / 2);
}

TEST(ProfileDb, KeyMustMatch) {
  const ProfileDb db = two_points();
  EXPECT_FALSE(db.find(block_key("A100-40GB", 2), 2));  // other tp
  EXPECT_FALSE(db.find(block_key("V100-16GB"), 2));     // other device
  EXPECT_TRUE(db.find(block_key("a100 40gb"), 2));      // same device, other spelling
  ProfileKey head = block_key();
  head.layer = model::LayerKind::head;
  EXPECT_FALSE(db.find(head, 2));
}

TEST(ProfileDb, MergingReplacesTheSamePointAndKeepsTheRest) {
  ProfileDb db = two_points();
  ProfileKey other = block_key();
  other.model = "another-model";
  db.add({other, 2, {1.0, 1.0, 1.0, std::nullopt, 0.5, std::nullopt}});
  // The same key (device names compare loosely) and size: replaced in place.
  ProfileKey same = block_key();
  same.device = "a100 40gb";
  db.add({same, 2, {0.020, 0.024, 0.016, std::nullopt, 0.003, std::nullopt}});
  ASSERT_EQ(db.entries().size(), 3u);
  EXPECT_EQ(db.size(), 3u);
  EXPECT_DOUBLE_EQ(db.find(block_key(), 2)->times.forward, 0.020);
  EXPECT_DOUBLE_EQ(db.entries()[0].times.forward, 0.020);  // kept its place
  EXPECT_DOUBLE_EQ(db.find(block_key(), 8)->times.forward, 0.034);
  // The optimizer step is per layer, whatever the micro-batch; interpolation keeps it.
  EXPECT_DOUBLE_EQ(*db.optimizer(block_key()), 0.003);
  EXPECT_DOUBLE_EQ(*db.find(block_key(), 5)->times.optimizer, 0.003);
  EXPECT_DOUBLE_EQ(*db.optimizer(other), 0.5);
}

TEST(ProfileDb, WritesWhatItReads) {
  ProfileDb db = two_points();
  db.set_host("test host");
  ProfileKey head = block_key();
  head.layer = model::LayerKind::head;
  db.add({head, 4, {0.001, 0.002, 0.003, std::nullopt, 0.0005, 0.0045}});
  const std::string path = write_temp_file("profiles.json", to_json(db).dump(2));
  const ProfileDb again = ProfileDb::load(path);
  EXPECT_EQ(again.host(), "test host");
  ASSERT_EQ(again.entries().size(), db.entries().size());
  for (size_t i = 0; i < db.entries().size(); ++i) {
    const auto& a = again.entries()[i];
    const auto& b = db.entries()[i];
    EXPECT_EQ(a.key.layer, b.key.layer);
    EXPECT_EQ(a.micro_batch, b.micro_batch);
    EXPECT_NEAR(a.times.forward, b.times.forward, 1e-15);  // ms in the file, s inside
    EXPECT_NEAR(a.times.backward_weight, b.times.backward_weight, 1e-15);
    EXPECT_EQ(a.times.activation_bytes, b.times.activation_bytes);
  }
  EXPECT_DOUBLE_EQ(*again.optimizer(head), 0.0005);
  EXPECT_FALSE(again.find(block_key(), 2)->times.backward.has_value());
  EXPECT_TRUE(again.links().empty());
  ProfileKey again_head = head;
  EXPECT_NEAR(*again.find(again_head, 4)->times.backward, 0.0045, 1e-15);
}

// Measured links are filed per cluster, written and read back, and a newer measurement
// for the same cluster replaces the older.
TEST(ProfileDb, LinksPerClusterRoundTripAndReplace) {
  ProfileDb db = two_points();
  db.set_links({"cpu-emulated", "gloo", {2e9, 50e-6}, {1e9, 20e-6}, {}});
  db.set_links({"other", "nccl", {100e9, 5e-6}, {80e9, 5e-6}, {}});
  cluster::Link measured(3e9, 40e-6);
  measured.table = {{16384, 60e-6, 150e-6}, {1 << 20, 400e-6, 900e-6}};
  db.set_links({"cpu-emulated", "gloo", measured, {1e9, 20e-6}, {}});
  cluster::Link across(12e6, 300e-6);
  across.table = {{16384, 2e-3, 4e-3}};
  db.set_links(
      {"lab", "gloo", measured, {1e9, 20e-6}, {{cluster::LinkLevel::inter_island, across}}});
  ASSERT_EQ(db.links().size(), 3u);
  const std::string path = write_temp_file("profiles.json", to_json(db).dump(2));
  const ProfileDb again = ProfileDb::load(path);
  const MeasuredLinks* links = again.links_for("cpu-emulated");
  ASSERT_NE(links, nullptr);
  EXPECT_EQ(links->backend, "gloo");
  EXPECT_DOUBLE_EQ(links->point_to_point.bandwidth, 3e9);
  EXPECT_DOUBLE_EQ(links->point_to_point.latency, 40e-6);
  EXPECT_DOUBLE_EQ(links->all_reduce.bandwidth, 1e9);
  // The measured table travels with the fit it summarises.
  ASSERT_EQ(links->point_to_point.table.size(), 2u);
  EXPECT_DOUBLE_EQ(links->point_to_point.table[1].bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(links->point_to_point.table[1].one_way, 400e-6);
  EXPECT_DOUBLE_EQ(links->point_to_point.table[1].all_reduce, 900e-6);
  EXPECT_TRUE(links->all_reduce.table.empty());
  EXPECT_TRUE(links->levels.empty());
  const MeasuredLinks* lab = again.links_for("lab");
  ASSERT_NE(lab, nullptr);
  ASSERT_EQ(lab->levels.size(), 1u);
  EXPECT_DOUBLE_EQ(lab->levels.at(cluster::LinkLevel::inter_island).table.at(0).all_reduce, 4e-3);
  EXPECT_EQ(again.links_for("a100x8"), nullptr);
}

// The whole backward, where measured, follows the micro-batch as the rest does.
TEST(ProfileDb, WholeBackwardInterpolatesAndScales) {
  ProfileDb db;
  db.add({block_key(), 2, {0.010, 0.012, 0.008, std::nullopt, std::nullopt, 0.018}});
  db.add({block_key(), 8, {0.034, 0.042, 0.026, std::nullopt, std::nullopt, 0.060}});
  EXPECT_DOUBLE_EQ(*db.find(block_key(), 4)->times.backward, 0.018 + (0.060 - 0.018) / 3);
  EXPECT_DOUBLE_EQ(*db.find(block_key(), 16)->times.backward, 0.120);
  EXPECT_FALSE(two_points().find(block_key(), 4)->times.backward.has_value());
}

TEST(ProfileDb, ReadsTheDocumentedFormat) {
  const std::string path = write_temp_file("profiles.json", R"({
  "format": "hyperpipe.profiles/1",
  "host": "test",
  "entries": [
    {"model": "gpt3-2.7b", "layer": "decoder_block", "device": "A100-40GB", "dtype": "fp16",
     "tp": 1, "seq_len": 2048, "micro_batch": 1,
     "forward_ms": 3.0, "backward_input_ms": 3.5, "backward_weight_ms": 2.5},
    {"model": "gpt3-2.7b", "layer": "head", "device": "A100-40GB", "dtype": "fp16",
     "tp": 1, "seq_len": 2048, "micro_batch": 1,
     "forward_ms": 4.0, "backward_input_ms": 4.0, "backward_weight_ms": 4.0,
     "activation_bytes": 123456}
  ]
})");
  const ProfileDb db = ProfileDb::load(path);
  EXPECT_EQ(db.size(), 2u);
  const auto found = db.find(block_key(), 1);
  ASSERT_TRUE(found);
  EXPECT_DOUBLE_EQ(found->times.backward_input, 3.5e-3);
  EXPECT_FALSE(found->times.activation_bytes.has_value());
}

class BadProfileFile : public ::testing::TestWithParam<hyperpipe::testing::BadInputCase> {};

TEST_P(BadProfileFile, SaysWhereAndWhat) {
  const std::string path = write_temp_file("bad-profiles.json", GetParam().text);
  const std::string message = error_message<InputError>([&] { ProfileDb::load(path); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().expected_fragment), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadProfileFile,
    ::testing::Values(
        BadInputCase{R"({"format": "hyperpipe.profiles/1", "entries": [)", "not valid YAML/JSON"},
        BadInputCase{R"({"format": "other/2", "entries": []})",
                     "field 'format': expected \"hyperpipe.profiles/1\""},
        BadInputCase{R"({"format": "hyperpipe.profiles/1"})", "missing required field 'entries'"},
        BadInputCase{R"({"format": "hyperpipe.profiles/1", "entries": [{"model": "m",
            "layer": "mlp", "device": "T4", "dtype": "fp16", "tp": 1, "seq_len": 8,
            "micro_batch": 1, "forward_ms": 1, "backward_input_ms": 1,
            "backward_weight_ms": 1}]})",
                     "field 'entries[0].layer': expected one of: embedding, decoder_block, head"},
        BadInputCase{R"({"format": "hyperpipe.profiles/1", "entries": [{"model": "m",
            "layer": "head", "device": "T4", "dtype": "fp16", "tp": 1, "seq_len": 8,
            "micro_batch": 1, "forward_ms": -1, "backward_input_ms": 1,
            "backward_weight_ms": 1}]})",
                     "field 'entries[0].forward_ms': expected a time in milliseconds"},
        BadInputCase{R"({"format": "hyperpipe.profiles/1", "entries": [{"model": "m",
            "layer": "head", "device": "T4", "dtype": "fp16", "tp": 1, "seq_len": 8,
            "micro_batch": 0, "forward_ms": 1, "backward_input_ms": 1,
            "backward_weight_ms": 1}]})",
                     "field 'entries[0].micro_batch': expected a positive integer"},
        BadInputCase{R"({"format": "hyperpipe.profiles/1", "entries": [], "links": [
            {"cluster": "c", "backend": "gloo",
             "point_to_point": {"latency_s": -1, "bandwidth_bytes_per_s": 1e9},
             "all_reduce": {"latency_s": 0, "bandwidth_bytes_per_s": 1e9}}]})",
                     "field 'links[0].point_to_point.latency_s': expected a latency"}));

}  // namespace
}  // namespace hyperpipe::cost
