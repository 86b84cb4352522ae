// A Timeline's tracks as plain JSON, so processes can hand their measured tracks to the
// one that writes the run's timeline.
#pragma once

#include <nlohmann/json.hpp>

#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::trace {

inline constexpr const char* kTimelineFormat = "hyperpipe.timeline/1";

nlohmann::json track_to_json(const Track& track);
// Throws nlohmann::json::exception on a malformed document.
Track track_from_json(const nlohmann::json& json);

// {"format": "hyperpipe.timeline/1", "title", "tracks": [...]}.
nlohmann::json timeline_to_json(const Timeline& timeline);
// Throws InputError naming `source` when the document is not a timeline.
Timeline timeline_from_json(const nlohmann::json& json, const std::string& source);

}  // namespace hyperpipe::trace
