// A schedule as `hyperpipe schedule` reports it: a JSON document ("hyperpipe.schedule/1",
// each rank's ops and the micro-batches it holds at its peak), or its op order as text.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::report {

inline constexpr const char* kScheduleFormat = "hyperpipe.schedule/1";

nlohmann::json schedule_document(const schedule::Schedule& s);

// A line saying what it is, then a line per rank: its peak in flight and its ops (with the
// sends and receives where `communication`).
void print_schedule(const schedule::Schedule& s, bool communication, std::ostream& out);

}  // namespace hyperpipe::report
