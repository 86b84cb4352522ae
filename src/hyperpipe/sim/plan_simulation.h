// A plan simulated on the cost model: per-stage costs and transfers from cost::CostModel,
// the plan's schedule with its communication, and the figures a user asks for.
#pragma once

#include <string>
#include <vector>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/schedule/schedule.h"
#include "hyperpipe/sim/simulator.h"

namespace hyperpipe::sim {

struct SimOptions {
  bool overlap_allreduce = false;
};

struct StageReport {
  int stage = 0;
  int rank = 0;
  std::string gpu_type;
  int dp = 1;
  int tp = 1;
  int first_layer = 0;
  int end_layer = 0;
  std::vector<int> devices;
  cost::ComputeTime compute;  // per micro-batch
  cost::StageMemory memory;   // static memory of this stage; activations for one micro-batch
};

struct PlanSimulation {
  schedule::Schedule schedule;  // with communication
  std::vector<StageReport> stages;
  SimOutput output;
  std::vector<double> memory_capacity;      // per rank: memory of its smallest device
  std::vector<double> activation_transfer;  // per cut s → s + 1: seconds, one micro-batch
  int devices = 0;
  double tokens_per_s = 0;
  double model_flops = 0;             // per iteration, without recomputation
  double achieved_flops_per_gpu = 0;  // model FLOPs / iteration time / devices
  double mfu = 0;                     // model FLOPs utilisation against the peaks
};

// The plan must have passed plan::check_plan against the cost model's model and cluster.
PlanSimulation simulate_plan(const cost::CostModel& costs, const plan::Plan& plan,
                             const SimOptions& options = {});

// Track names such as "stage 0: A100-40GB ×2 [0-1]".
std::string track_name(const PlanSimulation& simulation, int rank);

}  // namespace hyperpipe::sim
