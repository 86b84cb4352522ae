// A Timeline's tracks as plain JSON, so processes can hand their measured tracks to the
// one that writes the run's timeline.
#pragma once

#include <nlohmann/json.hpp>

#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::trace {

nlohmann::json track_to_json(const Track& track);
// Throws nlohmann::json::exception on a malformed document.
Track track_from_json(const nlohmann::json& json);

}  // namespace hyperpipe::trace
