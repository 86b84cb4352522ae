#include "hyperpipe/report/comparison_run.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/report/timeline_comparison.h"
#include "hyperpipe/trace/timeline_json.h"

namespace hyperpipe::report {
namespace {

trace::Timeline load_timeline(const std::string& path) {
  const auto doc = nlohmann::json::parse(
      read_input_file(path, kMaxTimelineFileBytes, "a timeline (hyperpipe train --timeline)"),
      nullptr, false);
  if (doc.is_discarded()) throw InputError(path, "", "a JSON timeline document");
  return trace::timeline_from_json(doc, path);
}

// The plan's iteration replayed with the measured compute (replayed_iteration).
double replayed(const ComparisonRequest& request, const trace::Timeline& measured) {
  const auto [plan, model, cluster] = plan::load_checked_plan(*request.plan);
  std::optional<cost::ProfileDb> profiles;
  if (request.profiles) {
    profiles = cost::ProfileDb::load_for(*request.profiles, model.config().name);
  }
  const cost::CostModel costs(model, cluster, {}, profiles ? &*profiles : nullptr);
  const auto iteration = replayed_iteration(costs, plan, measured);
  if (!iteration) {
    throw InputError(request.measured, "tracks",
                     fmt::format("processes on the devices of {}", *request.plan));
  }
  return *iteration;
}

}  // namespace

Comparison compare_files(const ComparisonRequest& request) {
  Comparison comparison{load_timeline(request.predicted), load_timeline(request.measured), {}};
  if (const auto why = plan_mismatch(comparison.predicted, comparison.measured)) {
    throw InputError(
        request.measured, "tracks",
        fmt::format("expected a run of the plan {} predicts; {}", request.predicted, *why));
  }
  comparison.report = compare_timelines(comparison.predicted, comparison.measured);
  if (request.plan) {
    add_replay(comparison.report, replayed(request, comparison.measured), comparison.measured);
  }
  return comparison;
}

}  // namespace hyperpipe::report
