// What `hyperpipe simulate` runs and reports: a plan file's plan, or a run described as
// Megatron-LM's command line describes it (with what the planner would do instead), costed
// and simulated event by event as the plan's framework, or the one asked for, runs it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/planner/described_run.h"
#include "hyperpipe/report/planner_alternatives.h"
#include "hyperpipe/sim/plan_simulation.h"

namespace hyperpipe::report {

struct SimulationRequest {
  std::optional<std::string> plan_path;              // a plan file, or
  std::optional<planner::RunDescription> described;  // a described run (not both)
  std::optional<std::string> cluster;                // instead of the plan's
  std::optional<std::string> profiles;               // a profile database to prefer over estimates
  cost::Estimator estimator = cost::CostOptions{}.estimator;
  bool overlap_allreduce = false;          // on, whatever the plan says
  std::optional<sim::P2pMode> p2p;         // unset: as the plan's runtime exchanges
  std::optional<plan::Framework> runtime;  // unset: the plan's (megatron for a described run)
};

struct SimulationRun {
  plan::Plan plan;
  model::Model model;
  cluster::Cluster cluster;
  sim::PlanSimulation simulation;              // its timeline titled for a trace or chart
  std::optional<planner::RunShape> described;  // the described run's shape, with its dp
  std::vector<Alternative> alternatives;       // for a described run: the planner's plans
  // hyperpipe.simulation/1; for a described run also its `plan` and the `planner`'s.
  nlohmann::json report;
};

// InputError for a request with neither or both of a plan file and a described run (one
// without a global batch is none), and where the framework cannot run the plan.
SimulationRun simulate_request(const SimulationRequest& request);

// A described run's first line: its framework, shape, devices and micro-batch.
std::string described_run_line(const SimulationRun& run);

}  // namespace hyperpipe::report
