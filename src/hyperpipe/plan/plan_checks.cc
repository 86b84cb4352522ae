#include "hyperpipe/plan/plan_checks.h"

#include <fmt/format.h>

#include <map>

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/common/error.h"

namespace hyperpipe::plan {
namespace {

// Where pipeline `p` of a plan sits in its document: "" for the plan's own, else
// "replicas[p-1].".
std::string pipeline_field(int p) {
  return p == 0 ? std::string() : fmt::format("replicas[{}].", p - 1);
}

// A device of the plan: which pipeline and pipeline rank use it.
struct DeviceUse {
  int pipeline = 0;
  int rank = 0;
};

void check_pipeline(const Pipeline& plan, int p, const model::Model& model,
                    const cluster::Cluster& cluster, const std::string& source,
                    std::map<int, DeviceUse>& owner) {
  const auto reject = [&](int stage, const std::string& what) {
    throw InputError(source, fmt::format("{}stages[{}]", pipeline_field(p), stage), what);
  };
  const int layers = model.num_layers();
  const int end = plan.stages.back().end_layer;
  if (end != layers) {
    throw InputError(source, pipeline_field(p) + "stages",
                     fmt::format("the stages cover layers [0, {}), but model {} has {} layers "
                                 "(embedding, {} blocks, head): the last stage must end at {}",
                                 end, model.config().name, layers, model.config().layers, layers));
  }
  const int device_count = static_cast<int>(cluster.devices().size());
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    const StagePlan& stage = plan.stages[s];
    const int rank = s % plan.ranks();
    for (int device : stage.devices) {
      if (device >= device_count) {
        reject(s, fmt::format("device {} does not exist: cluster {} has devices 0-{}", device,
                              cluster.name(), device_count - 1));
      }
      const auto [it, fresh] = owner.emplace(device, DeviceUse{p, rank});
      if (!fresh && (it->second.pipeline != p || it->second.rank != rank)) {
        reject(s, fmt::format("device {} is already used by {}stages[{}]", device,
                              pipeline_field(it->second.pipeline), it->second.rank));
      }
    }
    const std::string& type = cluster.device_type(stage.devices.front()).name;
    for (int device : stage.devices) {
      if (!cluster::same_gpu_name(cluster.device_type(device).name, type)) {
        reject(s,
               fmt::format("a stage runs on one GPU type, but device {} is a {} and "
                           "device {} a {}",
                           stage.devices.front(), type, device, cluster.device_type(device).name));
      }
    }
    const auto tp = static_cast<size_t>(stage.tp);
    for (size_t r = 0; r < static_cast<size_t>(stage.dp); ++r) {
      const int node = cluster.devices()[stage.devices[r * tp]].node;
      for (size_t t = 1; t < tp; ++t) {
        if (cluster.devices()[stage.devices[index_in_group(r, t, tp)]].node != node) {
          reject(s, fmt::format("tensor parallelism stays inside a node, but the tp "
                                "group of devices {}-{} spans nodes",
                                stage.devices[index_in_group(r, 0, tp)],
                                stage.devices[index_in_group(r, tp - 1, tp)]));
        }
      }
    }
    // Each tensor-parallel shard holds an equal part of these (Megatron-LM's split).
    const auto& config = model.config();
    for (const auto& [count, what] :
         {std::pair<int64_t, const char*>{config.heads, "attention heads"},
          {config.kv_heads, "key/value heads (kv_heads)"},
          {config.ffn_hidden, "MLP columns (ffn_hidden)"}}) {
      if (count % stage.tp != 0) {
        reject(s, fmt::format("tp = {} must divide the model's {} {}", stage.tp, count, what));
      }
    }
    if (plan.micro_batch_size < stage.dp) {
      reject(s, fmt::format("dp = {} needs a micro-batch of at least {} sequences, the "
                            "plan has {}",
                            stage.dp, stage.dp, plan.micro_batch_size));
    }
  }
}

}  // namespace

void check_plan(const Plan& plan, const model::Model& model, const cluster::Cluster& cluster,
                const std::string& source) {
  std::map<int, DeviceUse> owner;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    check_pipeline(plan.pipeline(p), p, model, cluster, source, owner);
  }
  const auto& config = model.config();
  if (config.flavour == model::Flavour::gpt && plan.seq_len > config.seq_len) {
    throw InputError(source, "seq_len",
                     fmt::format("expected at most the model's {} learned positions, got {}",
                                 config.seq_len, plan.seq_len));
  }
  // Sequence parallelism cuts each sequence into tp equal parts.
  const int64_t seq = config.sequence_length(plan.seq_len);
  for (int p = 0; plan.sequence_parallel && p < plan.pipeline_count(); ++p) {
    for (const auto& stage : plan.pipeline(p).stages) {
      if (stage.tp > 1 && seq % stage.tp != 0) {
        throw InputError(source, "sequence_parallel",
                         fmt::format("sequences that split evenly over every stage's tp: {} "
                                     "tokens over tp = {}",
                                     seq, stage.tp));
      }
    }
  }
}

}  // namespace hyperpipe::plan
