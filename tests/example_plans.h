// The shipped example plans, changed for a test and written to a temporary file.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_files.h"

namespace hyperpipe::testing {

// The GPT-3 2.7B example plan with its cluster named by absolute path (so the copy finds
// it) and `memory_margin` set; returns the copy's path.
inline std::string example_plan_with_margin(double margin, const std::string& name) {
  std::ifstream in(HYPERPIPE_EXAMPLES "/plans/gpt3-2.7b-4stage.json");
  auto plan = nlohmann::json::parse(in);
  plan["cluster"] = HYPERPIPE_EXAMPLES "/clusters/a100-v100-t4.yaml";
  plan["memory_margin"] = margin;
  return write_temp_file(name, plan.dump());
}

}  // namespace hyperpipe::testing
