#include "hyperpipe/plan/plan_checks.h"

#include <fmt/format.h>

#include <map>

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/common/error.h"

namespace hyperpipe::plan {
namespace {

[[noreturn]] void reject(const std::string& source, int stage, const std::string& what) {
  throw InputError(source, fmt::format("stages[{}]", stage), what);
}

}  // namespace

void check_plan(const Plan& plan, const model::Model& model, const cluster::Cluster& cluster,
                const std::string& source) {
  const int layers = model.num_layers();
  const int end = plan.stages.back().end_layer;
  if (end != layers) {
    throw InputError(source, "stages",
                     fmt::format("the stages cover layers [0, {}), but model {} has {} layers "
                                 "(embedding, {} blocks, head): the last stage must end at {}",
                                 end, model.config().name, layers, model.config().layers, layers));
  }
  const int device_count = static_cast<int>(cluster.devices().size());
  std::map<int, int> owner;  // device -> rank using it
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    const StagePlan& stage = plan.stages[s];
    const int rank = s % plan.ranks();
    for (int device : stage.devices) {
      if (device >= device_count) {
        reject(source, s,
               fmt::format("device {} does not exist: cluster {} has devices 0-{}", device,
                           cluster.name(), device_count - 1));
      }
      const auto [it, fresh] = owner.emplace(device, rank);
      if (!fresh && it->second != rank) {
        reject(source, s, fmt::format("device {} is already used by stage {}", device, it->second));
      }
    }
    const std::string& type = cluster.device_type(stage.devices.front()).name;
    for (int device : stage.devices) {
      if (!cluster::same_gpu_name(cluster.device_type(device).name, type)) {
        reject(source, s,
               fmt::format("a stage runs on one GPU type, but device {} is a {} and "
                           "device {} a {}",
                           stage.devices.front(), type, device, cluster.device_type(device).name));
      }
    }
    for (int r = 0; r < stage.dp; ++r) {
      const int node = cluster.devices()[stage.devices[r * stage.tp]].node;
      for (int t = 1; t < stage.tp; ++t) {
        if (cluster.devices()[stage.devices[r * stage.tp + t]].node != node) {
          reject(
              source, s,
              fmt::format("tensor parallelism stays inside a node, but the tp "
                          "group of devices {}-{} spans nodes",
                          stage.devices[r * stage.tp], stage.devices[r * stage.tp + stage.tp - 1]));
        }
      }
    }
    if (model.config().heads % stage.tp != 0) {
      reject(source, s,
             fmt::format("tp = {} must divide the model's {} attention heads", stage.tp,
                         model.config().heads));
    }
    if (plan.micro_batch_size < stage.dp) {
      reject(source, s,
             fmt::format("dp = {} needs a micro-batch of at least {} sequences, the "
                         "plan has {}",
                         stage.dp, stage.dp, plan.micro_batch_size));
    }
  }
  const auto& config = model.config();
  if (config.flavour == model::Flavour::gpt && plan.seq_len > config.seq_len) {
    throw InputError(source, "seq_len",
                     fmt::format("expected at most the model's {} learned positions, got {}",
                                 config.seq_len, plan.seq_len));
  }
}

}  // namespace hyperpipe::plan
