// What `hyperpipe plan` reports: the plan chosen with its prediction (the plan file), its
// stages per pipeline, memory by term, and with the search's result the baselines, and for
// --explain the planning's phases, the peers' spaces, the ideal iteration and the best plan
// per stage order. A "hyperpipe.planning/1" document, or the same as tables.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "hyperpipe/planner/planner.h"

namespace hyperpipe::report {

inline constexpr const char* kPlanningFormat = "hyperpipe.planning/1";

// The plan with its prediction: the file `plan --out` writes.
nlohmann::json plan_document(const planner::ScoredPlan& scored);

// The "hyperpipe.planning/1" document of `chosen` (for `model` on `cluster`, sequences of
// `seq` tokens); with `result` (none for a baseline), the search's alternatives, and the
// peers' spaces where `explain`.
nlohmann::json planning_report(const planner::ScoredPlan& chosen, const planner::PlanResult* result,
                               bool explain, const std::string& model, const std::string& cluster,
                               int64_t seq);

// The same as tables.
void print_planning(const planner::ScoredPlan& chosen, const planner::PlanResult* result,
                    bool explain, const std::string& model, const std::string& cluster, int64_t seq,
                    std::ostream& out);

}  // namespace hyperpipe::report
