#include "hyperpipe/report/memory_breakdown.h"

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/report/table.h"

namespace hyperpipe::report {

using nlohmann::json;

json memory_json(const cost::StageMemory& memory) {
  json terms = json::array();
  for (const auto& term : memory.terms()) {
    terms.push_back({{"name", term.name}, {"bytes", term.bytes}, {"source", term.source}});
  }
  return {{"terms", terms},
          {"allocator_ratio", memory.allocator_ratio},
          {"total_bytes", memory.total()}};
}

void print_memory_table(const std::vector<std::pair<std::string, json>>& rows, std::ostream& out,
                        const std::string& indent) {
  if (rows.empty()) return;
  // The terms in the order the first row lists them; a column only where some row has it.
  std::vector<std::string> names;
  for (const auto& term : rows.front().second["terms"]) {
    const std::string name = term["name"];
    bool used = false;
    for (const auto& row : rows) {
      for (const auto& other : row.second["terms"]) {
        used = used || (other["name"] == name && other["bytes"].get<double>() > 0);
      }
    }
    if (used) names.push_back(name);
  }
  std::vector<std::string> headers{"Device group"};
  for (const auto& name : names) headers.push_back(">" + name);
  headers.push_back(">total");
  Table table(headers);
  for (const auto& [label, memory] : rows) {
    std::vector<std::string> cells{label};
    for (const auto& name : names) {
      double bytes = 0;
      for (const auto& term : memory["terms"]) {
        if (term["name"] == name) bytes = term["bytes"].get<double>();
      }
      cells.push_back(format_bytes(bytes));
    }
    cells.push_back(format_bytes(memory["total_bytes"].get<double>()));
    table.add_row(cells);
  }
  table.print(out, indent);
}

}  // namespace hyperpipe::report
