// The Plan document: how a model is cut into pipeline stages, which devices run each
// stage, how the batch is split and which schedule runs it. Written by the planner or by
// hand; read by the simulator and the runtime, which need not know how it was made.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/dtype.h"
#include "hyperpipe/model/layer.h"
#include "hyperpipe/plan/framework.h"
#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::plan {

inline constexpr const char* kPlanFormat = "hyperpipe.plan/1";

struct StagePlan {
  int first_layer = 0;  // layers [first_layer, end_layer) of the model's chain
  int end_layer = 0;
  std::vector<int> devices;  // global device ids, dp · tp of them (rank = dp_index · tp + tp_index)
  int dp = 1;
  int tp = 1;
  model::Recompute recompute = model::Recompute::none;

  bool operator==(const StagePlan&) const = default;
};

// One pipeline: the whole model cut into stages over its own devices, running its share
// of the global batch as micro-batches under one schedule.
struct Pipeline {
  int64_t micro_batch_size = 1;  // sequences per micro-batch, split over each stage's dp
  int micro_batches = 1;         // per iteration
  schedule::ScheduleKind schedule = schedule::ScheduleKind::one_f_one_b;
  int chunks = 1;           // model chunks per device group (interleaved)
  std::vector<int> warmup;  // hetero-1f1b: forwards before the first backward, per rank
  // In pipeline order; with chunks > 1, stage s runs on the same devices as s mod ranks.
  std::vector<StagePlan> stages;

  int ranks() const { return static_cast<int>(stages.size()) / chunks; }
  int64_t samples() const { return micro_batch_size * micro_batches; }

  bool operator==(const Pipeline&) const = default;
};

// A plan is its first pipeline plus, for outer data parallelism over device groups of
// different composition, further pipelines (`replicas`). Every pipeline holds the whole
// model on devices of its own and takes its own share of the global batch (a faster one
// a larger share); each iteration sums the gradients of every layer across pipelines.
// Identical replicas need no second pipeline: they are stages with a larger dp.
struct Plan : Pipeline {
  std::string model;    // catalogue name or file path (relative to the plan file)
  std::string cluster;  // built-in cluster name or file path (relative to the plan file)
  int64_t seq_len = 0;  // 0: the model's
  // Each chunk's gradient all-reduce starts as soon as its last weight gradient is done,
  // beside the backward work left (schedule/epilogue.h), instead of after the last op.
  bool overlap_allreduce = false;
  // The type the data-parallel all-reduce moves a mixed-precision run's fp32 main grads
  // in: fp32 (Megatron-LM's default), or bf16/fp16 for half the bytes.
  model::DType gradient_reduce_dtype = model::DType::fp32;
  // The precision the plan was costed in and its run trains in unless told otherwise (`plan
  // --dtype`); unset: the model's own.
  std::optional<model::DType> dtype;
  // Megatron-LM's sequence parallelism in every stage with tp > 1 (runtime/
  // sequence_parallel.h): the norms' and dropouts' activations split along the sequence.
  bool sequence_parallel = false;
  // The framework meant to run the plan (framework.h): the simulator predicts it as that
  // framework runs it, and reading refuses a plan it cannot express.
  Framework runtime = Framework::hyperpipe;
  // Each stage's optimizer state sharded over its dp ranks (ZeRO stage 1, Megatron-LM's
  // distributed optimizer; cost/cost_options.h). HyperPipe's runtime does not run it yet.
  bool shard_optimizer = false;
  // The share of each device's memory the plan leaves unused (cost::CostOptions::
  // memory_margin); unset: the cost model's default.
  std::optional<double> memory_margin;
  std::vector<Pipeline> replicas;

  int pipeline_count() const { return 1 + static_cast<int>(replicas.size()); }
  const Pipeline& pipeline(int p) const { return p == 0 ? *this : replicas.at(p - 1); }
  Pipeline& pipeline(int p) { return p == 0 ? *this : replicas.at(p - 1); }
  int64_t global_batch() const {
    int64_t total = samples();
    for (const auto& replica : replicas) total += replica.samples();
    return total;
  }

  bool operator==(const Plan&) const = default;
};

// Reads a plan document (JSON or YAML); checks its own consistency: formats, sizes,
// contiguous layer ranges, dp · tp devices per stage, chunks dividing the stage count,
// for the plan's pipeline and each of its replicas.
// Throws InputError naming the file and field.
Plan read_plan(const YamlField& root);
Plan load_plan(const std::string& path);

// The rank order, in one place: Megatron-LM's (tensor-parallel ranks adjacent, then
// data-parallel, then pipeline stages), which torchtitan's mesh and DeepSpeed's topology
// share. Ranks go pipeline by pipeline (the plan's own first), device group by device
// group; inside a group, the process of data-parallel index i and tensor-parallel index t
// is the (i · tp + t)-th, on the group's device of that index (StagePlan::devices). The
// runtime (plan/rank_layout.h) and the exporters (exporter/rank_placement.h) number
// their processes by it.
constexpr int index_in_group(int dp_index, int tp_index, int tp) {
  return dp_index * tp + tp_index;
}

// The device of each rank of a run of the plan, rank by rank.
std::vector<int> devices_in_rank_order(const Plan& plan);

// The ranks of the plan's processes on `devices` (every device when empty), ascending: a
// launcher's share of a run across hosts. Throws InputError (naming --devices-here) for a
// device the plan does not have, or one given twice.
std::vector<int> ranks_of_devices(const Plan& plan, const std::vector<int>& devices);

// Device ids as compact text: "0-3,8,12-15".
std::string format_devices(const std::vector<int>& devices);

// Layers are numbered along the model's chain (0 the embedding, then the blocks, the last
// the head) and a stage's are the half-open range [first, end), as plan files store them;
// tables print them so too: "[0, 14)".
std::string format_layers(int first_layer, int end_layer);

// The numbering, in words, for JSON documents' "layer_numbering".
inline constexpr const char* kLayerNumbering =
    "[first, end) along the model's chain: 0 the embedding, then the blocks, the last the head";

// The footnote of a table of stages over a chain of `chain_layers` layers: "Layers
// [first, end) of the chain: 0 the embedding, 1 to 32 the blocks, 33 the head, as in plan
// files".
std::string layer_numbering_note(int chain_layers);

// The plan's model or cluster reference as a path relative to the plan file when such a
// file exists there; otherwise unchanged (a catalogue or built-in name, or a path from
// the current directory).
std::string resolve_reference(const std::string& plan_path, const std::string& reference);

// The same, as a plan written elsewhere (beside checkpoints, say) must name it: an
// absolute path where it is a file, else the built-in or catalogue name unchanged.
std::string reference_from_anywhere(const std::string& plan_path, const std::string& reference);

// How a plan about to be written at `plan_path` names a model or cluster given from the
// current directory: a file by its path from the plan's folder (resolve_reference finds it
// again from anywhere), a name, or anything where the plan is not written, unchanged.
std::string reference_beside(const std::optional<std::string>& plan_path,
                             const std::string& name_or_path);

// Each device group's layers and devices, pipeline by pipeline: "[0, 5) on 0 · [5, 8) on
// 1,2 ‖ [0, 8) on 3".
std::string format_stages(const Plan& plan);

}  // namespace hyperpipe::plan
