// A predicted timeline beside a measured one, device group by device group: compute, the
// gradient sums and the rest (bubble and waits for transfers), predicted against
// measured. `hyperpipe compare` reports it from files; `hyperpipe train` at the end of
// every run with profiles.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::report {

// A "hyperpipe.comparison/1" document (docs/formats.md).
nlohmann::json compare_timelines(const trace::Timeline& predicted, const trace::Timeline& measured);

// Why `measured` is not a run of the plan `predicted` is of: a track on devices the
// prediction has no group for (or a group no track ran), or a group whose ops differ;
// nullopt when they match.
std::optional<std::string> plan_mismatch(const trace::Timeline& predicted,
                                         const trace::Timeline& measured);

// The predicted track of the device group a measured process belongs to: the one whose
// devices include the process's device; -1 when none does (plan_mismatch says so).
int matching_track(const trace::Timeline& predicted, const trace::Track& measured);

// The document as a table, one row per device group, and the iteration line.
// Without `times`, the memory alone (a prediction of other devices' speed, as CPU
// stand-ins costed from GPU datasheets, still predicts their memory).
void print_comparison(const nlohmann::json& report, std::ostream& out, bool times = true);

// The plan's iteration on the simulator with the compute `measured` shows in place of the
// cost model's (transfers and gradient sums stay the model's); nothing when no process of
// `measured` ran on the plan's devices.
std::optional<double> replayed_iteration(const cost::CostModel& costs, const plan::Plan& plan,
                                         const trace::Timeline& measured);

// Adds the replay to a comparison document: its iteration and its error against the
// measured one.
void add_replay(nlohmann::json& report, double replayed, const trace::Timeline& measured);

// Both timelines in one Chrome trace, a process each: predicted, then measured, each
// measured process named after its predicted device group.
std::string both_traces(const trace::Timeline& predicted, const trace::Timeline& measured);

// Both Gantt charts on one time axis, predicted above measured, the iterations and their
// difference in the subtitle.
std::string both_charts(const trace::Timeline& predicted, const trace::Timeline& measured);

}  // namespace hyperpipe::report
