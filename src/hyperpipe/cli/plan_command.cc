// `hyperpipe plan`: the fastest plan that fits, how it beats the baselines, and why.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/estimator_option.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cli/planning_progress.h"
#include "hyperpipe/cli/progress_line.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/planner/plan_choices.h"
#include "hyperpipe/planner/planner.h"
#include "hyperpipe/report/plan_report.h"

namespace hyperpipe::cli {

namespace {

using nlohmann::json;

// The planner's choices, bound where they are of its own type, and the flags read as text.
struct PlanArgs {
  planner::PlanChoices choices;
  std::string model = kDefaultModel;
  std::string cluster = kDefaultCluster;
  std::optional<std::string> recompute;
  std::optional<std::string> dtype;
  std::optional<std::string> profiles;
  std::optional<std::string> baseline;
  std::optional<std::string> out;
  std::string runtime = "hyperpipe";
  std::vector<std::string> schedules;   // kinds allowed; empty: every kind
  int max_tp = 0;                       // 0: as wide as a node allows
  std::optional<double> memory_margin;  // percent
  OutputFormat format = OutputFormat::table;
};

// The user's choices as the planner takes them; file references as the plan will name them.
planner::PlanChoices choices_of(const PlanArgs& args) {
  planner::PlanChoices choices = args.choices;
  choices.model_reference = plan::reference_beside(args.out, args.model);
  choices.cluster_reference = plan::reference_beside(args.out, args.cluster);
  choices.cluster_argument = args.cluster;
  if (args.recompute) choices.space.recompute = model::parse_recompute(*args.recompute);
  choices.dtype_given = args.dtype.has_value();
  choices.runtime = *plan::parse_framework(args.runtime);
  for (const auto& name : args.schedules) {
    choices.space.schedules.push_back(*schedule::parse_schedule_kind(name));
  }
  if (args.max_tp > 0) choices.space.max_tp = args.max_tp;
  if (args.memory_margin) choices.memory_margin = *args.memory_margin / 100;
  if (args.baseline) choices.baseline = *planner::parse_baseline(*args.baseline);
  choices.baseline_name = args.baseline.value_or("");
  return choices;
}

void run_plan(const PlanArgs& args, std::ostream& out, std::ostream& err) {
  // The model as it will train: in --dtype where given (the plan records it).
  model::Model model = model::load_model(args.model);
  if (args.dtype) model = model.in_dtype(*model::parse_dtype(*args.dtype));
  const cluster::Cluster cluster = cluster::load_cluster(args.cluster);
  std::optional<cost::ProfileDb> profiles;
  if (args.profiles) profiles = cost::ProfileDb::load_for(*args.profiles, model.config().name);
  const planner::ShardedPlanning planning =
      planner::planning_of(choices_of(args), model, cluster, profiles ? &*profiles : nullptr);
  const int64_t seq = model.config().sequence_length(args.choices.seq_len);
  const int searches = static_cast<int>(planning.shardings.size());
  PlanningProgress progress(err, is_terminal(err), searches);
  planner::Planned planned;
  try {
    planned = planner::plan_sharded(planning, [&](int index) { return progress.callback(index); });
  } catch (const InputError&) {
    progress.abandon();
    throw;
  }
  if (!args.baseline) progress.finish();
  const planner::ScoredPlan& chosen = planned.chosen;
  const std::optional<planner::PlanResult>& result = planned.result;
  if (args.out) write_file_atomically(*args.out, report::plan_document(chosen).dump(2) + "\n");

  const planner::PlanResult* searched = result ? &*result : nullptr;
  if (args.format == OutputFormat::json) {
    out << report::planning_report(chosen, searched, args.choices.explain, model.config().name,
                                   cluster.name(), seq)
               .dump(2)
        << '\n';
    return;
  }
  report::print_planning(chosen, searched, args.choices.explain, model.config().name,
                         cluster.name(), seq, out);
  if (args.out)
    out << "\nPlan written to " << *args.out << " (hyperpipe simulate --plan " << *args.out
        << ")\n";
}

}  // namespace

void add_plan_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* command = app.add_subcommand(
      "plan", "Find the fastest pipeline plan that fits a model on a (mixed) cluster");
  command
      ->add_option("--model,-m", args->model,
                   "Catalogue name, model .yaml, or Hugging Face config.json")
      ->default_str(kDefaultModel);
  command->add_option("--cluster,-c", args->cluster, "Cluster .yaml or built-in cluster name")
      ->default_str(kDefaultCluster);
  command->add_option("--global-batch,-B", args->choices.global_batch, "Sequences per iteration")
      ->required()
      ->check(positive_integer());
  command->add_option("--seq", args->choices.seq_len, "Sequence length (default: the model's)")
      ->check(positive_integer());
  command
      ->add_option("--micro-batch", args->choices.micro_batch,
                   "Fix the micro-batch size (default: search every divisor of the global batch)")
      ->check(positive_integer());
  command
      ->add_option("--tp", args->choices.space.tp,
                   "Fix tensor parallelism: every stage this tp (Megatron-LM's "
                   "--tensor-model-parallel-size); the planner searches the rest")
      ->check(positive_integer());
  command
      ->add_option("--pp", args->choices.space.stages,
                   "Fix the pipeline: exactly this many device groups (Megatron-LM's "
                   "--pipeline-model-parallel-size)")
      ->check(positive_integer());
  command
      ->add_option("--dp", args->choices.space.dp,
                   "Fix data parallelism: every stage this dp, one pipeline (the micro-batch is "
                   "split over it)")
      ->check(positive_integer());
  command
      ->add_option("--recompute", args->recompute,
                   "Fix activation recomputation on every stage: none, selective (attention) or "
                   "full (default: each stage the least that fits)")
      ->check(CLI::IsMember(model::recompute_names()));
  command
      ->add_option("--dtype", args->dtype,
                   "Plan for training in this precision (bf16, fp16, fp32; default: the "
                   "model's); the plan records it")
      ->check(CLI::IsMember(model::dtype_names()));
  command
      ->add_option("--max-tp", args->max_tp,
                   "Widest tensor parallelism to consider (default: as wide as a node)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--max-stages", args->choices.space.max_stages,
                   "Most pipeline stages to consider")
      ->check(positive_integer())
      ->default_str("32");
  command
      ->add_option("--schedule", args->schedules,
                   "Schedule kinds the plan may use, comma-separated (default: every kind)")
      ->delimiter(',')
      ->check(CLI::IsMember(schedule::schedule_kind_names()));
  command
      ->add_option("--runtime", args->runtime,
                   "The framework that will run the plan: only plans it can express, costed as "
                   "it runs them (hyperpipe, megatron, deepspeed, torchtitan)")
      ->check(CLI::IsMember(plan::framework_names()))
      ->default_val("hyperpipe");
  command
      ->add_option("--shard-optimizer", args->choices.shard_optimizer,
                   "Shard the optimizer state over each stage's data-parallel ranks (ZeRO-1): "
                   "on, off, or auto (where the runtime pays nothing for it, or where it makes "
                   "the plan faster)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->default_val("auto");
  command->add_flag("--same-dp", args->choices.space.same_dp,
                    "Every stage the same data-parallel degree, one pipeline (as Megatron-LM and "
                    "DeepSpeed require)");
  command->add_flag("--sequence-parallel", args->choices.sequence_parallel,
                    "Sequence parallelism in every tensor-parallel stage (Megatron-LM's): costed "
                    "so, and the plan says so");
  command->add_option("--profiles", args->profiles, "Profile database to prefer over estimates");
  add_estimator_option(*command, args->choices.estimator);
  command
      ->add_option("--memory-margin", args->memory_margin,
                   "Percent of each device's memory no plan may use (default 5; the plan "
                   "records it)")
      ->check(CLI::Range(0.0, 50.0));
  command->add_option("--baseline", args->baseline, "Emit a baseline's plan instead")
      ->check(CLI::IsMember(planner::baseline_names()));
  command->add_option("--out,-o", args->out, "Write the plan (JSON) here");
  command->add_flag("--explain", args->choices.explain,
                    "Also show the best plan of every stage order and of the spaces Sailor, "
                    "Metis and AMP search");
  add_format_option(*command, args->format);
  command->footer(
      "Examples:\n"
      "  hyperpipe plan --model gpt3-2.7b --cluster a100-v100-t4 --global-batch 64\n"
      "  hyperpipe plan --model llama2-7b --cluster examples/clusters/h100-a100-islands.yaml "
      "--global-batch 256 --explain\n"
      "  hyperpipe plan --global-batch 64 --baseline uniform --out uniform.json\n"
      "  hyperpipe plan --model llama2-7b --cluster examples/clusters/h100-a100-islands.yaml "
      "--global-batch 256 --tp 2 --pp 4   # your shape, the rest searched");
  command->callback([args, &out, &err] { run_plan(*args, out, err); });
}

}  // namespace hyperpipe::cli
