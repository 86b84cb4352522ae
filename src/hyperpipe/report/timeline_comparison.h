// A predicted timeline beside a measured one, device group by device group: compute, the
// gradient sums and the rest (bubble and waits for transfers), predicted against
// measured. `hyperpipe compare` reports it from files; `hyperpipe train` at the end of
// every run with profiles.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

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

}  // namespace hyperpipe::report
