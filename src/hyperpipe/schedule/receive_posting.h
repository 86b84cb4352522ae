// When a rank posts its receives. Neither Gloo nor NCCL moves a message before its
// receive is posted (Gloo's sender waits for the receiver's notice), so how far ahead the
// runtime posts decides how much of a transfer hides behind compute; the simulator posts
// by the same rule.
#pragma once

#include <vector>

#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::schedule {

// On reaching a compute op, a rank posts the receives of the next `receive_lookahead`
// compute ops. One is enough where each stage's warm-up is one deeper than the next's
// (1F1B): the upstream stage runs one micro-batch ahead. A warm-up `extra` deeper than
// that on either side of a link (hetero-1F1B's, before a slow one) keeps `extra` more
// micro-batches on the way across it, forwards one way and gradients back, so both ends
// post two compute ops (a forward and a backward) further per extra one; the memory is
// one more stage input or output per extra micro-batch.
int receive_lookahead(const Schedule& schedule, int rank);

// The indices into `schedule.ops[rank]` of the receives a rank posts on reaching the
// compute op at `index`: those before each of the next `receive_lookahead` compute ops.
std::vector<size_t> receives_posted_at(const Schedule& schedule, int rank, size_t index);
// The same into `receives` (cleared first), for a caller that asks at every op and keeps
// one buffer.
void receives_posted_at(const Schedule& schedule, int rank, size_t index,
                        std::vector<size_t>& receives);

}  // namespace hyperpipe::schedule
