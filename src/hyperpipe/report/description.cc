#include "hyperpipe/report/description.h"

#include <fmt/format.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::report {

nlohmann::json describe(const DescribeRequest& request) {
  const model::Model model = model::load_model(request.model);
  const cluster::Cluster cluster = cluster::load_cluster(request.cluster);
  std::optional<cost::ProfileDb> profiles;
  if (request.profiles) {
    profiles = cost::ProfileDb::load_for(*request.profiles, model.config().name);
  }
  const DescribeSettings& settings = request.settings;
  const model::TransformerConfig& config = model.config();
  // A GPT's positions are learned: it has none beyond its own sequence length.
  if (config.flavour == model::Flavour::gpt && settings.seq_len > config.seq_len) {
    throw InputError(
        "--seq", std::to_string(settings.seq_len),
        fmt::format("expected at most the model's {} learned positions", config.seq_len));
  }
  if (config.heads % settings.tp != 0) {
    throw InputError(
        "--tp", std::to_string(settings.tp),
        fmt::format("expected a divisor of the model's {} attention heads", config.heads));
  }
  cost::CostOptions options;
  options.estimator = request.estimator;
  const cost::CostModel costs(model, cluster, options, profiles ? &*profiles : nullptr);
  nlohmann::json report = describe_report(costs, settings);
  if (request.estimate) report["op_estimate"] = estimate_report(costs, settings, *request.estimate);
  return report;
}

}  // namespace hyperpipe::report
