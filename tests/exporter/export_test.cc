#include "hyperpipe/exporter/export.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/exporter/rank_placement.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/checked_plan.h"

namespace hyperpipe::exporter {
namespace {

const std::string kExamples = HYPERPIPE_EXAMPLES;
const std::string kData = HYPERPIPE_TEST_DATA;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const ExportedFile& named(const std::vector<ExportedFile>& files, const std::string& name) {
  for (const auto& file : files) {
    if (file.name == name) return file;
  }
  throw std::runtime_error("no exported file " + name);
}

// The example plan's exports, as reviewed once and kept under tests/data/export/.
TEST(Export, GoldenFilesOfTheExamplePlan) {
  const auto [plan, model, cluster] =
      plan::load_checked_plan(kExamples + "/plans/tiny-gpt-3stage.json");
  for (const auto& [target, name] : {std::pair{plan::Framework::megatron, "megatron"},
                                     std::pair{plan::Framework::deepspeed, "deepspeed"},
                                     std::pair{plan::Framework::torchtitan, "torchtitan"}}) {
    for (const auto& file : export_plan(plan, model, cluster, target)) {
      const std::string golden = kData + "/export/tiny-gpt-3stage-" + name + "/" + file.name;
      EXPECT_EQ(file.text, read(golden)) << golden;
    }
  }
}

// A 4-group plan on the mixed cluster, planned for Megatron-LM: every layer in exactly one
// stage of every export.
class PlannedForMegatron : public ::testing::Test {
 protected:
  plan::Plan plan = plan::load_plan(kExamples + "/plans/gpt3-2.7b-4stage.json");
  model::Model model = model::load_model("gpt3-2.7b");
  cluster::Cluster cluster = cluster::load_cluster(kExamples + "/clusters/a100-v100-t4.yaml");

  void SetUp() override {
    for (auto& stage : plan.stages) stage.recompute = model::Recompute::full;
  }
};

TEST_F(PlannedForMegatron, EveryLayerOnceInEachFormat) {
  const int blocks = model.num_layers() - 2;
  const auto megatron = export_plan(plan, model, cluster, plan::Framework::megatron);
  std::smatch match;
  const std::string& args = named(megatron, "megatron-args.sh").text;
  ASSERT_TRUE(std::regex_search(args, match, std::regex("layout \"([^\"]*)\"")));
  int e = 0, l = 0, t = 0, stages = 1;
  const std::string layout = match[1];
  for (size_t i = 0; i < layout.size(); ++i) {
    if (layout[i] == '|') ++stages;
    if (layout[i] == 'E') ++e;
    if (layout[i] == 'L') ++l;
    if (layout[i] == 't') {
      int count = 1;
      if (i + 1 < layout.size() && layout[i + 1] == '*') count = std::stoi(layout.substr(i + 2));
      t += count;
    }
  }
  EXPECT_EQ(e, 1);
  EXPECT_EQ(l, 1);
  EXPECT_EQ(t, blocks);
  EXPECT_EQ(stages, static_cast<int>(plan.stages.size()));
  EXPECT_NE(args.find("--recompute-granularity full"), std::string::npos);

  const auto titan = export_plan(plan, model, cluster, plan::Framework::torchtitan);
  const std::string& toml = named(titan, "torchtitan.toml").text;
  for (int b = 0; b < blocks; ++b) {
    const std::string name = "\"layers." + std::to_string(b) + "\"";
    const size_t at = toml.find(name);
    ASSERT_NE(at, std::string::npos) << name;
    EXPECT_EQ(toml.find(name, at + 1), std::string::npos) << name << " twice";
  }

  const auto ds = export_plan(plan, model, cluster, plan::Framework::deepspeed);
  const std::string& module = named(ds, "deepspeed_partition.py").text;
  ASSERT_TRUE(std::regex_search(module, match, std::regex("PARTS = \\[([0-9, ]*)\\]")));
  std::vector<int> parts;
  std::stringstream list(match[1].str());
  for (std::string item; std::getline(list, item, ',');) parts.push_back(std::stoi(item));
  ASSERT_EQ(parts.size(), plan.stages.size() + 1);
  EXPECT_EQ(parts.front(), 0);
  EXPECT_EQ(parts.back(), model.num_layers());
  for (size_t s = 0; s + 1 < parts.size(); ++s) EXPECT_LT(parts[s], parts[s + 1]);
}

TEST_F(PlannedForMegatron, TorchtitansSelectiveIsThePerOpPolicy) {
  const auto toml_for = [&](model::Recompute recompute) {
    for (auto& stage : plan.stages) stage.recompute = recompute;
    return named(export_plan(plan, model, cluster, plan::Framework::torchtitan), "torchtitan.toml")
        .text;
  };
  const std::string selective = toml_for(model::Recompute::selective);
  EXPECT_NE(selective.find("mode = \"selective\"\nselective_ac_option = \"op\"\n"),
            std::string::npos)
      << selective;
  const std::string full = toml_for(model::Recompute::full);
  EXPECT_NE(full.find("mode = \"full\"\n"), std::string::npos) << full;
  EXPECT_EQ(full.find("selective_ac_option"), std::string::npos) << full;
}

TEST_F(PlannedForMegatron, ShardedOptimizerStateInEachFramesTerms) {
  const auto flags = [&](bool shard) {
    plan.shard_optimizer = shard;
    return named(export_plan(plan, model, cluster, plan::Framework::megatron), "megatron-args.sh")
               .text.find("--use-distributed-optimizer") != std::string::npos;
  };
  EXPECT_TRUE(flags(true));
  EXPECT_FALSE(flags(false));
  plan.shard_optimizer = true;
  EXPECT_NE(named(export_plan(plan, model, cluster, plan::Framework::deepspeed), "ds_config.json")
                .text.find("\"stage\": 1"),
            std::string::npos);
  const std::string toml =
      named(export_plan(plan, model, cluster, plan::Framework::torchtitan), "torchtitan.toml").text;
  EXPECT_NE(toml.find("data_parallel_shard_degree = 4\ndata_parallel_replicate_degree = 1"),
            std::string::npos)
      << toml;
}

TEST_F(PlannedForMegatron, WhatATargetCannotExpressIsRefused) {
  plan::Plan gpipe = plan;
  gpipe.schedule = schedule::ScheduleKind::gpipe;
  const auto message = [&](const plan::Plan& p, plan::Framework target) {
    try {
      export_plan(p, model, cluster, target);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("(exported)");
  };
  EXPECT_NE(message(gpipe, plan::Framework::megatron).find("Megatron-LM runs 1f1b"),
            std::string::npos);
  plan::Plan odd = plan;
  odd.micro_batch_size = 3;  // over dp 4
  odd.micro_batches = 2;
  EXPECT_NE(message(odd, plan::Framework::torchtitan).find("splits evenly over dp"),
            std::string::npos)
      << message(odd, plan::Framework::torchtitan);
  EXPECT_NE(message(plan, plan::Framework::hyperpipe).find("hyperpipe launch"), std::string::npos);
}

TEST(RankPlacement, RanksGoStageByStageAndTorchrunOnlyWhereBlocksAllow) {
  const auto cluster = cluster::load_cluster(kExamples + "/clusters/a100-v100-t4.yaml");
  plan::Plan plan;
  plan.stages = {{0, 10, {4, 5, 6, 7}, 2, 2, model::Recompute::none},
                 {10, 20, {0, 1, 2, 3}, 2, 2, model::Recompute::none}};
  const auto ranks = place_ranks(plan, cluster);
  ASSERT_EQ(ranks.size(), 8u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(ranks[r].rank, r);
    EXPECT_EQ(ranks[r].device, plan.stages[r / 4].devices[r % 4]);
    const auto& device = cluster.devices()[ranks[r].device];
    EXPECT_EQ(ranks[r].host, cluster.nodes()[device.node].name);
    EXPECT_EQ(ranks[r].slot, device.local);
  }
  EXPECT_EQ(rankfile(ranks).substr(0, rankfile(ranks).find('\n')),
            "rank 0=" + ranks[0].host + " slot=" + std::to_string(ranks[0].slot));
  // Devices 4-7 and 0-3 sit on two hosts, four ranks each in one block: torchrun places them.
  ASSERT_NE(ranks[0].host, ranks[4].host);
  const auto lines = torchrun_lines(ranks);
  ASSERT_TRUE(lines);
  EXPECT_NE(lines->find("# on " + ranks[0].host +
                        "\nCUDA_VISIBLE_DEVICES=" + std::to_string(ranks[0].slot)),
            std::string::npos)
      << *lines;
  EXPECT_NE(lines->find("--node-rank 0"), std::string::npos);
  EXPECT_NE(lines->find("--nproc-per-node 4"), std::string::npos);
  // Three ranks on one host, one on another: no torchrun numbering fits.
  plan.stages = {{0, 10, {0, 1, 2}, 3, 1, model::Recompute::none},
                 {10, 20, {12}, 1, 1, model::Recompute::none}};
  EXPECT_FALSE(torchrun_lines(place_ranks(plan, cluster)));
}

}  // namespace
}  // namespace hyperpipe::exporter
