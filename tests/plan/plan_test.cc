#include "hyperpipe/plan/plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/plan/plan_json.h"
#include "test_files.h"

namespace hyperpipe::plan {
namespace {

using hyperpipe::testing::BadInputCase;
using hyperpipe::testing::error_message;
using hyperpipe::testing::write_temp_file;

const std::string kExamples = HYPERPIPE_EXAMPLES;

TEST(Plan, ReadsTheExample) {
  const std::string path = kExamples + "/plans/gpt3-2.7b-4stage.json";
  const Plan plan = load_plan(path);
  EXPECT_EQ(plan.model, "gpt3-2.7b");
  EXPECT_EQ(resolve_reference(path, plan.cluster),
            kExamples + "/plans/../clusters/a100-v100-t4.yaml");
  EXPECT_EQ(resolve_reference(path, "a100x8"), "a100x8");  // a built-in name stays
  ASSERT_EQ(plan.stages.size(), 4u);
  EXPECT_EQ(plan.stages[0].recompute, model::Recompute::selective);
  EXPECT_EQ(plan.stages[1].recompute, model::Recompute::full);  // the plan's default
  EXPECT_EQ(plan.stages[3].devices, (std::vector<int>{12, 13, 14, 15}));
  EXPECT_EQ(plan.stages[3].dp, 4);
  EXPECT_EQ(plan.global_batch(), 64);
  check_plan(plan, model::load_model(plan.model),
             cluster::load_cluster(resolve_reference(path, plan.cluster)), path);
}

// A plan about to be written names a file from its own folder, so that resolve_reference
// finds the same file again; a name, or a plan not written, keeps what was given.
TEST(Plan, AReferenceBesideThePlanResolvesToTheSameFile) {
  const std::string cluster = kExamples + "/clusters/a100-v100-t4.yaml";
  const std::string plan_path = hyperpipe::testing::fresh_directory("beside") + "/plan.json";
  const std::string named = reference_beside(plan_path, cluster);
  EXPECT_TRUE(std::filesystem::path(named).is_relative()) << named;
  EXPECT_TRUE(std::filesystem::equivalent(resolve_reference(plan_path, named), cluster)) << named;
  EXPECT_EQ(reference_beside(plan_path, "a100x8"), "a100x8");
  EXPECT_EQ(reference_beside(std::nullopt, cluster), cluster);
}

TEST(Plan, JsonRoundTrip) {
  const Plan plan = load_plan(kExamples + "/plans/gpt3-2.7b-4stage.json");
  const std::string path = write_temp_file("round-trip.json", to_json(plan).dump(2));
  const Plan again = load_plan(path);
  EXPECT_EQ(to_json(again), to_json(plan));
  EXPECT_FALSE(to_json(plan).contains("gradient_reduce_dtype"));  // fp32, the default
}

TEST(Plan, GradientReduceDtypeRoundTrips) {
  Plan plan = load_plan(kExamples + "/plans/gpt3-2.7b-4stage.json");
  plan.gradient_reduce_dtype = model::DType::bf16;
  const std::string path = write_temp_file("bf16-reduce.json", to_json(plan).dump(2));
  EXPECT_EQ(load_plan(path).gradient_reduce_dtype, model::DType::bf16);
}

// The precision a plan was costed in (`plan --dtype`): written, read back, and the model
// a checked plan loads is in it.
TEST(Plan, DtypeRoundTripsAndSetsTheCheckedModels) {
  Plan plan = load_plan(kExamples + "/plans/gpt3-2.7b-4stage.json");
  EXPECT_FALSE(plan.dtype);
  EXPECT_FALSE(to_json(plan).contains("dtype"));
  const auto model_dtype =
      load_checked_plan(kExamples + "/plans/gpt3-2.7b-4stage.json").model.config().dtype;
  plan.dtype = model_dtype == model::DType::fp32 ? model::DType::bf16 : model::DType::fp32;
  ASSERT_EQ(plan.model, "gpt3-2.7b");  // a catalogue name: found from the temporary folder
  plan.cluster = "a100-v100-t4";       // the built-in twin of the example's file
  const std::string path = write_temp_file("dtype.json", to_json(plan).dump(2));
  EXPECT_EQ(load_plan(path).dtype, plan.dtype);
  EXPECT_EQ(load_checked_plan(path).model.config().dtype, *plan.dtype);
}

// A plan copied away from the files it names: the error names the plan and its field, and
// where the path was looked for, not an option the user never passed.
TEST(Plan, AReferenceNotFoundIsThePlansFieldsError) {
  std::ifstream example(kExamples + "/plans/tiny-gpt-3stage.json");
  const std::string text((std::istreambuf_iterator<char>(example)),
                         std::istreambuf_iterator<char>());
  const std::string path = write_temp_file("copied-plan.json", text);
  try {
    load_checked_plan(path);
    FAIL() << "loaded a plan whose model file is not there";
  } catch (const InputError& error) {
    EXPECT_EQ(error.source(), path);
    EXPECT_EQ(error.where(), "field 'model'");
    const std::string beside = std::filesystem::absolute(std::filesystem::path(path).parent_path() /
                                                         "../models/tiny-gpt.yaml")
                                   .lexically_normal()
                                   .string();
    EXPECT_NE(error.expected().find(beside), std::string::npos) << error.what();
    EXPECT_NE(error.expected().find("'../models/tiny-gpt.yaml' is not a catalogue model"),
              std::string::npos)
        << error.what();
  }
  // A cluster given in its place is the user's own option: its error stays its own.
  try {
    load_checked_plan(kExamples + "/plans/tiny-gpt-3stage.json", std::string("no-such-cluster"));
    FAIL() << "loaded an unknown cluster";
  } catch (const InputError& error) {
    EXPECT_EQ(error.source(), "--cluster");
  }
}

TEST(Plan, RuntimeRoundTripsAndDefaultsToHyperPipe) {
  Plan plan = load_plan(kExamples + "/plans/tiny-gpt-3stage.json");
  EXPECT_EQ(plan.runtime, Framework::hyperpipe);
  EXPECT_FALSE(to_json(plan).contains("runtime"));
  plan.runtime = Framework::torchtitan;
  plan.shard_optimizer = true;
  const std::string path = write_temp_file("torchtitan.json", to_json(plan).dump(2));
  EXPECT_EQ(load_plan(path).runtime, Framework::torchtitan);
  EXPECT_TRUE(load_plan(path).shard_optimizer);
}

TEST(Plan, ReplicasOfOtherCompositionTakeTheirOwnShare) {
  const std::string text = R"({"format": "hyperpipe.plan/1", "model": "gpt2", "cluster":
      "a100-v100-t4", "micro_batch_size": 4, "micro_batches": 12,
      "stages": [{"layers": [0, 14], "devices": [0, 1, 2, 3]}],
      "replicas": [{"micro_batch_size": 2, "micro_batches": 8, "schedule": "zb-h1",
                    "recompute": "full",
                    "stages": [{"layers": [0, 9], "devices": [4, 5]},
                               {"layers": [9, 14], "devices": [12, 13]}]}]})";
  const Plan plan = read_plan(YamlField::load_string(text, "replicas.json"));
  ASSERT_EQ(plan.pipeline_count(), 2);
  EXPECT_EQ(plan.global_batch(), 4 * 12 + 2 * 8);
  const Pipeline& replica = plan.pipeline(1);
  EXPECT_EQ(replica.schedule, schedule::ScheduleKind::zb_h1);
  EXPECT_EQ(replica.stages[1].devices, (std::vector<int>{12, 13}));
  EXPECT_EQ(replica.stages[1].recompute, model::Recompute::full);
  EXPECT_EQ(plan.schedule, schedule::ScheduleKind::one_f_one_b);  // its own default
  check_plan(plan, model::load_model("gpt2"), cluster::load_cluster("a100-v100-t4"),
             "replicas.json");
  const std::string path = write_temp_file("replicas-round-trip.json", to_json(plan).dump(2));
  EXPECT_EQ(to_json(load_plan(path)), to_json(plan));
  // Ranks: the plan's own pipeline first, then the replica's groups in pipeline order.
  EXPECT_EQ(devices_in_rank_order(plan), (std::vector<int>{0, 1, 2, 3, 4, 5, 12, 13}));
}

TEST(Plan, InterleavedAndHeteroSchedules) {
  const Plan interleaved = read_plan(YamlField::load_string(R"({
    "format": "hyperpipe.plan/1", "model": "gpt2", "cluster": "a100x8",
    "micro_batch_size": 2, "micro_batches": 4,
    "schedule": {"kind": "interleaved", "chunks": 2},
    "stages": [{"layers": [0, 4], "devices": [0]}, {"layers": [4, 8], "devices": [1]},
               {"layers": [8, 11], "devices": [0]}, {"layers": [11, 14], "devices": [1]}]})",
                                                            "i.json"));
  EXPECT_EQ(interleaved.ranks(), 2);
  EXPECT_EQ(devices_in_rank_order(interleaved), (std::vector<int>{0, 1}));  // chunks share
  const Plan hetero = read_plan(YamlField::load_string(R"({
    "format": "hyperpipe.plan/1", "model": "gpt2", "cluster": "a100x8",
    "micro_batch_size": 1, "micro_batches": 8, "schedule": {"kind": "hetero-1f1b", "warmup": [4, 1]},
    "stages": [{"layers": [0, 7], "devices": [0]}, {"layers": [7, 14], "devices": [1]}]})",
                                                       "h.json"));
  EXPECT_EQ(hetero.warmup, (std::vector<int>{4, 1}));
}

// A launcher's share of a run across hosts: the ranks of its devices, ascending; a device
// the plan lacks or one given twice is refused naming --devices-here.
TEST(Plan, TheRanksOfALaunchersDevices) {
  const Plan plan = read_plan(YamlField::load_string(R"({
    "format": "hyperpipe.plan/1", "model": "gpt2", "cluster": "a100x8",
    "micro_batch_size": 1, "micro_batches": 4,
    "stages": [{"layers": [0, 7], "devices": [4, 5], "dp": 2},
               {"layers": [7, 14], "devices": [1]}]})",
                                                     "r.json"));
  ASSERT_EQ(devices_in_rank_order(plan), (std::vector<int>{4, 5, 1}));
  EXPECT_EQ(ranks_of_devices(plan, {}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ranks_of_devices(plan, {1, 4}), (std::vector<int>{0, 2}));
  EXPECT_NE(error_message<InputError>([&] {
              ranks_of_devices(plan, {2});
            }).find("devices of the plan (1,4-5)"),
            std::string::npos);
  EXPECT_NE(error_message<InputError>([&] {
              ranks_of_devices(plan, {5, 5});
            }).find("--devices-here: 5: each device once"),
            std::string::npos);
}

class BadPlanFile : public ::testing::TestWithParam<BadInputCase> {};

TEST_P(BadPlanFile, SaysWhereAndWhat) {
  const std::string path = write_temp_file("bad-plan.json", GetParam().text);
  const std::string message = error_message<InputError>([&] { load_plan(path); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().expected_fragment), std::string::npos) << message;
}

#define PLAN_HEAD \
  R"({"format": "hyperpipe.plan/1", "model": "gpt2", "cluster": "a100x8", "micro_batch_size": 2, "micro_batches": 4, )"

INSTANTIATE_TEST_SUITE_P(
    Cases, BadPlanFile,
    ::testing::Values(
        BadInputCase{R"({"format": "hyperpipe.plan/9"})", "expected \"hyperpipe.plan/1\""},
        BadInputCase{PLAN_HEAD R"("stages": []})", "expected a list of at least 1 item"},
        BadInputCase{PLAN_HEAD R"("stages": [{"layers": [0, 7], "devices": [0]},
                     {"layers": [8, 14], "devices": [1]}]})",
                     "expected a range starting at layer 7, where the previous stage ends"},
        BadInputCase{PLAN_HEAD R"("stages": [{"layers": [3, 1], "devices": [0]}]})",
                     "[first, end) with 0 <= first < end"},
        BadInputCase{PLAN_HEAD R"("stages": [{"layers": [0, 14], "devices": [0, 1, 2], "dp": 2}]})",
                     "expected dp × tp = 2 × 1 = 2 device ids"},
        BadInputCase{PLAN_HEAD
                     R"("schedule": "2f2b", "stages": [{"layers": [0, 14], "devices": [0]}]})",
                     "expected one of: gpipe, 1f1b, interleaved, zb-h1, hetero-1f1b"},
        BadInputCase{PLAN_HEAD R"("schedule": {"kind": "1f1b", "chunks": 2},
                     "stages": [{"layers": [0, 14], "devices": [0]}]})",
                     "only the interleaved schedule runs several chunks"},
        BadInputCase{PLAN_HEAD R"("schedule": {"kind": "interleaved", "chunks": 2},
                     "stages": [{"layers": [0, 4], "devices": [0]}, {"layers": [4, 8], "devices": [1]},
                                {"layers": [8, 11], "devices": [2]}, {"layers": [11, 14], "devices": [1]}]})",
                     "stage 2 is another chunk of the same device group"},
        BadInputCase{PLAN_HEAD R"("schedule": {"kind": "hetero-1f1b", "warmup": [3]},
                     "stages": [{"layers": [0, 7], "devices": [0]}, {"layers": [7, 14], "devices": [1]}]})",
                     "one depth per stage (2 of them)"},
        BadInputCase{R"({"format": "hyperpipe.plan/1", "model": "gpt2", "cluster": "a100x8",
                     "micro_batch_size": 2, "micro_batches": 70000, "stages": []})",
                     "field 'micro_batches': expected a positive integer up to 65536"},
        BadInputCase{PLAN_HEAD R"("schedule": {"kind": "hetero-1f1b", "warmup": [1, 2]},
                     "stages": [{"layers": [0, 7], "devices": [0]}, {"layers": [7, 14], "devices": [1]}]})",
                     "field 'schedule.warmup[1]': expected a depth of at most 1"},
        BadInputCase{PLAN_HEAD R"("stages": [{"layers": [0, 14], "devices": [0, 0], "dp": 2}]})",
                     "field 'stages[0].devices[1]': expected a device not listed before in this "
                     "stage (device 0 is)"},
        BadInputCase{PLAN_HEAD R"("stages": [{"layers": [0, 14], "devices": [4294967296]}]})",
                     "expected a device id from 0 to 16777216"},
        BadInputCase{PLAN_HEAD R"("stages": [{"layers": [0, 14], "devices": [0], "gpus": 1}]})",
                     "unknown field 'gpus'"},
        BadInputCase{PLAN_HEAD R"("dtype": "fp64",
                     "stages": [{"layers": [0, 14], "devices": [0]}]})",
                     "field 'dtype': expected one of fp32, fp16, bf16"},
        BadInputCase{PLAN_HEAD R"("gradient_reduce_dtype": "fp8",
                     "stages": [{"layers": [0, 14], "devices": [0]}]})",
                     "field 'gradient_reduce_dtype': expected one of fp32, fp16, bf16"},
        BadInputCase{PLAN_HEAD R"("stages": [{"layers": [0, 14], "devices": [0]}],
                     "replicas": [{"micro_batch_size": 1, "micro_batches": 2, "seq_len": 8,
                                   "stages": [{"layers": [0, 14], "devices": [1]}]}]})",
                     "unknown field 'seq_len'"},
        BadInputCase{PLAN_HEAD R"("stages": [{"layers": [0, 14], "devices": [0]}],
                     "replicas": [{"micro_batches": 2,
                                   "stages": [{"layers": [0, 14], "devices": [1]}]}]})",
                     "replicas[0]"},
        BadInputCase{PLAN_HEAD R"("runtime": "colossalai",
                     "stages": [{"layers": [0, 14], "devices": [0]}]})",
                     "field 'runtime': expected one of hyperpipe, megatron, deepspeed, torchtitan"},
        BadInputCase{
            PLAN_HEAD R"("runtime": "deepspeed", "schedule": "zb-h1",
                     "stages": [{"layers": [0, 7], "devices": [0]}, {"layers": [7, 14], "devices": [1]}]})",
            "expected a plan DeepSpeed can run (schedule: DeepSpeed runs 1f1b, not zb-h1)"}));

struct MisfitCase {
  const char* stages;
  const char* expected_fragment;
  friend void PrintTo(const MisfitCase& c, std::ostream* out) { *out << c.expected_fragment; }
};

class PlanDoesNotFit : public ::testing::TestWithParam<MisfitCase> {};

TEST_P(PlanDoesNotFit, SaysWhat) {
  const std::string text = std::string(R"({"format": "hyperpipe.plan/1", "model": "gpt2",
      "cluster": "a100-v100-t4", "micro_batch_size": 2, "micro_batches": 4, "stages": )") +
                           GetParam().stages + "}";
  const Plan plan = read_plan(YamlField::load_string(text, "misfit.json"));
  const std::string message = error_message<InputError>([&] {
    check_plan(plan, model::load_model("gpt2"), cluster::load_cluster("a100-v100-t4"),
               "misfit.json");
  });
  EXPECT_NE(message.find("misfit.json"), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().expected_fragment), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PlanDoesNotFit,
    ::testing::Values(
        MisfitCase{R"([{"layers": [0, 10], "devices": [0]}])",
                   "the stages cover layers [0, 10), but model gpt2-124m has 14 layers"},
        MisfitCase{R"([{"layers": [0, 7], "devices": [0]}, {"layers": [7, 14], "devices": [16]}])",
                   "device 16 does not exist: cluster a100-v100-t4 has devices 0-15"},
        MisfitCase{R"([{"layers": [0, 7], "devices": [0]}, {"layers": [7, 14], "devices": [0]}])",
                   "device 0 is already used by stages[0]"},
        MisfitCase{R"([{"layers": [0, 14], "devices": [3, 4]}])",
                   "a stage runs on one GPU type, but device 3 is a A100-40GB and device 4 a "
                   "V100-16GB"},
        MisfitCase{R"([{"layers": [0, 14], "devices": [4, 5, 6, 7, 8], "dp": 1, "tp": 5}])",
                   "tp = 5 must divide the model's 12 attention heads"},
        MisfitCase{R"([{"layers": [0, 14], "devices": [8, 9, 10, 11, 12, 13, 14, 15], "dp": 2,
                     "tp": 4}])",
                   "a stage runs on one GPU type"},
        MisfitCase{R"([{"layers": [0, 14], "devices": [4, 5, 6, 7]}])",
                   "dp = 4 needs a micro-batch of at least 4 sequences, the plan has 2"},
        MisfitCase{R"([{"layers": [0, 14], "devices": [0]}], "replicas": [{"micro_batch_size": 1,
                     "micro_batches": 4, "stages": [{"layers": [0, 7], "devices": [1]},
                                                    {"layers": [7, 14], "devices": [0]}]}])",
                   "replicas[0].stages[1]: device 0 is already used by stages[0]"},
        MisfitCase{R"([{"layers": [0, 14], "devices": [0]}], "replicas": [{"micro_batch_size": 1,
                     "micro_batches": 4, "stages": [{"layers": [0, 7], "devices": [1]}]}])",
                   "replicas[0].stages: the stages cover layers [0, 7)"}));

// Tensor-parallel shards hold equal parts of the heads, key/value heads and MLP columns.
// Sequence parallelism cuts each sequence into tp equal parts: 18 tokens over tp 4 do
// not cut, 16 do; the field round-trips.
TEST(Plan, SequenceParallelismNeedsSequencesThatSplitOverTp) {
  const model::Model model(model::read_model_yaml(YamlField::load_string(
      "name: m\nflavour: llama\nhidden: 64\nlayers: 2\nheads: 8\nvocab: 256\nseq_len: 64\n",
      "m.yaml")));
  const auto plan_of = [](int seq) {
    return read_plan(YamlField::load_string(
        fmt::format(R"({{"format": "hyperpipe.plan/1", "model": "m", "cluster": "a100x8",
            "sequence_parallel": true, "seq_len": {}, "micro_batch_size": 1,
            "micro_batches": 2, "stages": [{{"layers": [0, 4], "devices": [0, 1, 2, 3],
            "tp": 4}}]}})",
                    seq),
        "sp.json"));
  };
  const auto cluster = cluster::load_cluster("a100x8");
  const std::string message =
      error_message<InputError>([&] { check_plan(plan_of(18), model, cluster, "sp.json"); });
  EXPECT_NE(message.find("sp.json: sequence_parallel: sequences that split evenly over every "
                         "stage's tp: 18 tokens over tp = 4"),
            std::string::npos)
      << message;
  const Plan fits = plan_of(16);
  EXPECT_NO_THROW(check_plan(fits, model, cluster, "sp.json"));
  EXPECT_TRUE(fits.sequence_parallel);
  EXPECT_EQ(to_json(fits)["sequence_parallel"], true);
}

TEST(Plan, TensorParallelismMustSplitEveryHeadAndColumnEvenly) {
  const auto check = [](const std::string& shape) {
    const model::Model model(model::read_model_yaml(YamlField::load_string(
        "name: m\nflavour: llama\nhidden: 64\nlayers: 2\nheads: 8\nvocab: 256\nseq_len: 16\n" +
            shape,
        "m.yaml")));
    const Plan plan = read_plan(YamlField::load_string(
        R"({"format": "hyperpipe.plan/1", "model": "m", "cluster": "a100x8",
            "micro_batch_size": 1, "micro_batches": 2,
            "stages": [{"layers": [0, 4], "devices": [0, 1, 2, 3], "tp": 4}]})",
        "tp.json"));
    check_plan(plan, model, cluster::load_cluster("a100x8"), "tp.json");
  };
  const auto misfit = [&](const std::string& shape) {
    return error_message<InputError>([&] { check(shape); });
  };
  EXPECT_NE(misfit("kv_heads: 2\nffn_hidden: 96\n")
                .find("tp = 4 must divide the model's 2 key/value heads (kv_heads)"),
            std::string::npos);
  EXPECT_NE(misfit("kv_heads: 4\nffn_hidden: 90\n")
                .find("tp = 4 must divide the model's 90 MLP columns (ffn_hidden)"),
            std::string::npos);
  EXPECT_NO_THROW(check("kv_heads: 4\nffn_hidden: 96\n"));
  model::TransformerConfig config;
  config.heads = 8;
  config.kv_heads = 4;
  config.ffn_hidden = 96;
  EXPECT_EQ(config.tensor_parallel_divisor(), 4);  // what the planner's tp must divide
}

TEST(Plan, ScheduleMustFitInMemory) {
  // 400 stages × 65,536 micro-batches would be some 80 million ops.
  std::string stages;
  for (int s = 0; s < 400; ++s) {
    stages += (s ? "," : "") + std::string(R"({"layers": [)") + std::to_string(s) + ", " +
              std::to_string(s + 1) + R"(], "devices": [0]})";
  }
  const std::string text = R"({"format": "hyperpipe.plan/1", "model": "m", "cluster": "c",
      "micro_batch_size": 1, "micro_batches": 65536, "stages": [)" +
                           stages + "]}";
  const std::string message =
      error_message<InputError>([&] { read_plan(YamlField::load_string(text, "huge.json")); });
  EXPECT_NE(message.find("field 'micro_batches': expected at most 55924 micro-batches with 400 "
                         "stages"),
            std::string::npos)
      << message;
}

TEST(Plan, TensorParallelAcrossNodesIsRefused) {
  const Plan plan = read_plan(YamlField::load_string(R"({"format": "hyperpipe.plan/1",
      "model": "gpt2", "cluster": "h100-a100-islands", "micro_batch_size": 1, "micro_batches": 4,
      "stages": [{"layers": [0, 14], "devices": [6, 7, 8, 9], "dp": 1, "tp": 4}]})",
                                                     "tp.json"));
  const std::string message = error_message<InputError>([&] {
    check_plan(plan, model::load_model("gpt2"), cluster::load_cluster("h100-a100-islands"),
               "tp.json");
  });
  EXPECT_NE(message.find("tensor parallelism stays inside a node"), std::string::npos) << message;
}

}  // namespace
}  // namespace hyperpipe::plan
