// When this process started, as the kernel recorded it: the time a start-up measured from
// inside the process misses (exec, loading the shared libraries, static initialisers),
// which for a libtorch program is a good part of a restart.
#pragma once

#include <optional>

namespace hyperpipe {

// Seconds since the Unix epoch at which this process started (its age from Linux's /proc,
// to the kernel's clock tick, 10 ms on most systems, taken from the wall clock now);
// nothing where /proc cannot tell.
std::optional<double> process_start_time();

}  // namespace hyperpipe
