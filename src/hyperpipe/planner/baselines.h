// What users do today, as plans the same tools accept and the same simulator scores:
//   uniform     Megatron-LM / DeepSpeed "uniform": equal blocks per stage;
//   parameters  DeepSpeed "parameters": balanced parameter counts per stage;
//   capability  blocks in proportion to each stage's peak FLOP/s, no search.
// All three take the devices in the cluster file's order, cut into equal groups of one
// GPU type used as data parallel (tp 1), with one recomputation setting for every stage —
// the least that fits — and, like a user tuning them, the stage count and micro-batch
// size that simulate fastest.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hyperpipe/planner/scored_plan.h"

namespace hyperpipe::planner {

enum class Baseline { uniform, parameters, capability };

std::string_view to_string(Baseline baseline);
std::optional<Baseline> parse_baseline(std::string_view name);
std::vector<std::string> baseline_names();

struct BatchSettings {
  BatchSettings() = default;
  BatchSettings(std::string model, std::string cluster, int64_t global_batch, int64_t seq_len,
                std::vector<int64_t> micro_batch_sizes,
                plan::Framework runtime = plan::Framework::hyperpipe)
      : model(std::move(model)),
        cluster(std::move(cluster)),
        global_batch(global_batch),
        seq_len(seq_len),
        micro_batch_sizes(std::move(micro_batch_sizes)),
        runtime(runtime) {}

  std::string model;  // references written into plans
  std::string cluster;
  int64_t global_batch = 1;
  int64_t seq_len = 0;                     // 0: the model's
  std::vector<int64_t> micro_batch_sizes;  // candidates
  // The framework meant to run the plans (plan/framework.h): they are simulated as it runs
  // them.
  plan::Framework runtime = plan::Framework::hyperpipe;

  // Every plan the planner makes of this batch starts here: the model and cluster it
  // names, its runtime and sequence length, no stage yet.
  plan::Plan new_plan() const {
    plan::Plan plan;
    plan.model = model;
    plan.cluster = cluster;
    plan.runtime = runtime;
    plan.seq_len = seq_len;
    return plan;
  }
};

// The fastest plan of this baseline that fits, or the fastest that does not if none fits;
// nullopt when the devices cannot be cut into groups of one type at all.
std::optional<ScoredPlan> best_baseline(const cost::CostModel& costs, const BatchSettings& batch,
                                        Baseline baseline);

}  // namespace hyperpipe::planner
