// A plan simulated on the cost model: per-stage costs and transfers from cost::CostModel,
// the plan's schedule with its communication, and the figures a user asks for.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/schedule/schedule.h"
#include "hyperpipe/sim/measured_compute.h"
#include "hyperpipe/sim/simulator.h"

namespace hyperpipe::sim {

struct SimOptions {
  // A replay: these stages' compute as a run measured it instead of the cost model's.
  const MeasuredComputes* measured = nullptr;
  // How the framework that runs the plan exchanges activations and gradients; unset: as
  // the plan's `runtime` does (plan/framework.h: ours posts them asynchronously,
  // DeepSpeed's and Megatron-LM's 1F1B block).
  std::optional<P2pMode> p2p;
  // Whether the tracks get their timeline (ops, intervals, memory over time) or only their
  // names and devices: SimInput::record_timeline.
  bool timeline = true;
};

struct StageReport {
  int pipeline = 0;  // 0: the plan's own; p: its replicas[p - 1]
  int stage = 0;     // within its pipeline
  int rank = 0;      // within its pipeline
  std::string gpu_type;
  int dp = 1;
  int tp = 1;
  int first_layer = 0;
  int end_layer = 0;
  std::vector<int> devices;
  cost::ComputeTime compute;       // per micro-batch
  cost::StageMemory memory;        // static memory of this stage; activations for one micro-batch
  double activation_transfer = 0;  // seconds, one micro-batch to the next stage (0: last)
  double replica_sync = 0;         // seconds, summing its gradients across the plan's pipelines
};

// Every pipeline of the plan, one after the other: stages, ranks and tracks of the plan's
// own pipeline first, then those of each replica.
struct PlanSimulation {
  // Per pipeline, with communication; without ops where no timeline was recorded.
  std::vector<schedule::Schedule> schedules;
  std::vector<int> first_rank;  // per pipeline: its first rank in output.ranks
  std::vector<StageReport> stages;
  SimOutput output;                     // iteration_time: of the whole plan
  std::vector<double> memory_capacity;  // per rank: memory of its smallest device
  std::vector<double> memory_limit;     // per rank: what a plan may use of it (the margin off)
  // Per rank: its device's predicted peak by term (device_memory.h), activations as the
  // schedule holds them at their peak; total() is output.ranks[r].peak_memory_bytes.
  std::vector<cost::StageMemory> device_peaks;
  int devices = 0;
  double tokens_per_s = 0;
  double model_flops = 0;             // per iteration, without recomputation
  double achieved_flops_per_gpu = 0;  // model FLOPs / iteration time / devices
  double mfu = 0;                     // model FLOPs utilisation against the peaks
  // Some device is a CPU stand-in (its type has a `speed`): its times are this host's
  // where profiled, so FLOP/s against the GPU type's peak (MFU) mean nothing.
  bool stand_ins = false;
  P2pMode p2p = P2pMode::async;  // how the exchanges met compute (SimOptions, runtime)
  // How the layers without a profile were estimated (the cost model's).
  cost::Estimator estimator = cost::Estimator::ops;

  int pipelines() const { return static_cast<int>(first_rank.size()); }
  // The reports of pipeline p's stages.
  std::vector<const StageReport*> pipeline_stages(int p) const;
};

// The plan must have passed plan::check_plan against the cost model's model and cluster.
PlanSimulation simulate_plan(const cost::CostModel& costs, const plan::Plan& plan,
                             const SimOptions& options = {});

// Per rank (as output.ranks counts them), what its device holds at least whatever the
// timing: its static memory and the activations the forwards before its first backward
// keep, held as simulate_plan holds them (allocator reserve, what lies outside it). The
// simulated peak itself where every backward is whole (1F1B, GPipe): the warm-up is the
// peak. Without events, so far cheaper than simulate_plan.
std::vector<double> memory_floor(const cost::CostModel& costs, const plan::Plan& plan);

// Whether some rank's memory_floor exceeds what the plan may use of its device: then the
// plan cannot fit; where false it may still not.
bool overflows_before_any_backward(const cost::CostModel& costs, const plan::Plan& plan);

// Track names such as "stage 0: A100-40GB ×2 [0-1]", or "pipeline 1, stage 0: …" for
// the ranks of a replica. `rank` counts over all pipelines, as output.ranks does.
// The link a transfer between two stages' groups crosses: the slowest of those between rank
// i of one group and rank i mod n of the other.
cluster::Link slowest_pair_link(const cluster::Cluster& cluster, const cost::DeviceGroup& from,
                                const cost::DeviceGroup& to);

std::string track_name(const PlanSimulation& simulation, int rank);

}  // namespace hyperpipe::sim
