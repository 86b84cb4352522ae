// The options of a five-step run of 1,000 tokens a step that keeps its metrics in
// `metrics`: what the training report's and the progress lines' tests run with.
#pragma once

#include <string>

#include "hyperpipe/report/training_report.h"

namespace hyperpipe::report::testing {

inline TrainReportOptions report_options(const std::string& metrics) {
  TrainReportOptions options;
  options.steps = 5;
  options.tokens_per_step = 1000;
  options.metrics_path = metrics;
  return options;
}

}  // namespace hyperpipe::report::testing
