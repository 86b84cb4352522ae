#include "hyperpipe/runtime/profiling_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "test_files.h"

namespace hyperpipe::runtime {
namespace {

using hyperpipe::testing::error_message;
using hyperpipe::testing::temp_path;

model::Model tiny_model() {
  return model::Model(model::read_model_yaml(YamlField::load_string(
      "name: profiled\nflavour: gpt\nhidden: 32\nlayers: 2\nheads: 2\nvocab: 256\nseq_len: 16\n"
      "dtype: fp32\n",
      "m")));
}

ProfilingRequest request_for(const std::string& out) {
  ProfilingRequest request;
  request.micro_batches = {1};
  request.out = out;
  request.free_port = [] { return 0; };
  return request;
}

// A stand-in cluster's links are those of two processes of this host unless its file's
// figures are kept; without a cluster no link is asked for, so none is explained away.
TEST(ProfilingRun, LinksAreMeasuredForAStandInClusterUnlessItsFiguresAreKept) {
  ProfilingRequest request = request_for(temp_path("links-unasked.json"));
  const LayerProfiling alone(request, tiny_model());
  EXPECT_FALSE(alone.measures_links());
  EXPECT_TRUE(alone.links_not_measured().empty());
  EXPECT_EQ(alone.link_backend(), "Gloo");

  request.cluster = HYPERPIPE_EXAMPLES "/clusters/cpu-emulated.yaml";
  const LayerProfiling emulated(request, tiny_model());
  EXPECT_TRUE(emulated.measures_links());
  EXPECT_TRUE(emulated.links_not_measured().empty());
  ASSERT_EQ(emulated.devices().size(), 3u);
  EXPECT_EQ(emulated.devices()[1].name, "V100-16GB");
  EXPECT_DOUBLE_EQ(emulated.devices()[1].speed, 1 / 2.5);

  request.keep_cluster_links = true;
  const LayerProfiling kept(request, tiny_model());
  EXPECT_FALSE(kept.measures_links());
  ASSERT_EQ(kept.links_not_measured().size(), 1u);
  EXPECT_NE(kept.links_not_measured()[0].find("--no-links"), std::string::npos);
}

// What a run measures joins what the file held; its summary lists only this run's entries.
TEST(ProfilingRun, MergesIntoTheDatabaseAndSummarisesThisRunAlone) {
  const std::string out = temp_path("merged-profiles.json");
  {
    std::ofstream(out) << R"({"format": "hyperpipe.profiles/1", "host": "earlier", "entries": [
      {"model": "other", "layer": "head", "device": "T4", "dtype": "fp16", "tp": 1,
       "seq_len": 2048, "micro_batch": 1,
       "forward_ms": 4.0, "backward_input_ms": 4.0, "backward_weight_ms": 4.0}]})";
  }
  ProfilingRequest request = request_for(out);
  request.as = "A100-80GB";
  LayerProfiling run(request, tiny_model());
  const auto measured = run.measure_layers({});
  ASSERT_EQ(measured.size(), 3u);  // embedding, decoder block, head at micro-batch 1
  const nlohmann::json summary = run.file();
  EXPECT_EQ(summary["format"], kProfilingFormat);
  EXPECT_EQ(summary["model"], "profiled");
  EXPECT_EQ(summary["entries"].size(), 3u);
  EXPECT_EQ(summary["entries_in_all"], 4);
  EXPECT_EQ(summary["types"], nlohmann::json::parse(R"([{"name": "A100-80GB", "speed": 1.0}])"));
  EXPECT_FALSE(summary.contains("links"));  // none asked for
  const cost::ProfileDb written = cost::ProfileDb::load(out);
  EXPECT_EQ(written.size(), 4u);
  EXPECT_EQ(written.host(), run.host());
  std::filesystem::remove(out);
}

TEST(ProfilingRun, AModelMustBeNamed) {
  const std::string message =
      error_message<InputError>([] { requested_model(request_for(temp_path("none.json"))); });
  EXPECT_NE(message.find("--model"), std::string::npos) << message;
}

// Link levels are measured across a launcher's processes of a named cluster, not alone.
TEST(ProfilingRun, LinkLevelsNeedAClusterAndALaunchersProcesses) {
  ProfilingRequest request = request_for(temp_path("levels.json"));
  EXPECT_NE(error_message<InputError>([&] {
              LinkLevelProfiling run(request);
            }).find("--cluster with --links"),
            std::string::npos);
  request.cluster = HYPERPIPE_EXAMPLES "/clusters/cpu-emulated.yaml";
  EXPECT_NE(error_message<InputError>([&] {
              LinkLevelProfiling run(request);
            }).find("a launcher's processes"),
            std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::runtime
