// What `hyperpipe describe --estimate` adds: a layer's compute estimated op by op on each GPU
// type (cost/op_estimate.h), with each op's shape, FLOPs, bytes, what bounds it and its
// time. Built as JSON; the tables are rendered from the same document.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "hyperpipe/report/describe_report.h"

namespace hyperpipe::report {

struct EstimateSettings {
  std::string layer = "block";  // embedding, block, head or all
  // Any GPU type the cluster file or the catalogue defines; the cluster's own if unset.
  std::optional<std::string> gpu_type;
};

nlohmann::json estimate_report(const cost::CostModel& costs, const DescribeSettings& describe,
                               const EstimateSettings& settings);

void print_estimate_tables(const nlohmann::json& estimates, std::ostream& out);

}  // namespace hyperpipe::report
