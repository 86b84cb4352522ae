#include "hyperpipe/report/plan_report.h"

#include <fmt/format.h>

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/plan/plan_json.h"
#include "hyperpipe/report/memory_breakdown.h"
#include "hyperpipe/report/simulation_report.h"
#include "hyperpipe/report/table.h"

namespace hyperpipe::report {
namespace {

using nlohmann::json;

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

}  // namespace

json plan_document(const planner::ScoredPlan& scored) {
  json doc = plan::to_json(scored.plan);
  doc["predicted"] = predicted(scored);
  return doc;
}

namespace {

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

}  // namespace

json planning_report(const planner::ScoredPlan& chosen, const planner::PlanResult* result,
                     bool explain, const std::string& model, const std::string& cluster,
                     int64_t seq) {
  json doc{{"format", kPlanningFormat},
           {"plan", plan_document(chosen)},
           {"label", chosen.label},
           {"report", simulation_report(chosen.plan, chosen.simulation, model, cluster, seq)}};
  if (!result) return doc;
  json baselines = json::array();
  for (const auto& b : result->baselines) {
    baselines.push_back({{"name", b.label}, {"plan", plan_document(b)}});
  }
  json orders = json::array();
  for (const auto& o : result->per_order) {
    orders.push_back({{"order", o.label}, {"estimate_s", o.estimate}, {"plan", plan_document(o)}});
  }
  doc["baselines"] = baselines;
  json peers = json::array();
  for (const auto& p : result->peers) {
    peers.push_back({{"name", p.label}, {"plan", plan_document(p)}});
  }
  if (explain) doc["peers"] = peers;
  doc["ideal_iteration_s"] = result->ideal_iteration;
  doc["per_order"] = orders;
  doc["search_seconds"] = result->search_seconds;
  doc["replica_seconds"] = result->replica_seconds;
  doc["phases"] = phases_json(*result);
  return doc;
}

void print_planning(const planner::ScoredPlan& chosen, const planner::PlanResult* result,
                    bool explain, const std::string& model, const std::string& cluster, int64_t seq,
                    std::ostream& out) {
  print_plan(chosen, model, cluster, seq, out);
  if (!result) return;
  print_comparison(*result, out);
  if (explain) print_explanation(*result, out);
}

}  // namespace hyperpipe::report
