// `hyperpipe plan`: the fastest plan that fits, how it beats the baselines, and why.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <future>
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
#include "hyperpipe/planner/planner.h"
#include "hyperpipe/report/memory_breakdown.h"
#include "hyperpipe/report/simulation_report.h"
#include "hyperpipe/report/table.h"

namespace hyperpipe::cli {

using report::layer_cost_note;
using report::memory_json;
using report::print_memory_table;
using report::simulation_report;
using report::Table;
namespace {

using nlohmann::json;

constexpr const char* kPlanningFormat = "hyperpipe.planning/1";

struct PlanArgs {
  std::string model = kDefaultModel;
  std::string cluster = kDefaultCluster;
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  std::optional<int64_t> micro_batch;
  // The shape the user already runs, fixed (0 or unset: searched).
  int tp = 0;
  int pp = 0;
  int dp = 0;
  std::optional<std::string> recompute;
  std::optional<std::string> dtype;
  std::optional<std::string> profiles;
  cost::Estimator estimator = cost::CostOptions{}.estimator;
  std::optional<std::string> baseline;
  std::optional<std::string> out;
  int max_stages = 32;
  int max_tp = 0;  // 0: as wide as a node allows
  bool same_dp = false;
  bool sequence_parallel = false;
  std::string runtime = "hyperpipe";
  std::string shard_optimizer = "auto";  // auto, on, off
  std::vector<std::string> schedules;    // kinds allowed; empty: every kind
  bool explain = false;
  std::optional<double> memory_margin;  // percent
  OutputFormat format = OutputFormat::table;
};

double bubble_fraction(const planner::ScoredPlan& scored) {
  const auto& out = scored.simulation.output;
  double bubble = 0;
  for (const auto& rank : out.ranks) bubble += rank.bubble;
  return bubble / (out.iteration_time * static_cast<double>(out.ranks.size()));
}

json predicted(const planner::ScoredPlan& scored) {
  const auto& sim = scored.simulation;
  return {{"iteration_time_s", sim.output.iteration_time},
          {"tokens_per_s", sim.tokens_per_s},
          {"achieved_flops_per_gpu", sim.achieved_flops_per_gpu},
          {"mfu", sim.stand_ins ? json(nullptr) : json(sim.mfu)},
          {"bubble_fraction", bubble_fraction(scored)},
          {"fits", scored.fits}};
}

json plan_document(const planner::ScoredPlan& scored) {
  json doc = plan::to_json(scored.plan);
  doc["predicted"] = predicted(scored);
  return doc;
}

std::string schedule_text(const plan::Pipeline& plan) {
  std::string text(schedule::to_string(plan.schedule));
  if (plan.chunks > 1) text += fmt::format(" ({} chunks)", plan.chunks);
  if (!plan.warmup.empty()) text += fmt::format(" (warm-up {})", fmt::join(plan.warmup, ","));
  return text;
}

// The stage table of pipeline p.
void print_pipeline(const planner::ScoredPlan& scored, int p, std::ostream& out) {
  const auto& pipeline = scored.plan.pipeline(p);
  const auto& sim = scored.simulation;
  const auto reports = sim.pipeline_stages(p);
  Table table({">Stage", "GPU", "Devices", "dp×tp", "Layers", "Recompute", ">Stage time", ">Memory",
               ">Available"});
  for (size_t s = 0; s < pipeline.stages.size(); ++s) {
    const auto& stage = pipeline.stages[s];
    const auto& report = *reports[s];
    const int rank = sim.first_rank[p] + report.rank;
    table.add_row({std::to_string(s), report.gpu_type, plan::format_devices(stage.devices),
                   fmt::format("{}×{}", stage.dp, stage.tp),
                   plan::format_layers(stage.first_layer, stage.end_layer),
                   std::string(model::to_string(stage.recompute)),
                   format_duration(report.compute.total()),
                   format_bytes(sim.output.ranks[rank].peak_memory_bytes),
                   format_bytes(sim.memory_limit[rank])});
  }
  table.print(out, "  ");
  out << fmt::format("\n  {} of {}; schedule {}\n",
                     counted(pipeline.micro_batches, "micro-batch", "micro-batches"),
                     pipeline.micro_batch_size, schedule_text(pipeline));
}

void print_plan(const planner::ScoredPlan& scored, const std::string& model,
                const std::string& cluster, int64_t seq, std::ostream& out) {
  const auto& plan = scored.plan;
  const auto& sim = scored.simulation;
  out << fmt::format("Plan for {} on {}: global batch {} × {} tokens ({})\n", model, cluster,
                     plan.global_batch(), seq, scored.label);
  if (plan.runtime != plan::Framework::hyperpipe) {
    const auto& traits = plan::traits(plan.runtime);
    out << fmt::format(
        "To run with {} ({}), costed as it runs: {} point-to-point exchanges, "
        "gradients summed {}\n",
        traits.display_name, traits.version,
        scored.simulation.p2p == sim::P2pMode::blocking ? "blocking" : "asynchronous",
        plan.overlap_allreduce ? "during the backward" : "after it");
  }
  if (plan.shard_optimizer) {
    out << "Optimizer state sharded over each stage's data-parallel ranks (ZeRO-1)\n";
  }
  out << '\n';
  if (plan.pipeline_count() == 1) {
    print_pipeline(scored, 0, out);
  } else {
    out << fmt::format(
        "  {} pipelines of different devices, each holding the whole model and taking its own "
        "share of the batch; their gradients are summed every iteration.\n",
        plan.pipeline_count());
    for (int p = 0; p < plan.pipeline_count(); ++p) {
      out << fmt::format("\n  Pipeline {}: {} sequences of the batch\n", p,
                         plan.pipeline(p).samples());
      print_pipeline(scored, p, out);
    }
  }
  out << "  " << plan::layer_numbering_note(plan.pipeline(0).stages.back().end_layer) << '\n';
  out << "  " << layer_cost_note(simulation_report(plan, sim, model, cluster, seq)) << '\n';
  out << fmt::format(
      "  Predicted iteration {}: {} tokens/s, {} per {} over {}, bubble {:.1f}%\n",
      format_duration(sim.output.iteration_time), format_count(sim.tokens_per_s),
      format_flop_rate(sim.achieved_flops_per_gpu), sim.stand_ins ? "process" : "GPU",
      sim.stand_ins ? counted(sim.devices, "CPU stand-in") + " (no MFU: their peak is this host's)"
                    : fmt::format("{}, MFU {:.1f}%", counted(sim.devices, "GPU"), 100 * sim.mfu),
      100 * bubble_fraction(scored));
  std::vector<std::pair<std::string, json>> rows;
  for (size_t r = 0; r < sim.device_peaks.size(); ++r) {
    rows.emplace_back(sim.output.timeline.tracks[r].name, memory_json(sim.device_peaks[r]));
  }
  out << "\n  Peak memory per device by term (\"Available\" is the device's memory less the "
         "margin):\n";
  print_memory_table(rows, out, "  ");
}

// Stages and micro-batch size, per pipeline: "3", or "2+1" and "4/2" with replicas.
std::string stages_text(const plan::Plan& plan) {
  std::string text;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    text += (p ? "+" : "") + std::to_string(plan.pipeline(p).stages.size());
  }
  return text;
}

std::string micro_batch_text(const plan::Plan& plan) {
  std::string text;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    text += (p ? "/" : "") + std::to_string(plan.pipeline(p).micro_batch_size);
  }
  return text;
}

std::string schedules_text(const plan::Plan& plan) {
  std::string text;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    text += (p ? " ‖ " : "") + schedule_text(plan.pipeline(p));
  }
  return text;
}

// Other plans beside the chosen one: how much faster it is than each.
void print_against(const std::string& title, const std::string& kind,
                   const std::vector<planner::ScoredPlan>& others, const planner::ScoredPlan& best,
                   std::ostream& out) {
  out << "\n  " << title << "\n";
  Table table({kind, ">Stages", ">Micro-batch", ">Iteration", ">Plan is", "Note"});
  for (const auto& other : others) {
    const double ratio = other.iteration_time() / best.iteration_time();
    table.add_row({other.label, stages_text(other.plan), micro_batch_text(other.plan),
                   format_duration(other.iteration_time()), fmt::format("{:.2f}× faster", ratio),
                   other.fits ? "" : "does not fit memory"});
  }
  table.print(out, "    ");
}

void print_comparison(const planner::PlanResult& result, std::ostream& out) {
  print_against("Against what frameworks do today (same simulator):", "Baseline", result.baselines,
                result.best, out);
}

void print_peers(const planner::PlanResult& result, std::ostream& out) {
  print_against("Against the plan spaces published planners search (same simulator, 1F1B):",
                "Space", result.peers, result.best, out);
}

// How far any plan could still go: the ideal iteration, and the share of it reached.
void print_ideal(const planner::PlanResult& result, std::ostream& out) {
  const double ideal = result.ideal_iteration;
  double best_peer = 0;
  for (const auto& peer : result.peers) {
    if (peer.fits && (best_peer == 0 || peer.iteration_time() < best_peer)) {
      best_peer = peer.iteration_time();
    }
  }
  out << fmt::format(
      "\n  Ideal iteration {}: every device computing its share of the batch at its best speed, "
      "nothing else\n  (no bubble, transfer, all-reduce, optimizer step or memory limit). "
      "The plan reaches {:.0f}% of it",
      format_duration(ideal), 100 * ideal / result.best.iteration_time());
  if (best_peer > 0) out << fmt::format(", the best peer space {:.0f}%", 100 * ideal / best_peer);
  out << ".\n";
}

// Where the planner's time went, phase by phase.
void print_phases(const planner::PlanResult& result, std::ostream& out) {
  double total = 0;
  for (const auto& phase : result.phases) total += phase.seconds;
  out << fmt::format("\n  Planning took {} (this sharding of the optimizer):\n",
                     format_duration(total));
  Table table({"Phase", ">Time", ">Simulated plans", ">Simulated ops"});
  for (const auto& phase : result.phases) {
    table.add_row({phase.name, format_duration(phase.seconds), std::to_string(phase.simulations),
                   format_count(static_cast<double>(phase.simulated_ops))});
  }
  table.print(out, "    ");
}

json phases_json(const planner::PlanResult& result) {
  json phases = json::array();
  for (const auto& phase : result.phases) {
    phases.push_back({{"name", phase.name},
                      {"seconds", phase.seconds},
                      {"simulations", phase.simulations},
                      {"simulated_ops", phase.simulated_ops}});
  }
  return phases;
}

void print_explanation(const planner::PlanResult& result, std::ostream& out) {
  print_phases(result, out);
  print_peers(result, out);
  print_ideal(result, out);
  out << fmt::format(
      "\n  Best plan per stage order, then per split into pipelines side by side (‖) "
      "(search {} + {}; estimate = the search's objective, iteration = simulated):\n",
      format_duration(result.search_seconds), format_duration(result.replica_seconds));
  Table table({"Order", ">Stages", ">Micro-batch", ">Estimate", ">Iteration", "Schedule", ""});
  for (const auto& scored : result.per_order) {
    table.add_row({scored.label, stages_text(scored.plan), micro_batch_text(scored.plan),
                   format_duration(scored.estimate), format_duration(scored.iteration_time()),
                   schedules_text(scored.plan), scored.fits ? "" : "does not fit"});
  }
  table.print(out, "    ");
}

// One search's outcome: the plan chosen, and the search's result (none for a baseline).
struct Searched {
  planner::ScoredPlan chosen;
  std::optional<planner::PlanResult> result;
};

// The choices the user fixed, into the space the planner searches.
void fix_choices(const PlanArgs& args, planner::PlanSpace& space) {
  space.tp = args.tp;
  space.dp = args.dp;
  space.stages = args.pp;
  if (args.recompute) space.recompute = model::parse_recompute(*args.recompute);
}

void run_plan(const PlanArgs& args, std::ostream& out, std::ostream& err) {
  if (args.global_batch <= 0) {
    throw InputError("--global-batch", "", "expected a positive number of sequences");
  }
  // The model as it will train: in --dtype where given (the plan records it).
  model::Model model = model::load_model(args.model);
  if (args.dtype) model = model.in_dtype(*model::parse_dtype(*args.dtype));
  const cluster::Cluster cluster = cluster::load_cluster(args.cluster);
  std::optional<cost::ProfileDb> profiles;
  if (args.profiles) profiles = cost::ProfileDb::load_for(*args.profiles, model.config().name);
  cost::CostOptions options;
  options.sequence_parallel = args.sequence_parallel;
  const auto framework = *plan::parse_framework(args.runtime);
  options.reduce_scatter_gradients = plan::traits(framework).reduce_scatters_gradients;
  options.framework = cost::framework_buffers(args.runtime);
  if (args.memory_margin) options.memory_margin = *args.memory_margin / 100;
  options.estimator = args.estimator;
  const std::vector<bool> shardings = planner::optimizer_shardings(args.shard_optimizer, framework);
  const int64_t seq = args.seq_len > 0 ? args.seq_len : model.config().seq_len;
  if (model.config().flavour == model::Flavour::gpt && seq > model.config().seq_len) {
    throw InputError(
        "--seq", std::to_string(seq),
        fmt::format("expected at most the model's {} learned positions", model.config().seq_len));
  }
  planner::PlanRequest request;
  // A plan names its model and cluster; file references are written relative to where the
  // plan goes, so `simulate --plan` finds them from anywhere.
  const auto reference = [&](const std::string& name_or_path) {
    if (!args.out || !std::filesystem::is_regular_file(name_or_path)) return name_or_path;
    const auto base = std::filesystem::absolute(*args.out).parent_path();
    return std::filesystem::relative(std::filesystem::absolute(name_or_path), base).string();
  };
  request.batch = {
      reference(args.model), reference(args.cluster), args.global_batch, args.seq_len, {}};
  request.space.max_stages = args.max_stages;
  if (args.max_tp > 0) request.space.max_tp = args.max_tp;
  request.space.same_dp = args.same_dp;
  fix_choices(args, request.space);
  for (const auto& name : args.schedules) {
    request.space.schedules.push_back(*schedule::parse_schedule_kind(name));
  }
  planner::restrict_to_framework(framework, request);
  request.every_order = args.explain;
  request.peers = args.explain;
  if (args.micro_batch) {
    if (args.global_batch % *args.micro_batch != 0) {
      throw InputError("--micro-batch", std::to_string(*args.micro_batch),
                       fmt::format("expected a divisor of the global batch {}", args.global_batch));
    }
    request.batch.micro_batch_sizes = {*args.micro_batch};
    request.space.micro_batch = *args.micro_batch;
  } else {
    request.batch.micro_batch_sizes = planner::micro_batch_sizes(args.global_batch);
  }
  for (int64_t b : request.batch.micro_batch_sizes) {
    if (args.global_batch / b > kMaxMicroBatches) {
      throw InputError("--micro-batch", std::to_string(b),
                       fmt::format("expected at most {} micro-batches per iteration, got {}",
                                   kMaxMicroBatches, args.global_batch / b));
    }
  }

  PlanningProgress progress(err, is_terminal(err), static_cast<int>(shardings.size()));
  const auto search = [&](bool shard_optimizer, int index) {
    cost::CostOptions searched_options = options;
    searched_options.shard_optimizer = shard_optimizer;
    const cost::CostModel costs(model, cluster, searched_options, profiles ? &*profiles : nullptr);
    Searched found;
    if (args.baseline) {
      auto baseline =
          planner::best_baseline(costs, request.batch, *planner::parse_baseline(*args.baseline));
      if (!baseline) {
        throw InputError("--baseline " + *args.baseline, "--cluster " + args.cluster,
                         "the devices cannot be cut into equal groups of one GPU type");
      }
      if (!baseline->fits) {
        throw InputError(
            "--baseline " + *args.baseline, "--cluster " + args.cluster,
            planner::infeasibility_reason(costs, request) +
                "; the baseline's best layout still needs " +
                format_bytes(baseline->simulation.output.ranks.front().peak_memory_bytes));
      }
      found.chosen = std::move(*baseline);
    } else {
      planner::PlanRequest reporting = request;
      reporting.progress = progress.callback(index);
      found.result = planner::make_plan(costs, reporting);
      found.chosen = found.result->best;
    }
    found.chosen.plan.sequence_parallel = args.sequence_parallel;  // as it was costed
    if (args.dtype) found.chosen.plan.dtype = model.config().dtype;
    if (args.memory_margin) found.chosen.plan.memory_margin = *args.memory_margin / 100;
    for (const auto& stage : found.chosen.plan.stages) {
      if (stage.dp > 1) found.chosen.plan.shard_optimizer = shard_optimizer;
    }
    return found;
  };
  // Each sharding asked for, side by side (each search has its own cost model; the two
  // share nothing they change); the faster plan where both are (the first where they tie),
  // the one that fits where only one does.
  std::vector<std::future<Searched>> searches;
  for (const bool sharded : shardings) {
    searches.push_back(
        std::async(std::launch::async, search, sharded, static_cast<int>(searches.size())));
  }
  std::optional<Searched> best;
  std::optional<InputError> nothing_fits;
  for (auto& searching : searches) {
    try {
      Searched found = searching.get();
      if (!best || found.chosen.iteration_time() < best->chosen.iteration_time()) {
        best = std::move(found);
      }
    } catch (const InputError& error) {
      nothing_fits = error;
    }
  }
  if (!best) {
    progress.abandon();
    throw *nothing_fits;
  }
  if (!args.baseline) progress.finish();
  planner::ScoredPlan chosen = std::move(best->chosen);
  const std::optional<planner::PlanResult> result = std::move(best->result);
  if (args.out) write_file_atomically(*args.out, plan_document(chosen).dump(2) + "\n");

  if (args.format == OutputFormat::json) {
    json doc{{"format", kPlanningFormat},
             {"plan", plan_document(chosen)},
             {"label", chosen.label},
             {"report", simulation_report(chosen.plan, chosen.simulation, model.config().name,
                                          cluster.name(), seq)}};
    if (result) {
      json baselines = json::array();
      for (const auto& b : result->baselines) {
        baselines.push_back({{"name", b.label}, {"plan", plan_document(b)}});
      }
      json orders = json::array();
      for (const auto& o : result->per_order) {
        orders.push_back(
            {{"order", o.label}, {"estimate_s", o.estimate}, {"plan", plan_document(o)}});
      }
      doc["baselines"] = baselines;
      json peers = json::array();
      for (const auto& p : result->peers) {
        peers.push_back({{"name", p.label}, {"plan", plan_document(p)}});
      }
      if (args.explain) doc["peers"] = peers;
      doc["ideal_iteration_s"] = result->ideal_iteration;
      doc["per_order"] = orders;
      doc["search_seconds"] = result->search_seconds;
      doc["replica_seconds"] = result->replica_seconds;
      doc["phases"] = phases_json(*result);
    }
    out << doc.dump(2) << '\n';
    return;
  }
  print_plan(chosen, model.config().name, cluster.name(), seq, out);
  if (result) {
    print_comparison(*result, out);
    if (args.explain) print_explanation(*result, out);
  }
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
  command->add_option("--global-batch,-B", args->global_batch, "Sequences per iteration")
      ->required()
      ->check(positive_integer());
  command->add_option("--seq", args->seq_len, "Sequence length (default: the model's)")
      ->check(positive_integer());
  command
      ->add_option("--micro-batch", args->micro_batch,
                   "Fix the micro-batch size (default: search every divisor of the global batch)")
      ->check(positive_integer());
  command
      ->add_option("--tp", args->tp,
                   "Fix tensor parallelism: every stage this tp (Megatron-LM's "
                   "--tensor-model-parallel-size); the planner searches the rest")
      ->check(positive_integer());
  command
      ->add_option("--pp", args->pp,
                   "Fix the pipeline: exactly this many device groups (Megatron-LM's "
                   "--pipeline-model-parallel-size)")
      ->check(positive_integer());
  command
      ->add_option("--dp", args->dp,
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
  command->add_option("--max-stages", args->max_stages, "Most pipeline stages to consider")
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
      ->add_option("--shard-optimizer", args->shard_optimizer,
                   "Shard the optimizer state over each stage's data-parallel ranks (ZeRO-1): "
                   "on, off, or auto (where the runtime pays nothing for it, or where it makes "
                   "the plan faster)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->default_val("auto");
  command->add_flag("--same-dp", args->same_dp,
                    "Every stage the same data-parallel degree, one pipeline (as Megatron-LM and "
                    "DeepSpeed require)");
  command->add_flag("--sequence-parallel", args->sequence_parallel,
                    "Sequence parallelism in every tensor-parallel stage (Megatron-LM's): costed "
                    "so, and the plan says so");
  command->add_option("--profiles", args->profiles, "Profile database to prefer over estimates");
  add_estimator_option(*command, args->estimator);
  command
      ->add_option("--memory-margin", args->memory_margin,
                   "Percent of each device's memory no plan may use (default 5; the plan "
                   "records it)")
      ->check(CLI::Range(0.0, 50.0));
  command->add_option("--baseline", args->baseline, "Emit a baseline's plan instead")
      ->check(CLI::IsMember(planner::baseline_names()));
  command->add_option("--out,-o", args->out, "Write the plan (JSON) here");
  command->add_flag("--explain", args->explain,
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
