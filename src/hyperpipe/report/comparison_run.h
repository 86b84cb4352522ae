// What `hyperpipe compare` is asked for: a predicted and a measured timeline file (those
// `hyperpipe train --timeline` writes) compared, and, given the run's plan, the plan
// replayed with the measured compute.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::report {

struct ComparisonRequest {
  std::string predicted;                // NAME.predicted.json
  std::string measured;                 // NAME.json
  std::optional<std::string> plan;      // to replay
  std::optional<std::string> profiles;  // for what the replay does not take from the run
};

struct Comparison {
  trace::Timeline predicted;
  trace::Timeline measured;
  nlohmann::json report;  // hyperpipe.comparison/1, with the replay where asked
};

// InputError naming the file at fault: one that is not a timeline, a measured run of
// another plan than the prediction's, a plan none of whose devices the run ran on.
Comparison compare_files(const ComparisonRequest& request);

}  // namespace hyperpipe::report
