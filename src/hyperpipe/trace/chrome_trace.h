// Timelines as Chrome trace event JSON: opens in Perfetto (ui.perfetto.dev) and
// chrome://tracing. One process per timeline, per track a compute thread and a
// communication thread, and a memory counter; every activation or gradient passed from
// one stage to the next is a flow arrow, from its send (or, where the timeline has no
// send, the op that produced it) to the op that consumed it.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::trace {

nlohmann::json chrome_trace(const Timeline& timeline);

// Several timelines in one trace, a process each in this order (compare: predicted and
// measured), each named after its timeline's title.
nlohmann::json chrome_trace(const std::vector<const Timeline*>& timelines);

}  // namespace hyperpipe::trace
