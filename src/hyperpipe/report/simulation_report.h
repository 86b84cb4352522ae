// What `hyperpipe simulate` reports: per stage and per device group times, memory against
// capacity, and the iteration's throughput. Built as JSON; tables render the same document.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "hyperpipe/plan/plan.h"
#include "hyperpipe/sim/plan_simulation.h"

namespace hyperpipe::report {

inline constexpr const char* kSimulationFormat = "hyperpipe.simulation/1";

nlohmann::json simulation_report(const plan::Plan& plan, const sim::PlanSimulation& simulation,
                                 const std::string& model_name, const std::string& cluster_name,
                                 int64_t seq_len);

void print_simulation_tables(const nlohmann::json& report, std::ostream& out);

// Which stages' layer times were profiled and which estimated, and how: one line.
std::string layer_cost_note(const nlohmann::json& report);

// The report's per-device peaks by term, and a line for each device over its limit.
void print_memory_terms(const nlohmann::json& report, std::ostream& out);

}  // namespace hyperpipe::report
