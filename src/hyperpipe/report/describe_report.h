// What `hyperpipe describe` reports: the model's layers, the cluster's devices and links,
// and the cost model's view of each layer on each GPU type. Built once as JSON; the table
// view is rendered from the same document, so both always agree.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "hyperpipe/cost/cost_model.h"

namespace hyperpipe::report {

inline constexpr const char* kDescribeFormat = "hyperpipe.describe/1";

struct DescribeSettings {
  int64_t micro_batch = 1;
  int64_t seq_len = 0;  // 0: the model's
  int tp = 1;
  model::Recompute recompute = model::Recompute::none;
};

// Tensor parallelism stays inside a node: the requested degree, cut to the largest node of
// the type (uncut for a type the cluster has no node of).
int tp_within_a_node(const cluster::Cluster& cluster, const std::string& type_name, int tp);

nlohmann::json describe_report(const cost::CostModel& costs, const DescribeSettings& settings);

// Renders the report as tables.
void print_describe_tables(const nlohmann::json& report, std::ostream& out);

}  // namespace hyperpipe::report
