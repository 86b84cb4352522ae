// The plan as a JSON document (docs/formats.md, "Plan").
#pragma once

#include <nlohmann/json.hpp>

#include "hyperpipe/plan/plan.h"

namespace hyperpipe::plan {

nlohmann::json to_json(const Plan& plan);

}  // namespace hyperpipe::plan
