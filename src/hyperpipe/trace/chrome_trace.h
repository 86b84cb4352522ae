// Timelines as Chrome trace event JSON: opens in Perfetto (ui.perfetto.dev) and
// chrome://tracing. One process per timeline, per track a compute thread and a
// communication thread, and a memory counter.
#pragma once

#include <nlohmann/json.hpp>

#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::trace {

nlohmann::json chrome_trace(const Timeline& timeline);

}  // namespace hyperpipe::trace
