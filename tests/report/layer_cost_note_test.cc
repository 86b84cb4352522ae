// The line plan and simulate print about where each stage's layer times came from.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hyperpipe/report/simulation_report.h"

namespace hyperpipe::report {
namespace {

using nlohmann::json;

// A report's fields the note reads: one pipeline, its stages' sources.
json report_of(const std::vector<std::string>& sources, const std::string& estimator) {
  json stages = json::array();
  for (size_t s = 0; s < sources.size(); ++s) {
    stages.push_back({{"pipeline", 0}, {"stage", s}, {"source", sources[s]}});
  }
  return {
      {"pipelines", json::array({json::object()})}, {"stages", stages}, {"estimator", estimator}};
}

TEST(LayerCostNote, NamesTheStagesProfiledAndThoseEstimated) {
  EXPECT_EQ(layer_cost_note(report_of({"profile", "profile"}, "ops")),
            "Layer times: profiled on every stage");
  EXPECT_EQ(layer_cost_note(report_of({"profile", "profile (interpolated)"}, "ops")),
            "Layer times: profiled (some between the micro-batch sizes measured) on every stage");
  EXPECT_EQ(
      layer_cost_note(report_of({"profile", "estimate", "profile+estimate", "estimate"}, "ops")),
      "Layer times: profiled on stage 0; estimated op by op on stage 1, stage 3 and on some "
      "layers of stage 2 (`hyperpipe describe --estimate` shows the ops, `hyperpipe profile` "
      "measures the layers)");
  EXPECT_EQ(layer_cost_note(report_of({"estimate"}, "roofline")),
            "Layer times: estimated by the roofline on every stage, no profile (`--estimator "
            "ops` prices each op instead)");
}

TEST(LayerCostNote, NamesThePipelineWhereSeveralRunSideBySide) {
  json report = report_of({"profile", "estimate"}, "ops");
  report["pipelines"].push_back(json::object());
  report["stages"][1]["pipeline"] = 1;
  report["stages"][1]["stage"] = 0;
  const std::string note = layer_cost_note(report);
  EXPECT_NE(note.find("profiled on pipeline 0 stage 0; estimated op by op on pipeline 1 stage 0"),
            std::string::npos)
      << note;
}

}  // namespace
}  // namespace hyperpipe::report
