#include "hyperpipe/schedule/receive_posting.h"

#include <algorithm>

namespace hyperpipe::schedule {

int receive_lookahead(const Schedule& schedule, int rank) {
  // Interleaved schedules keep their own warm-up pattern, one chunk's stage after another.
  if (schedule.chunks != 1 || schedule.warmup.empty()) return 1;
  const auto& depth = schedule.warmup;
  const int last = schedule.ranks - 1;
  // Beyond 1F1B's one-deeper warm-up: forwards the stage before sends ahead, or (for the
  // gradients coming back) micro-batches this stage keeps in flight beyond the next's.
  const int from_before = rank > 0 ? depth[rank - 1] - depth[rank] - 1 : 0;
  const int from_after = rank < last ? depth[rank] - depth[rank + 1] - 1 : 0;
  return 1 + 2 * std::max({0, from_before, from_after});
}

std::vector<size_t> receives_posted_at(const Schedule& schedule, int rank, size_t index) {
  std::vector<size_t> receives;
  receives_posted_at(schedule, rank, index, receives);
  return receives;
}

void receives_posted_at(const Schedule& schedule, int rank, size_t index,
                        std::vector<size_t>& receives) {
  const auto& ops = schedule.ops[rank];
  receives.clear();
  int computes_left = receive_lookahead(schedule, rank);
  for (size_t j = index + 1; j < ops.size() && computes_left > 0; ++j) {
    if (is_compute(ops[j].kind)) {
      --computes_left;
    } else if (ops[j].kind == OpKind::recv_forward || ops[j].kind == OpKind::recv_backward) {
      receives.push_back(j);
    }
  }
}

}  // namespace hyperpipe::schedule
