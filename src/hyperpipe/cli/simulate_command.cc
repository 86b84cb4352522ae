// `hyperpipe simulate`: a plan file, or a run described as Megatron-LM's command line
// describes it, run on the cost model event by event.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/estimator_option.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/report/simulation_report.h"
#include "hyperpipe/report/simulation_run.h"
#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"

namespace hyperpipe::cli {

namespace {

// A run described as Megatron-LM's command line describes it, in place of a plan file.
struct RunArgs {
  std::optional<std::string> model;
  std::optional<int64_t> global_batch;
  int tp = 1;
  int pp = 1;
  std::optional<int> dp;  // unset: the cluster's GPUs over tp × pp
  int64_t micro_batch = 1;
  int virtual_stages = 1;
  std::string recompute = "none";
  bool sequence_parallel = false;
  bool distributed_optimizer = false;
  std::optional<std::string> dtype;
  int64_t seq_len = 0;
  std::vector<CLI::Option*> options;  // every flag above, to tell whether any was given
};

struct SimulateArgs {
  report::SimulationRequest request;
  RunArgs run;
  std::optional<std::string> p2p;
  std::optional<std::string> runtime;
  std::optional<std::string> trace;
  std::optional<std::string> svg;
  OutputFormat format = OutputFormat::table;
};

// The run the flags describe, if any was given.
std::optional<planner::RunDescription> run_description(const RunArgs& run,
                                                       const std::optional<std::string>& cluster) {
  if (std::none_of(run.options.begin(), run.options.end(),
                   [](const CLI::Option* option) { return option->count() > 0; })) {
    return std::nullopt;
  }
  planner::RunDescription description;
  planner::RunShape& shape = description.shape;
  shape.tp = run.tp;
  shape.pp = run.pp;
  shape.dp = run.dp.value_or(0);
  shape.micro_batch = run.micro_batch;
  shape.global_batch = run.global_batch.value_or(0);
  shape.seq_len = run.seq_len;
  shape.virtual_stages = run.virtual_stages;
  shape.recompute = *model::parse_recompute(run.recompute);
  shape.sequence_parallel = run.sequence_parallel;
  shape.shard_optimizer = run.distributed_optimizer;
  description.model = run.model.value_or(kDefaultModel);
  description.cluster = cluster.value_or(kDefaultCluster);
  if (run.dtype) description.dtype = *model::parse_dtype(*run.dtype);
  return description;
}

void run_simulate(SimulateArgs& args, std::ostream& out) {
  auto& request = args.request;
  if (args.runtime) {
    request.runtime = plan::parse_framework(*args.runtime);
    if (!request.runtime) {
      throw InputError("--runtime", *args.runtime,
                       fmt::format("one of {}", fmt::join(plan::framework_names(), ", ")));
    }
  }
  if (args.p2p)
    request.p2p = *args.p2p == "blocking" ? sim::P2pMode::blocking : sim::P2pMode::async;
  request.described = run_description(args.run, request.cluster);
  const report::SimulationRun run = report::simulate_request(request);
  const trace::Timeline& timeline = run.simulation.output.timeline;
  // Files first: a failure to write them must not follow a printed success.
  if (args.trace) write_file_atomically(*args.trace, trace::chrome_trace(timeline).dump());
  if (args.svg) write_file_atomically(*args.svg, trace::svg_gantt(timeline));
  if (args.format == OutputFormat::json) {
    out << run.report.dump(2) << '\n';
    return;
  }
  if (run.described) out << report::described_run_line(run) << "\n\n";
  report::print_simulation_tables(run.report, out);
  if (run.described) {
    report::print_alternatives(run.alternatives, run.simulation.output.iteration_time, out);
  }
  if (args.trace) out << "Trace (open in ui.perfetto.dev): " << *args.trace << '\n';
  if (args.svg) out << "Timeline chart: " << *args.svg << '\n';
}

void add_run_options(CLI::App& command, RunArgs& run) {
  const char* group = "A run described as Megatron-LM's command line (instead of --plan)";
  const auto add = [&](CLI::Option* option) {
    option->group(group);
    run.options.push_back(option);
    return option;
  };
  add(command.add_option("--model,-m", run.model,
                         "Catalogue name, model .yaml, or Hugging Face config.json "
                         "(default gpt3-2.7b)"));
  add(command.add_option("--global-batch,-B", run.global_batch,
                         "Sequences per iteration (--global-batch-size)"))
      ->check(positive_integer());
  add(command.add_option("--tp", run.tp, "Tensor-parallel size (--tensor-model-parallel-size)"))
      ->check(positive_integer())
      ->default_str("1");
  add(command.add_option("--pp", run.pp, "Pipeline-parallel size (--pipeline-model-parallel-size)"))
      ->check(positive_integer())
      ->default_str("1");
  add(command.add_option("--dp", run.dp,
                         "Data-parallel size (default: the cluster's GPUs over tp × pp); ranks "
                         "are numbered tp first, then dp, then pp, rank r on device r"))
      ->check(positive_integer());
  add(command.add_option("--micro-batch", run.micro_batch,
                         "Sequences per data-parallel rank per micro-batch (--micro-batch-size)"))
      ->check(positive_integer())
      ->default_str("1");
  add(command.add_option("--virtual-stages", run.virtual_stages,
                         "Model chunks per pipeline rank: interleaved 1F1B when more than one "
                         "(--num-virtual-stages-per-pipeline-rank)"))
      ->check(positive_integer())
      ->default_str("1");
  add(command.add_option("--recompute", run.recompute,
                         "Activation recomputation on every stage: none, selective, full "
                         "(--recompute-granularity)"))
      ->check(CLI::IsMember(model::recompute_names()))
      ->default_str("none");
  add(command.add_flag(
      "--sequence-parallel", run.sequence_parallel,
      "Sequence parallelism in every tensor-parallel stage (--sequence-parallel)"));
  add(command.add_flag("--distributed-optimizer", run.distributed_optimizer,
                       "Optimizer state sharded over dp (--use-distributed-optimizer)"));
  add(command.add_option("--dtype", run.dtype, "bf16, fp16 or fp32 (default: the model's)"))
      ->check(CLI::IsMember(model::dtype_names()));
  add(command.add_option("--seq", run.seq_len, "Sequence length (default: the model's)"))
      ->check(positive_integer());
}

}  // namespace

void add_simulate_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* command = app.add_subcommand(
      "simulate", "Simulate a plan event by event and show its predicted timeline");
  command->add_option("--plan,-p", args->request.plan_path,
                      "Plan file (docs/formats.md); or describe a run with the options below");
  command->add_option("--cluster,-c", args->request.cluster,
                      "Cluster to run it on instead of the one the plan names (for a described "
                      "run: its cluster, default a100-v100-t4)");
  add_run_options(*command, args->run);
  command->add_option("--profiles", args->request.profiles,
                      "Profile database to prefer over estimates");
  add_estimator_option(*command, args->request.estimator);
  command->add_option("--trace", args->trace, "Write a Chrome/Perfetto trace (JSON) here");
  command->add_option("--svg", args->svg, "Write an SVG Gantt chart here");
  command->add_flag("--overlap-allreduce", args->request.overlap_allreduce,
                    "Start each chunk's gradient all-reduce as soon as its gradients are ready "
                    "(the plan's overlap_allreduce)");
  command
      ->add_option("--p2p", args->p2p,
                   "How stages exchange activations and gradients: async (HyperPipe's runtime: "
                   "sends overlap compute) or blocking (matched blocking send/receive pairs, as "
                   "DeepSpeed's pipeline engine and Megatron-LM's non-overlapped 1F1B); "
                   "default: as the plan's runtime does")
      ->check(CLI::IsMember({"async", "blocking"}));
  command->add_option(
      "--runtime", args->runtime,
      "Predict the plan as this framework runs it (hyperpipe, megatron, "
      "deepspeed, torchtitan; default: the plan's `runtime`, megatron for a described "
      "run); exit 2 where it cannot express the plan");
  add_format_option(*command, args->format);
  command->footer(
      "Examples:\n"
      "  hyperpipe simulate --plan examples/plans/gpt3-2.7b-4stage.json\n"
      "  hyperpipe simulate --plan plan.json --trace trace.json --svg timeline.svg\n"
      "  hyperpipe simulate --plan plan.json --profiles measured.json --format json\n"
      "  hyperpipe simulate --plan plan.json --runtime megatron   # as Megatron-LM would run it\n"
      "  hyperpipe simulate --model llama2-7b --cluster examples/clusters/h100-a100-islands.yaml "
      "--tp 2 --pp 4 --dp 4 --micro-batch 1 --global-batch 512   # a Megatron-LM run, and what "
      "the planner would do instead");
  command->callback([args, &out] { run_simulate(*args, out); });
}

}  // namespace hyperpipe::cli
