// Passes over a schedule: add communication, prove it runs, measure its memory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::schedule {

// Adds the point-to-point ops: a receive right before each op whose input comes from
// another rank, a send right after each op whose output goes to another rank. Neighbouring
// stages on the same rank (one rank, several chunks) exchange nothing. Taken by value: a
// schedule passed as a temporary is reused, not copied.
Schedule insert_communication(Schedule schedule);

// Proves the schedule runs: every rank holds one F and one BW (or one B and one W) per
// micro-batch and chunk; every send has its receive; executing with zero costs (a send
// never blocks, an op waits for its inputs) finishes every op. Returns nullopt when valid,
// otherwise what is wrong (for a deadlock: where each stuck rank waits and for what).
std::optional<std::string> validate(const Schedule& schedule);

// The forward half of a schedule, for evaluation: each rank's F ops with their sends and
// receives, in the schedule's order, then GN (the loss summed over every rank). A
// subsequence of a schedule that runs (validate), waiting on nothing the original does not
// wait on earlier: it runs too.
Schedule forwards_only(const Schedule& schedule);

// Per rank, the most micro-batches (counted per chunk) whose forward has run and whose
// backward (B or BW) has not: what sets the peak activation memory.
std::vector<int> peak_in_flight(const Schedule& schedule);

}  // namespace hyperpipe::schedule
