// The `hyperpipe` binary as a user runs it: output, JSON, exit codes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli_run.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/sim/plan_simulation.h"
#include "hyperpipe/trace/timeline_json.h"
#include "test_files.h"

namespace hyperpipe::cli {
namespace {

using hyperpipe::testing::write_temp_file;
using testing::Result;
using testing::run;
using testing::slurp;

using testing::kExamples;

TEST(Cli, ModelsListsTheCatalogue) {
  const Result r = run("models");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"gpt2-124m", "gpt3-175b", "opt-350m", "llama2-70b", "llama3-8b"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  const Result json = run("models --format JSON");  // any letter case
  ASSERT_EQ(json.exit_code, 0);
  const auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["models"].size(), 18u);
}

// `hyperpipe help [COMMAND]` is --help; the program's options go before or after the
// command; built-in clusters are named without regard to case, as models are.
TEST(Cli, HelpGlobalOptionsAnywhereAndNamesWithoutCase) {
  const Result help = run("help plan");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, run("plan --help").out);
  EXPECT_NE(help.out.find("--global-batch"), std::string::npos) << help.out;
  const Result all = run("help");
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_NE(all.out.find("simulate"), std::string::npos) << all.out;
  const Result before = run("--format json --log-level warn models");
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.out, run("models --format json").out);
  EXPECT_EQ(run("models --log-level warn --format=json").out, before.out);
  EXPECT_EQ(run("--format=json models").out, before.out);
  const Result upper = run("describe --cluster A100X8 --format json");
  ASSERT_EQ(upper.exit_code, 0) << upper.err;
  EXPECT_EQ(upper.out, run("describe --cluster a100x8 --format json").out);
}

// CPU stand-ins have no GPU peak: no MFU is shown for them (JSON: null), only for GPUs.
TEST(Cli, NoMfuForCpuStandIns) {
  const std::string tiny = "plan --model " + kExamples + "/models/tiny-gpt.yaml --global-batch 16 ";
  const Result text = run(tiny + "--cluster cpu-emulated");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find(", MFU "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("CPU stand-ins (no MFU: their peak is this host's)"), std::string::npos)
      << text.out;
  const auto doc = nlohmann::json::parse(run(tiny + "--cluster cpu-emulated --format json").out);
  EXPECT_TRUE(doc["plan"]["predicted"]["mfu"].is_null());
  EXPECT_TRUE(doc["report"]["mfu"].is_null());
  EXPECT_TRUE(doc["report"]["stand_ins"]);
  const auto gpus = nlohmann::json::parse(run(tiny + "--cluster a100x8 --format json").out);
  EXPECT_GT(gpus["plan"]["predicted"]["mfu"].get<double>(), 0);
  EXPECT_FALSE(gpus["report"]["stand_ins"]);
}

TEST(Cli, DevicesListsGpuTypes) {
  const Result r = run("devices --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto parsed = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& type : parsed["gpu_types"]) {
    if (type["name"] == "H100-SXM") {
      found = true;
      EXPECT_DOUBLE_EQ(type["peak_flops"]["bf16"].get<double>(), 989.4e12);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(run("devices").exit_code, 0);
}

TEST(Cli, DescribeDefaultsRunAndPrintTables) {
  const Result r = run("describe");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Model gpt3-2.7b"), std::string::npos);
  EXPECT_NE(r.out.find("Cluster a100-v100-t4: 16 GPUs"), std::string::npos);
  EXPECT_NE(r.out.find("T4"), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(Cli, DescribeJsonCarriesTotalsAndPerTypeCosts) {
  const Result r = run("describe --model llama2-7b --cluster " + kExamples +
                       "/clusters/h100-a100-islands.yaml --micro-batch 2 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["format"], "hyperpipe.describe/1");
  EXPECT_EQ(report["total_params"].get<int64_t>(), 6'738'415'616);
  EXPECT_EQ(report["model"]["layers"].size(), 34u);
  EXPECT_EQ(report["cluster"]["devices"].get<int>(), 32);
  EXPECT_EQ(report["cluster"]["nodes"][1]["devices"][0].get<int>(), 8);  // ids used by plans
  ASSERT_EQ(report["cost"].size(), 2u);
  // An H100 is faster than an A100 on every layer.
  const auto& h100 = report["cost"][0];
  const auto& a100 = report["cost"][1];
  EXPECT_EQ(h100["gpu_type"], "H100-SXM");
  for (size_t i = 0; i < 34; ++i) {
    EXPECT_LT(h100["layers"][i]["forward_s"].get<double>(),
              a100["layers"][i]["forward_s"].get<double>());
  }
}

TEST(Cli, DescribeUsesProfilesWhenGiven) {
  const std::string profiles = write_temp_file("cli-profiles.json", R"({
  "format": "hyperpipe.profiles/1",
  "entries": [{"model": "gpt3-2.7b", "layer": "decoder_block", "device": "T4", "dtype": "fp16",
               "tp": 1, "seq_len": 2048, "micro_batch": 1, "forward_ms": 99,
               "backward_input_ms": 98, "backward_weight_ms": 97}]})");
  const Result r = run("describe --profiles " + profiles + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const auto& t4 = report["cost"][2];
  ASSERT_EQ(t4["gpu_type"], "T4");
  EXPECT_DOUBLE_EQ(t4["layers"][1]["forward_s"].get<double>(), 0.099);
  EXPECT_EQ(t4["layers"][1]["source"], "profile");
  EXPECT_EQ(t4["layers"][0]["source"], "estimate");
  EXPECT_EQ(r.err.find("none of"), std::string::npos) << r.err;
  // The same file for another model: every layer estimated, and the user is told.
  const Result other = run("describe --model gpt2 --profiles " + profiles);
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.err.find(profiles + " holds profiles of gpt3-2.7b but none of gpt2-124m"),
            std::string::npos)
      << other.err;
}

TEST(Cli, TensorParallelStaysInsideANode) {
  // The T4 node has 4 GPUs: tp 8 is cut to 4 there, kept at 8 nowhere else but the V100s.
  const Result r = run("describe --tp 8 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["cost"][0]["tp"], 4);  // 4 × A100
  EXPECT_EQ(report["cost"][1]["tp"], 8);  // 8 × V100
  EXPECT_EQ(report["cost"][2]["tp"], 4);  // 4 × T4
  EXPECT_GT(report["cost"][1]["layers"][1]["tp_communication_s"].get<double>(), 0);
}

// The op-level estimate: each GPU type of the cluster and each layer kind, its passes the
// sums of its ops, the tp cut to the node as the cost table's.
TEST(Cli, DescribeEstimateShowsEachLayerOpByOp) {
  const Result r = run("describe --tp 8 --estimate --layer all --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const auto& estimates = report["op_estimate"];
  ASSERT_EQ(estimates.size(), 3u * 3u);  // A100, V100, T4 × embedding, block, head
  for (const auto& layer : estimates) {
    double forward = 0, b = 0, w = 0;
    for (const auto& op : layer["ops"]) {
      const double seconds = op["seconds"].get<double>();
      (op["pass"] == "forward" ? forward : op["pass"] == "backward_input" ? b : w) += seconds;
      EXPECT_GT(seconds, 0) << op.dump();
    }
    EXPECT_NEAR(forward, layer["forward_s"].get<double>(), 1e-12);
    EXPECT_NEAR(b, layer["backward_input_s"].get<double>(), 1e-12);
    EXPECT_NEAR(w, layer["backward_weight_s"].get<double>(), 1e-12);
  }
  for (size_t type = 0; type < 3; ++type) {
    EXPECT_EQ(estimates[3 * type]["tp"], report["cost"][type]["tp"]);
  }
  // Any catalogue type on request, in a table.
  const Result table = run("describe --estimate --gpu H100-SXM");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("Op-level estimate: block 0 on H100-SXM at tp 1"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("attention scores"), std::string::npos);
}

// Plan and simulate estimate op by op by default; the roofline prices the same plan otherwise.
// Both say which stages' layer times were estimated.
TEST(Cli, PlanAndSimulateWithTheOpLevelEstimator) {
  const auto iteration = [](const std::string& args) {
    const Result r = run("simulate --plan " + kExamples + "/plans/gpt3-2.7b-4stage.json " + args +
                         " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["iteration_time_s"].get<double>();
  };
  EXPECT_NE(iteration("--estimator roofline"), iteration(""));
  EXPECT_EQ(iteration("--estimator ops"), iteration(""));
  const Result planned = run("plan --global-batch 64 --format json");
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const auto report = nlohmann::json::parse(planned.out)["report"];
  EXPECT_EQ(report["estimator"], "ops");
  for (const auto& stage : report["stages"]) EXPECT_EQ(stage["source"], "estimate");
  const Result table = run("plan --global-batch 64");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("Layer times: estimated op by op on every stage, no profile"),
            std::string::npos)
      << table.out;
  const auto described = [](const std::string& args) {
    const Result r = run("describe --format json " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto ops = described("");
  const auto by_roofline = described("--estimator roofline");
  EXPECT_EQ(ops["cost_options"]["estimator"], "ops");
  EXPECT_EQ(by_roofline["cost_options"]["estimator"], "roofline");
  EXPECT_NE(ops["cost"][0]["layers"][1]["forward_s"],
            by_roofline["cost"][0]["layers"][1]["forward_s"]);
  const Result roofline =
      run("simulate --plan " + kExamples + "/plans/gpt3-2.7b-4stage.json --estimator roofline");
  ASSERT_EQ(roofline.exit_code, 0) << roofline.err;
  EXPECT_NE(roofline.out.find("Layer times: estimated by the roofline on every stage"),
            std::string::npos)
      << roofline.out;
}

TEST(Cli, DescribeActivationTransferIsPerShardUnderTensorParallelism) {
  // As the simulator and the runtime move it: each of tp shards sends its 1/tp part.
  const auto transfers = [](const std::string& args) {
    const Result r = run("describe --format json " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["activation_transfer"];
  };
  const auto whole = transfers("");
  const auto split = transfers("--tp 2");
  ASSERT_EQ(whole.size(), split.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_DOUBLE_EQ(split[i]["bytes"].get<double>() * 2, whole[i]["bytes"].get<double>());
    EXPECT_LT(split[i]["seconds"].get<double>(), whole[i]["seconds"].get<double>());
  }
}

TEST(Cli, ScheduleOrdersOneStageALine) {
  const Result r = run("schedule --kind 1f1b --stages 3 --micro-batches 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("F0 F1 F2 BW0 F3 BW1 BW2 BW3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("F0 BW0 F1 BW1 F2 BW2 F3 BW3"), std::string::npos) << r.out;
  const Result json =
      run("schedule --kind zb-h1 --stages 2 --micro-batches 2 --comm --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["kind"], "zb-h1");
  EXPECT_EQ(parsed["per_rank"][1]["ops"][0]["op"], "RF");
  EXPECT_EQ(parsed["per_rank"][0]["peak_in_flight"], 2);
}

TEST(Cli, SimulateTheExamplePlanWritesTraceAndSvg) {
  const std::string trace = hyperpipe::testing::temp_path("trace.json");
  const std::string svg = hyperpipe::testing::temp_path("timeline.svg");
  const Result r = run("simulate --plan " + kExamples + "/plans/gpt3-2.7b-4stage.json --trace " +
                       trace + " --svg " + svg + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["format"], "hyperpipe.simulation/1");
  EXPECT_GT(report["iteration_time_s"].get<double>(), 0);
  ASSERT_EQ(report["stages"].size(), 4u);
  EXPECT_GT(report["stages"][3]["forward_s"].get<double>(), 0);
  EXPECT_GT(report["ranks"][0]["peak_memory_bytes"].get<double>(), 0);
  const auto chrome = nlohmann::json::parse(slurp(trace));
  EXPECT_GT(chrome["traceEvents"].size(), 4u * 32u);
  EXPECT_EQ(slurp(svg).rfind("<svg", 0), 0u);
}

// One layer numbering wherever a person reads it: tables print a stage's layers as the
// plan file stores them, [first, end) along the chain, and say so; JSON says so too.
TEST(Cli, TablesAndJsonPrintLayerRangesAsPlanFilesStoreThem) {
  const std::string plan = kExamples + "/plans/gpt3-2.7b-4stage.json";
  const auto stored = hyperpipe::plan::load_plan(plan);
  const Result table = run("simulate --plan " + plan);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (const auto& stage : stored.stages) {
    EXPECT_NE(table.out.find(fmt::format("[{}, {})", stage.first_layer, stage.end_layer)),
              std::string::npos)
        << table.out;
  }
  EXPECT_NE(table.out.find("Layers [first, end) of the chain: 0 the embedding, 1 to 32 the "
                           "blocks, 33 the head, as in plan files"),
            std::string::npos)
      << table.out;
  const auto json = nlohmann::json::parse(run("simulate --plan " + plan + " --format json").out);
  EXPECT_EQ(json["stages"][1]["layers"],
            nlohmann::json::array({stored.stages[1].first_layer, stored.stages[1].end_layer}));
  EXPECT_NE(json["layer_numbering"].get<std::string>().find("[first, end)"), std::string::npos);
  const Result described = run("describe --model " + kExamples + "/models/tiny-gpt.yaml");
  EXPECT_NE(described.out.find("block      [1, 7)"), std::string::npos) << described.out;
  const auto planned = nlohmann::json::parse(run("plan --global-batch 64 --format json").out);
  EXPECT_EQ(planned["report"]["layer_numbering"], json["layer_numbering"]);
}

TEST(Cli, SimulateTwoPipelinesSideBySide) {
  const Result r = run("simulate --plan " + kExamples + "/plans/gpt2-two-pipelines.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 pipelines summing their gradients (global batch 64"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("pipeline 1, stage 1: V100-16GB ×4 [8-11]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Replica sync"), std::string::npos) << r.out;
}

TEST(Cli, CompareLinesUpPredictedAndMeasuredGroupByGroup) {
  // Two device groups; the measured run has two processes in group 1 (dp 2): one row each
  // group, from its first process.
  const std::string predicted = write_temp_file("predicted.json", R"({
    "format": "hyperpipe.timeline/1", "title": "p", "tracks": [
      {"name": "stage 0", "devices": [0], "memory": [], "communication": [],
       "compute": [["F", 0, 0, 0, 0.0, 1.0], ["BW", 0, 0, 0, 2.0, 4.0]]},
      {"name": "stage 1", "devices": [1, 2], "memory": [], "communication": [],
       "compute": [["F", 1, 0, 0, 1.0, 2.0], ["BW", 1, 0, 0, 2.0, 3.0]]}]})");
  const std::string measured = write_temp_file("measured.json", R"({
    "format": "hyperpipe.timeline/1", "title": "m", "tracks": [
      {"name": "rank 0", "devices": [0], "memory": [],
       "communication": [["tied embedding", -1, -1, 0, 4.6, 5.0]],
       "compute": [["F", 0, 0, 0, 0.0, 1.5], ["BW", 0, 0, 0, 2.5, 4.6]]},
      {"name": "rank 1", "devices": [1], "memory": [],
       "communication": [["wait RF", -1, 0, 0, 0.0, 1.5], ["allreduce", 1, -1, 0, 4.0, 4.5],
                         ["allreduce", 1, -1, 1, 4.1, 4.5]],
       "compute": [["F", 1, 0, 0, 1.5, 2.5]]},
      {"name": "rank 2", "devices": [2], "memory": [], "communication": [],
       "compute": [["F", 1, 0, 0, 1.5, 2.0]]}]})");
  const std::string svg = hyperpipe::testing::temp_path("both.svg");
  const std::string both_trace = hyperpipe::testing::temp_path("both-trace.json");
  const Result r = run("compare --predicted " + predicted + " --measured " + measured + " --svg " +
                       svg + " --trace " + both_trace + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(report["predicted_iteration_s"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(report["measured_iteration_s"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(report["iteration_error"].get<double>(), 4.0 / 5.0 - 1);
  ASSERT_EQ(report["groups"].size(), 2u);
  EXPECT_DOUBLE_EQ(report["groups"][0]["predicted_compute_s"].get<double>(), 3.0);
  EXPECT_NEAR(report["groups"][0]["measured_compute_s"].get<double>(), 3.6, 1e-12);
  // The tied embedding's sum: one of the sums, shown on its own too.
  EXPECT_NEAR(report["groups"][0]["measured_tied_embedding_s"].get<double>(), 0.4, 1e-12);
  EXPECT_NEAR(report["groups"][0]["measured_sync_s"].get<double>(), 0.4, 1e-12);
  // Group 1's first process: its F only (the sum across ranks is waiting, not compute).
  EXPECT_DOUBLE_EQ(report["groups"][1]["measured_compute_s"].get<double>(), 1.0);
  // Two buckets summed at once count their time once.
  EXPECT_DOUBLE_EQ(report["groups"][1]["measured_sync_s"].get<double>(), 0.5);
  const Result table = run("compare --predicted " + predicted + " --measured " + measured);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("of them tied embedding, predicted"), std::string::npos) << table.out;
  // The compared step's iteration, named so beside a run report's median of its steps.
  EXPECT_NE(table.out.find("This step's iteration: predicted 4.00 s, measured 5.00 s, error "
                           "-20.0%"),
            std::string::npos)
      << table.out;
  // A run of another plan (a device the prediction has no group for) is refused.
  const std::string other = write_temp_file("other-measured.json", R"({
    "format": "hyperpipe.timeline/1", "title": "m", "tracks": [
      {"name": "rank 0", "devices": [7], "memory": [], "communication": [],
       "compute": [["F", 0, 0, 0, 0.0, 1.5]]}]})");
  const Result refused = run("compare --predicted " + predicted + " --measured " + other);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("tracks: expected a run of the plan " + predicted +
                             " predicts; its track 'rank 0' runs on devices"),
            std::string::npos)
      << refused.err;
  EXPECT_DOUBLE_EQ(report["groups"][1]["predicted_compute_s"].get<double>(), 2.0);
  const std::string chart = slurp(svg);
  // Sections, not prefixes: each measured process named after its predicted group.
  EXPECT_NE(chart.find(">predicted: p</text>"), std::string::npos) << chart;
  EXPECT_NE(chart.find(">measured: m</text>"), std::string::npos);
  EXPECT_NE(chart.find("class=\"divider\""), std::string::npos);
  EXPECT_NE(chart.find(">stage 1 · rank 2</text>"), std::string::npos);
  EXPECT_NE(chart.find("iteration predicted 4.00 s, measured 5.00 s (-20.0%)"), std::string::npos);
  // One trace, two processes, the measured threads named as the chart names them.
  const auto trace = nlohmann::json::parse(slurp(both_trace));
  std::set<std::string> names;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M") names.insert(event["args"].value("name", ""));
  }
  EXPECT_TRUE(names.count("predicted: p")) << trace.dump();
  EXPECT_TRUE(names.count("measured: m"));
  EXPECT_TRUE(names.count("stage 1 · rank 2"));
  const Result missing = run("compare --predicted /nonexistent.json --measured " + measured);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent.json"), std::string::npos);
}

// Given the plan, compare also replays it with the measured compute: the prediction read
// as if measured gives the prediction back, and ops that ran longer give a longer one.
// A run's timelines end their titles "(measured)" and "(predicted)": the comparison says
// each once, in its heading.
TEST(Cli, CompareSaysMeasuredAndPredictedOnce) {
  const std::string predicted = write_temp_file("titled-predicted.json", R"J({
    "format": "hyperpipe.timeline/1", "title": "tiny on c (predicted)", "tracks": [
      {"name": "stage 0", "devices": [0], "memory": [], "communication": [],
       "compute": [["F", 0, 0, 0, 0.0, 1.0]]}]})J");
  const std::string measured = write_temp_file("titled-measured.json", R"J({
    "format": "hyperpipe.timeline/1", "title": "tiny on c: step 3 (measured)", "tracks": [
      {"name": "rank 0", "devices": [0], "memory": [], "communication": [],
       "compute": [["F", 0, 0, 0, 0.0, 1.2]]}]})J");
  const std::string svg = hyperpipe::testing::temp_path("titled.svg");
  const Result r =
      run("compare --predicted " + predicted + " --measured " + measured + " --svg " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string chart = slurp(svg);
  EXPECT_NE(chart.find(">predicted: tiny on c</text>"), std::string::npos) << chart;
  EXPECT_NE(chart.find(">measured: tiny on c: step 3</text>"), std::string::npos) << chart;
  EXPECT_NE(chart.find(">tiny on c: step 3</text>"), std::string::npos) << chart;  // the title
  EXPECT_EQ(chart.find("(measured)"), std::string::npos) << chart;
  EXPECT_EQ(chart.find("(predicted)"), std::string::npos) << chart;
}

TEST(Cli, CompareReplaysThePlanWithTheMeasuredCompute) {
  const std::string plan_path = kExamples + "/plans/gpt3-2.7b-4stage.json";
  const auto plan = hyperpipe::plan::load_plan(plan_path);
  const auto model =
      hyperpipe::model::load_model(hyperpipe::plan::resolve_reference(plan_path, plan.model));
  const auto cluster =
      hyperpipe::cluster::load_cluster(hyperpipe::plan::resolve_reference(plan_path, plan.cluster));
  const hyperpipe::cost::CostModel costs(model, cluster);
  const auto simulation = hyperpipe::sim::simulate_plan(costs, plan);
  auto timeline = simulation.output.timeline;
  const std::string predicted =
      write_temp_file("replay-predicted.json", hyperpipe::trace::timeline_to_json(timeline).dump());
  const Result same = run("compare --predicted " + predicted + " --measured " + predicted +
                          " --plan " + plan_path + " --format json");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const double iteration = simulation.output.iteration_time;
  EXPECT_NEAR(nlohmann::json::parse(same.out)["replayed_iteration_s"].get<double>(), iteration,
              1e-9 * iteration);

  for (auto& track : timeline.tracks) {
    for (auto& op : track.compute) op.end += 0.5 * (op.end - op.start);
  }
  const std::string slower =
      write_temp_file("replay-slower.json", hyperpipe::trace::timeline_to_json(timeline).dump());
  const Result longer =
      run("compare --predicted " + predicted + " --measured " + slower + " --plan " + plan_path);
  ASSERT_EQ(longer.exit_code, 0) << longer.err;
  EXPECT_NE(longer.out.find("Replayed with the measured compute"), std::string::npos);
  const Result longer_json = run("compare --predicted " + predicted + " --measured " + slower +
                                 " --plan " + plan_path + " --format json");
  // Compute is most of this plan's iteration: half as long again in every op, it grows by
  // more than a third.
  EXPECT_GT(nlohmann::json::parse(longer_json.out)["replayed_iteration_s"].get<double>(),
            iteration * 4 / 3);

  // A measured run of another plan's devices: nothing to replay with.
  const std::string other = write_temp_file("replay-other.json", R"({
    "format": "hyperpipe.timeline/1", "title": "m", "tracks": [
      {"name": "rank 0", "devices": [99], "memory": [], "communication": [],
       "compute": [["F", 0, 0, 0, 0.0, 1.0]]}]})");
  const Result none =
      run("compare --predicted " + predicted + " --measured " + other + " --plan " + plan_path);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("replay-other.json"), std::string::npos) << none.err;
}

TEST(Cli, SimulateAsABlockingFrameworkWouldRunThePlan) {
  const std::string plan = kExamples + "/plans/tiny-gpt-3stage.json";
  const auto iteration = [&](const std::string& p2p) {
    const Result r = run("simulate --plan " + plan + " --format json --p2p " + p2p);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["iteration_time_s"].get<double>();
  };
  // The stages wait out their sends and the receivers' posts: longer than ours.
  EXPECT_GT(iteration("blocking"), iteration("async"));
  // Interleaved 1F1B's neighbours send to each other in orders blocking pairs deadlock on.
  const std::string interleaved =
      std::string(HYPERPIPE_TEST_DATA) + "/interleaved-blocking-plan.json";
  const Result stuck = run("simulate --plan " + interleaved + " --p2p blocking");
  EXPECT_EQ(stuck.exit_code, 2);
  EXPECT_NE(stuck.err.find("a schedule whose exchanges can block without deadlock"),
            std::string::npos)
      << stuck.err;
  EXPECT_EQ(run("simulate --plan " + interleaved + " --p2p async").exit_code, 0);
  EXPECT_EQ(run("simulate --plan " + plan + " --p2p eager").exit_code, 2);  // CLI11's check
}

TEST(Cli, SimulateAndPlanForAnotherFramework) {
  const std::string plan = kExamples + "/plans/tiny-gpt-3stage.json";
  const auto iteration = [&](const std::string& flags) {
    const Result r = run("simulate --plan " + plan + " --format json " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["iteration_time_s"].get<double>();
  };
  // DeepSpeed's engine blocks on its exchanges, torchtitan's posts them as ours does; on
  // these CPU stand-ins its Python runtime's host time adds to each action, on GPUs not.
  EXPECT_DOUBLE_EQ(iteration("--runtime deepspeed"), iteration("--p2p blocking"));
  EXPECT_GT(iteration("--runtime torchtitan"), iteration(""));
  EXPECT_DOUBLE_EQ(iteration("--runtime torchtitan --cluster a100x8"),
                   iteration("--cluster a100x8"));
  const Result text = run("simulate --plan " + plan + " --runtime megatron");
  EXPECT_NE(text.out.find("As Megatron-LM (core_r0.13) runs it: blocking"), std::string::npos)
      << text.out;
  // An explicit --p2p wins, and the report says which mode ran.
  const Result asked = run("simulate --plan " + plan + " --runtime megatron --p2p async");
  EXPECT_NE(asked.out.find("runs it: asynchronous"), std::string::npos) << asked.out;
  const Result json = run("simulate --plan " + plan + " --runtime deepspeed --format json");
  EXPECT_EQ(nlohmann::json::parse(json.out)["p2p"], "blocking");
  // The 4-stage example recomputes selectively on one stage and fully on the others.
  const Result refused =
      run("simulate --plan " + kExamples + "/plans/gpt3-2.7b-4stage.json --runtime megatron");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("stages[1].recompute: Megatron-LM recomputes alike on every stage"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(run("simulate --plan " + plan + " --runtime colossalai").exit_code, 2);
  // Planned for DeepSpeed: its only schedule, its name in the plan, and said so.
  const std::string out = hyperpipe::testing::temp_path("deepspeed-plan.json");
  const Result planned = run("plan --model " + kExamples +
                             "/models/tiny-gpt.yaml --cluster cpu-emulated --global-batch 16 "
                             "--runtime deepspeed --out " +
                             out);
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_NE(planned.out.find("To run with DeepSpeed (0.16), costed as it runs: blocking"),
            std::string::npos)
      << planned.out;
  const auto doc = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(doc["runtime"], "deepspeed");
  // Sharded optimizer state where a stage has dp > 1 (DeepSpeed's ZeRO stage 1).
  bool data_parallel = false;
  for (const auto& stage : doc["stages"]) data_parallel = data_parallel || stage["dp"] > 1;
  EXPECT_EQ(doc.value("shard_optimizer", false), data_parallel);
  EXPECT_EQ(doc["schedule"]["kind"], "1f1b");
  const Result none = run("plan --model " + kExamples +
                          "/models/tiny-gpt.yaml --cluster cpu-emulated --global-batch 16 "
                          "--runtime megatron --schedule gpipe");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("a schedule Megatron-LM runs: 1f1b, interleaved"), std::string::npos)
      << none.err;
}

TEST(Cli, ExportWritesEachFrameworksFilesOrNothing) {
  const std::string plan = kExamples + "/plans/tiny-gpt-3stage.json";
  const std::string folder = hyperpipe::testing::temp_path("exported-megatron");
  std::filesystem::remove_all(folder);
  const Result r = run("export --plan " + plan + " --to megatron --out " + folder);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(folder + "/megatron-args.sh").find("--pipeline-model-parallel-layout"),
            std::string::npos);
  EXPECT_EQ(slurp(folder + "/rankfile").rfind("rank 0=", 0), 0u);
  EXPECT_NE(r.out.find("exported for Megatron-LM"), std::string::npos) << r.out;
  // For scripts: what was written where, each file's size as it is on disk.
  const Result json =
      run("export --plan " + plan + " --to megatron --out " + folder + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto summary = nlohmann::json::parse(json.out);
  EXPECT_EQ(summary["format"], "hyperpipe.export/1");
  EXPECT_EQ(summary["framework"], "Megatron-LM");
  EXPECT_EQ(summary["costed_for"], "hyperpipe");
  ASSERT_FALSE(summary["files"].empty());
  for (const auto& file : summary["files"]) {
    EXPECT_EQ(file["bytes"].get<uint64_t>(),
              std::filesystem::file_size(file["path"].get<std::string>()))
        << file;
  }
  // A plan DeepSpeed cannot express: exit 2, the reason, and no folder.
  const std::string refused_folder = hyperpipe::testing::temp_path("exported-refused");
  std::filesystem::remove_all(refused_folder);
  const Result refused = run("export --plan " + kExamples +
                             "/plans/gpt3-2.7b-4stage.json --to deepspeed --out " + refused_folder);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("a plan DeepSpeed can run"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(refused_folder));
  EXPECT_EQ(run("export --plan " + plan + " --to colossalai --out " + folder).exit_code, 2);
}

// HyperPipe's runtime all-reduces the gradients whole and gathers the weights after a
// sharded step: the planner shards where that makes the plan faster. GPT-3 2.7B over
// eight A100s in pure data parallelism: its whole optimizer state leaves room for
// micro-batches of 8; sharded, of 16, and the iteration is shorter.
TEST(Cli, PlannerShardsTheOptimizerWhereMemoryIsShort) {
  const auto planned = [&](const std::string& sharding) {
    const Result r =
        run("plan --model gpt3-2.7b --cluster a100x8 --global-batch 64 --max-stages 1 --max-tp 1 "
            "--format json --shard-optimizer " +
            sharding);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["plan"];
  };
  const auto whole = planned("off");
  const auto chosen = planned("auto");
  EXPECT_FALSE(whole.value("shard_optimizer", false));
  EXPECT_TRUE(chosen.value("shard_optimizer", false));
  EXPECT_GT(chosen["micro_batch_size"], whole["micro_batch_size"]);
  EXPECT_LT(chosen["predicted"]["iteration_time_s"].get<double>(),
            whole["predicted"]["iteration_time_s"].get<double>());
  EXPECT_EQ(planned("on"), chosen);
  // A small model on the default example cluster has room: auto keeps the whole state.
  const Result roomy = run("plan --model gpt2 --global-batch 64 --format json");
  ASSERT_EQ(roomy.exit_code, 0) << roomy.err;
  EXPECT_FALSE(nlohmann::json::parse(roomy.out)["plan"].value("shard_optimizer", false));
  EXPECT_EQ(run("plan --global-batch 64 --shard-optimizer sometimes").exit_code, 2);
}

#ifdef HYPERPIPE_WORKER_BINARY
TEST(Cli, ProfileLinksNeedsALaunchersProcesses) {
  // Alone, `profile --links` would measure nothing across hosts: it says how to start it.
  const Result r = run("profile --links --cluster lab-two-hosts --out " +
                       hyperpipe::testing::temp_path("links.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("a launcher's processes, one per device of the cluster"), std::string::npos)
      << r.err;
  EXPECT_EQ(run("profile --links --out x.json").exit_code, 2);  // no cluster
}

// Profiling is long and per model: no default model, a message saying what to give.
TEST(Cli, ProfileAsksForTheModel) {
  const Result r = run("profile --out " + hyperpipe::testing::temp_path("no-model.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error: --model: expected the model to profile"), std::string::npos)
      << r.err;
}
#endif

TEST(Cli, SimulateOnAnotherCluster) {
  // The same plan on a cluster too small for it: the plan names device 15.
  const Result r =
      run("simulate --plan " + kExamples + "/plans/gpt3-2.7b-4stage.json --cluster a100x8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("device 8 does not exist: cluster a100x8 has devices 0-7"),
            std::string::npos)
      << r.err;
}

TEST(Cli, SimulateRefusesToWriteIntoAMissingDirectory) {
  const Result r = run("simulate --plan " + kExamples +
                       "/plans/gpt3-2.7b-4stage.json --svg /nonexistent/dir/t.svg");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/dir/t.svg: cannot write here"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Cli, PlanPrintsThePlanAndBaselinesAndWritesAPlanSimulateAccepts) {
  const std::string out = hyperpipe::testing::temp_path("planned.json");
  const Result r =
      run("plan --model gpt3-1.3b --cluster a100-v100-t4 --global-batch 32 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Plan for gpt3-1.3b on a100-v100-t4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uniform"), std::string::npos);
  EXPECT_NE(r.out.find("capability"), std::string::npos);
  const auto plan = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(plan["format"], "hyperpipe.plan/1");
  EXPECT_GT(plan["predicted"]["iteration_time_s"].get<double>(), 0);
  const Result simulated = run("simulate --plan " + out + " --format json");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  // The simulator reproduces the planner's prediction for the plan it wrote.
  EXPECT_NEAR(nlohmann::json::parse(simulated.out)["iteration_time_s"].get<double>(),
              plan["predicted"]["iteration_time_s"].get<double>(), 1e-9);
}

TEST(Cli, PlanFileFindsItsClusterFileFromAnotherDirectory) {
  const std::string out = hyperpipe::testing::temp_path("relative-plan.json");
  const Result r = run("plan --model gpt2 --cluster " + kExamples +
                       "/clusters/a100-v100-t4.yaml --global-batch 8 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plan = nlohmann::json::parse(slurp(out));
  EXPECT_NE(plan["cluster"].get<std::string>().front(), '/');  // relative to the plan
  EXPECT_EQ(plan["model"], "gpt2");                            // a catalogue name stays
  // Simulate it from another working directory.
  const std::string command =
      "cd / && " + std::string(HYPERPIPE_BINARY) + " simulate --plan " + out + " >/dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0);
}

TEST(Cli, PlanJsonAndExplain) {
  const Result r = run("plan --model gpt3-1.3b --global-batch 32 --explain --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["format"], "hyperpipe.planning/1");
  EXPECT_EQ(doc["per_order"].size(), 15u + 4u);  // 15 orders of 3 classes, 4 splits
  EXPECT_NE(doc["per_order"].back()["order"].get<std::string>().find(" ‖ "), std::string::npos);
  EXPECT_EQ(doc["baselines"].size(), 3u);
  ASSERT_EQ(doc["peers"].size(), 3u);  // sailor, metis, amp
  EXPECT_EQ(doc["peers"][0]["name"], "sailor");
  EXPECT_EQ(doc["peers"][2]["plan"]["format"], "hyperpipe.plan/1");
  EXPECT_GT(doc["search_seconds"].get<double>(), 0);
  // Where the time went, phase by phase: --explain adds the peers' spaces.
  std::vector<std::string> phases;
  int64_t simulations = 0;
  for (const auto& phase : doc["phases"]) {
    phases.push_back(phase["name"].get<std::string>());
    simulations += phase["simulations"].get<int64_t>();
    EXPECT_GE(phase["seconds"].get<double>(), 0) << phases.back();
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"search", "first pass", "schedules and refinement",
                                              "replicas", "baselines", "peers' spaces"}));
  EXPECT_GT(doc["phases"][1]["simulations"].get<int64_t>(), 0);
  EXPECT_GT(doc["phases"][1]["simulated_ops"].get<int64_t>(), 0);
  EXPECT_GT(simulations, doc["phases"][1]["simulations"].get<int64_t>());
  EXPECT_GT(doc["report"]["iteration_time_s"].get<double>(), 0);
  EXPECT_GT(doc["ideal_iteration_s"].get<double>(), 0);
  EXPECT_LE(doc["ideal_iteration_s"].get<double>(),
            doc["report"]["iteration_time_s"].get<double>());
}

// What a framework imposes, passed as flags, holds in the plan written (each restriction is
// judged against the exhaustive search in tests/planner/exhaustive_search_test.cc).
TEST(Cli, PlanHonoursTheRestrictionsAsked) {
  const Result r =
      run("plan --model gpt3-1.3b --global-batch 32 --schedule 1f1b,zb-h1 --max-stages 2 --same-dp "
          "--max-tp 2 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out)["plan"];
  EXPECT_FALSE(plan.contains("replicas"));
  const std::string kind = plan["schedule"]["kind"];
  EXPECT_TRUE(kind == "1f1b" || kind == "zb-h1") << kind;
  ASSERT_LE(plan["stages"].size(), 2u);
  for (const auto& stage : plan["stages"]) {
    EXPECT_EQ(stage["dp"], plan["stages"][0]["dp"]);
    EXPECT_LE(stage["tp"].get<int>(), 2);
  }
  const Result fixed =
      run("plan --model gpt3-1.3b --global-batch 32 --micro-batch 4 --format json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_EQ(nlohmann::json::parse(fixed.out)["plan"]["micro_batch_size"], 4);
}

TEST(Cli, PlanBaselineEmitsThatBaseline) {
  const Result r = run("plan --model gpt3-1.3b --global-batch 32 --baseline parameters");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(parameters)"), std::string::npos) << r.out;
}

// Bare `hyperpipe` shows what it can do.
TEST(Cli, BareHyperpipePrintsTheHelp) {
  const Result bare = run("");
  EXPECT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(bare.out, run("--help").out);
  EXPECT_NE(bare.out.find("Examples:"), std::string::npos) << bare.out;
  EXPECT_TRUE(bare.err.empty()) << bare.err;
}

TEST(Cli, HelpExitsZeroWithExamples) {
  const Result r = run("describe --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  EXPECT_EQ(run("--help").exit_code, 0);
}

struct BadInvocation {
  std::string args;
  std::string expected_in_stderr;
  friend void PrintTo(const BadInvocation& bad, std::ostream* out) { *out << bad.args; }
};

class CliBadInput : public ::testing::TestWithParam<BadInvocation> {};

TEST_P(CliBadInput, ExitsTwoWithAMessage) {
  const Result r = run(GetParam().args);
  EXPECT_TRUE(r.exited_normally);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(GetParam().expected_in_stderr), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // nothing half-printed
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliBadInput,
    ::testing::Values(
        BadInvocation{"frobnicate", "error: unknown command 'frobnicate' (`hyperpipe --help`"},
        // Mistyped names: the nearest known one suggested.
        BadInvocation{"plann --global-batch 8",
                      "error: unknown command 'plann'; did you mean 'plan'?"},
        BadInvocation{"plan --global-batch 8 --micro-batchs 2",
                      "error: unknown option --micro-batchs for plan; did you mean "
                      "'--micro-batch'? (`hyperpipe help plan` lists its options)"},
        BadInvocation{"describe --model llama-2-7b", "; did you mean 'llama2-7b'?"},
        BadInvocation{"describe --cluster a100-v100t4", "; did you mean 'a100-v100-t4'?"},
        BadInvocation{"help plann", "plann not in {models,"},
        BadInvocation{"describe --model gpt-17", "error: --model: 'gpt-17': not a catalogue model"},
        BadInvocation{"describe --cluster /nonexistent.yaml", "error: --cluster"},
        BadInvocation{"describe --model /dev/zero",
                      "/dev/zero: expected a YAML or JSON file (a regular file), got a device"},
        BadInvocation{"simulate --plan /tmp",
                      "/tmp: expected a YAML or JSON file (a file), got a "
                      "directory"},
        BadInvocation{"describe --micro-batch 0",
                      "--micro-batch: expected a positive integer up to 16777216, got '0'"},
        BadInvocation{"describe --tp -3",
                      "--tp: expected a positive integer up to 16777216, got '-3'"},
        BadInvocation{"describe --recompute sometimes", "--recompute"},
        BadInvocation{"describe --estimate --gpu H9000",
                      "error: --gpu: H9000: expected a GPU type of the catalogue"},
        BadInvocation{"describe --estimate --layer neck", "--layer"},
        BadInvocation{"plan --global-batch 64 --estimator fast", "--estimator"},
        BadInvocation{"describe --format xml", "--format"},
        BadInvocation{"describe --seq 4096",
                      "error: --seq: 4096: expected at most the model's 2048"},
        BadInvocation{"describe --profiles /nonexistent.json", "/nonexistent.json: cannot open"},
        BadInvocation{"--log-level loud models", "--log-level"},
        BadInvocation{"describe --tp 3", "error: --tp: 3: expected a divisor of the model's 32"},
        BadInvocation{"schedule --kind 3f3b", "--kind"},
        BadInvocation{"schedule --kind hetero-1f1b --stages 3 --warmup 1,2,1",
                      "exceeds that of stage 0 (1): the pipeline would deadlock"},
        BadInvocation{"schedule --kind 1f1b --chunks 2", "only the interleaved schedule"},
        BadInvocation{"schedule --stages 0", "--stages: expected a positive integer"},
        BadInvocation{"schedule --stages 4096 --micro-batches 65536",
                      "expected at most 67108864 ops in all"},
        BadInvocation{"simulate", "simulate: --plan FILE, or a run described as Megatron-LM"},
        BadInvocation{"plan", "--global-batch is required"},
        BadInvocation{"plan --global-batch 16 --model gpt3-175b",
                      "no plan fits: gpt3-175b needs 2.87 TiB"},
        BadInvocation{"plan --global-batch 16 --micro-batch 3",
                      "expected a divisor of the global batch 16"},
        BadInvocation{"plan --global-batch 16 --baseline even", "--baseline"},
        BadInvocation{"plan --global-batch 4194304 --micro-batch 1",
                      "expected at most 65536 micro-batches per iteration, got 4194304"},
        BadInvocation{"plan --global-batch 8 --schedule 1f1b,pipedream", "--schedule"},
        BadInvocation{"plan --global-batch 8 --max-stages 1 --max-tp 1 --shard-optimizer off",
                      "no plan fits: gpt3-2.7b needs 46.6 GiB for weights, gradients and Adam "
                      "state; over at most 1 stage(s) with tensor parallelism 1"},
        BadInvocation{"plan --global-batch 8 --max-stages 1 --max-tp 1 --shard-optimizer off",
                      "within the limits asked for (--max-stages 1, --max-tp 1)"},
        BadInvocation{"simulate --plan /nonexistent/plan.json",
                      "/nonexistent/plan.json: cannot open"}));

TEST(Cli, BadFilesExitTwoNamingTheFile) {
  const std::string cluster = write_temp_file("cli-bad-cluster.yaml",
                                              "nodes:\n  - {name: a, gpu: T4, count: -1}\n"
                                              "links: {}\n");
  const Result r = run("describe --cluster " + cluster);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(cluster + ": line 2, field 'nodes[0].count'"), std::string::npos) << r.err;

  const std::string model = write_temp_file("cli-bad-model.yaml", "hidden: 64\nlayers: [\n");
  const Result m = run("describe --model " + model);
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find(model + ": line"), std::string::npos) << m.err;

  const std::string empty = write_temp_file("cli-empty-cluster.yaml", "nodes: []\nlinks: {}\n");
  const Result e = run("describe --cluster " + empty);
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.err.find("at least 1 item"), std::string::npos) << e.err;
}

// `launch --elastic … & join …` in a script: the launcher makes its elastic/ folder only
// once its checks pass, so join waits for it within --wait rather than refusing the
// directory; with none by then, the directory is refused (exit 2).
TEST(Cli, JoinWaitsForALauncherThatIsStillStarting) {
  const std::string dir = hyperpipe::testing::temp_path("join-starting");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const Result starting =
      testing::run_binary(HYPERPIPE_BINARY, "join --checkpoint-dir " + dir + " --device 1 --wait 5",
                          "(sleep 0.5; mkdir -p " + dir + "/elastic) & ");
  EXPECT_EQ(starting.exit_code, 1) << starting.err;  // the folder came, but no launcher answered
  EXPECT_NE(starting.err.find("no elastic launcher answered in 5 s"), std::string::npos)
      << starting.err;
  std::filesystem::remove_all(dir + "/elastic");
  const Result none = run("join --checkpoint-dir " + dir + " --device 1 --wait 0.2");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("it has no elastic/ directory after 0.2 s"), std::string::npos)
      << none.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hyperpipe::cli
