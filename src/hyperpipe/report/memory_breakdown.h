// A device's predicted memory by term (cost::StageMemory::terms) as reports render it: a
// JSON object and a table with one row per device group.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "hyperpipe/cost/cost_model.h"

namespace hyperpipe::report {

// {"terms": [{"name", "bytes", "source"}, …], "allocator_ratio", "total_bytes"}
// (docs/formats.md, "Memory breakdown").
nlohmann::json memory_json(const cost::StageMemory& memory);

// One row per (label, memory_json) pair, one column per term that is not zero everywhere,
// then the total.
void print_memory_table(const std::vector<std::pair<std::string, nlohmann::json>>& rows,
                        std::ostream& out, const std::string& indent);

}  // namespace hyperpipe::report
