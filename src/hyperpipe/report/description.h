// What `hyperpipe describe` is asked for: a model and a cluster (files or catalogue names),
// loaded, checked against the settings and described by the cost model, with a layer's
// op-by-op estimate where asked.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hyperpipe/report/describe_report.h"
#include "hyperpipe/report/estimate_report.h"

namespace hyperpipe::report {

struct DescribeRequest {
  std::string model;                      // catalogue name, model .yaml or config.json
  std::string cluster;                    // catalogue name or cluster .yaml
  std::optional<std::string> profiles{};  // a profile database to prefer over estimates
  DescribeSettings settings{};
  cost::Estimator estimator = cost::CostOptions{}.estimator;
  std::optional<EstimateSettings> estimate{};  // set: the report's `op_estimate` too
};

// The hyperpipe.describe/1 document. InputError naming --seq for a sequence longer than a
// GPT's learned positions, and --tp for a degree that does not divide the attention heads.
nlohmann::json describe(const DescribeRequest& request);

}  // namespace hyperpipe::report
