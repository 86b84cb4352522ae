// `hyperpipe simulate`: a plan file, or a run described as Megatron-LM's command line
// describes it, run on the cost model event by event.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/estimator_option.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/planner/described_run.h"
#include "hyperpipe/report/planner_alternatives.h"
#include "hyperpipe/report/simulation_report.h"
#include "hyperpipe/sim/runnable_simulation.h"
#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"

namespace hyperpipe::cli {

using report::Alternative;
using report::alternatives_json;
using report::planner_alternatives;
using report::print_alternatives;
using report::print_simulation_tables;
using report::simulation_report;
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
  std::optional<std::string> plan;
  RunArgs run;
  std::optional<std::string> cluster;
  std::optional<std::string> profiles;
  cost::Estimator estimator = cost::CostOptions{}.estimator;
  std::optional<std::string> trace;
  std::optional<std::string> svg;
  bool overlap_allreduce = false;
  std::optional<std::string> p2p;      // unset: as the plan's runtime exchanges
  std::optional<std::string> runtime;  // unset: the plan's
  OutputFormat format = OutputFormat::table;
};

bool described(const RunArgs& run) {
  for (const CLI::Option* option : run.options) {
    if (option->count() > 0) return true;
  }
  return false;
}

// The described run, with the defaults of an undescribed model and cluster.
planner::RunDescription run_description(const SimulateArgs& args, plan::Framework runtime) {
  const RunArgs& run = args.run;
  planner::RunDescription description;
  planner::RunShape& shape = description.shape;
  shape.tp = run.tp;
  shape.pp = run.pp;
  shape.dp = run.dp.value_or(0);
  shape.micro_batch = run.micro_batch;
  shape.global_batch = *run.global_batch;
  shape.seq_len = run.seq_len;
  shape.virtual_stages = run.virtual_stages;
  shape.recompute = *model::parse_recompute(run.recompute);
  shape.sequence_parallel = run.sequence_parallel;
  shape.shard_optimizer = run.distributed_optimizer;
  shape.runtime = runtime;
  description.model = run.model.value_or(kDefaultModel);
  description.cluster = args.cluster.value_or(kDefaultCluster);
  if (run.dtype) description.dtype = *model::parse_dtype(*run.dtype);
  return description;
}

// --runtime's framework, if given; InputError for a name that is none.
std::optional<plan::Framework> framework_asked(const SimulateArgs& args) {
  if (!args.runtime) return std::nullopt;
  const auto framework = plan::parse_framework(*args.runtime);
  if (!framework) {
    throw InputError("--runtime", *args.runtime,
                     fmt::format("one of {}", fmt::join(plan::framework_names(), ", ")));
  }
  return framework;
}

// What simulate runs: a plan file's plan, or the described run's.
struct Simulated {
  plan::Plan plan;
  model::Model model;
  cluster::Cluster cluster;
  std::string source;  // the plan file, or the run's flags, for messages
  std::optional<planner::RunShape> run;
};

Simulated load_simulated(const SimulateArgs& args) {
  if (args.plan && described(args.run)) {
    throw InputError("--plan", *args.plan,
                     "no run description beside it (--model, --global-batch, --tp, --pp, --dp, "
                     "--micro-batch, …): a plan file or a description, not both");
  }
  if (args.plan) {
    auto [plan, model, cluster] = plan::load_checked_plan(*args.plan, args.cluster);
    return {std::move(plan), std::move(model), std::move(cluster), *args.plan, std::nullopt};
  }
  if (!args.run.global_batch) {
    throw InputError("simulate", "",
                     "--plan FILE, or a run described as Megatron-LM's command line: --model M "
                     "--cluster C --global-batch B [--tp T --pp P --dp D --micro-batch b]");
  }
  const plan::Framework runtime = framework_asked(args).value_or(plan::Framework::megatron);
  auto [plan, model, cluster, shape] = planner::plan_described_run(run_description(args, runtime));
  return {std::move(plan), std::move(model), std::move(cluster),
          fmt::format("--tp {} --pp {} --dp {}", shape.tp, shape.pp, shape.dp), shape};
}

void run_simulate(const SimulateArgs& args, std::ostream& out) {
  auto [plan, model, cluster, source, run] = load_simulated(args);
  if (args.overlap_allreduce) plan.overlap_allreduce = true;
  std::optional<cost::ProfileDb> profiles;
  if (args.profiles) profiles = cost::ProfileDb::load_for(*args.profiles, model.config().name);
  cost::CostOptions cost_options;
  cost_options.estimator = args.estimator;
  const cost::CostModel costs(model, cluster, cost_options, profiles ? &*profiles : nullptr);
  if (const auto framework = framework_asked(args); framework && !run) {
    sim::run_with(plan, *framework, source);
  }
  sim::SimOptions options;
  if (args.p2p) {
    options.p2p = *args.p2p == "blocking" ? sim::P2pMode::blocking : sim::P2pMode::async;
  }
  sim::PlanSimulation simulation = sim::simulate_runnable(costs, plan, options);

  const int64_t seq = plan.seq_len > 0 ? plan.seq_len : model.config().seq_len;
  simulation.output.timeline.title =
      fmt::format("{} on {}: {}, {} (predicted)", model.config().name, cluster.name(),
                  schedule::to_string(plan.schedule),
                  counted(plan.micro_batches, "micro-batch", "micro-batches"));
  // Files first: a failure to write them must not follow a printed success.
  if (args.trace) {
    write_file_atomically(*args.trace, trace::chrome_trace(simulation.output.timeline).dump());
  }
  if (args.svg) write_file_atomically(*args.svg, trace::svg_gantt(simulation.output.timeline));
  auto report = simulation_report(plan, simulation, model.config().name, cluster.name(), seq);
  // Beside a described run, what the planner would do instead.
  std::vector<Alternative> alternatives;
  if (run) {
    const planner::BatchSettings batch(plan.model, plan.cluster, run->global_batch, plan.seq_len,
                                       {}, plan.runtime);
    alternatives = planner_alternatives(model, cluster, cost_options,
                                        profiles ? &*profiles : nullptr, batch, *run);
  }
  const double iteration = simulation.output.iteration_time;
  if (args.format == OutputFormat::json) {
    if (run) {
      report["plan"] = plan::to_json(plan);
      report["planner"] = alternatives_json(alternatives, iteration);
    }
    out << report.dump(2) << '\n';
    return;
  }
  if (run) {
    out << fmt::format(
        "{} run: tp {} × pp {} × dp {} on GPUs {} of {}, micro-batch {} per data-parallel "
        "rank{}\n\n",
        plan::traits(plan.runtime).display_name, run->tp, run->pp, run->dp,
        plan::format_devices(plan::devices_in_rank_order(plan)), cluster.name(), run->micro_batch,
        run->virtual_stages > 1 ? fmt::format(", {} virtual stages per rank", run->virtual_stages)
                                : "");
  }
  print_simulation_tables(report, out);
  if (run) print_alternatives(alternatives, iteration, out);
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
  command->add_option("--plan,-p", args->plan,
                      "Plan file (docs/formats.md); or describe a run with the options below");
  command->add_option("--cluster,-c", args->cluster,
                      "Cluster to run it on instead of the one the plan names (for a described "
                      "run: its cluster, default a100-v100-t4)");
  add_run_options(*command, args->run);
  command->add_option("--profiles", args->profiles, "Profile database to prefer over estimates");
  add_estimator_option(*command, args->estimator);
  command->add_option("--trace", args->trace, "Write a Chrome/Perfetto trace (JSON) here");
  command->add_option("--svg", args->svg, "Write an SVG Gantt chart here");
  command->add_flag("--overlap-allreduce", args->overlap_allreduce,
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
