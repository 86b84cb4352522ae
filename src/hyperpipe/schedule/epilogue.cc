#include "hyperpipe/schedule/epilogue.h"

#include <algorithm>
#include <numeric>

namespace hyperpipe::schedule {

Schedule add_epilogue(Schedule schedule, const EpilogueOptions& options) {
  const auto tied_ranks = collective_ranks(schedule, OpKind::tied_embedding);
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    const auto& ops = schedule.ops[rank];
    // Where each chunk's weight gradients are all done: after its last W or BW and the
    // sends right after that op.
    std::vector<size_t> ready(static_cast<size_t>(schedule.chunks), 0);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind != OpKind::backward_weight && ops[i].kind != OpKind::backward) continue;
      size_t end = i + 1;
      while (end < ops.size() &&
             (ops[end].kind == OpKind::send_backward || ops[end].kind == OpKind::send_forward)) {
        ++end;
      }
      ready[ops[i].chunk] = end;
    }
    std::vector<int> chunks(static_cast<size_t>(schedule.chunks));
    std::iota(chunks.begin(), chunks.end(), 0);
    std::stable_sort(chunks.begin(), chunks.end(),
                     [&](int a, int b) { return ready[a] < ready[b]; });
    std::vector<Op> with_epilogue;
    with_epilogue.reserve(ops.size() + chunks.size() + 4);
    size_t next_chunk = 0;
    const auto all_reduce = [&](int chunk) {
      with_epilogue.push_back({OpKind::all_reduce, -1, chunk, -1});
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      with_epilogue.push_back(ops[i]);
      while (options.overlap_allreduce && next_chunk < chunks.size() &&
             ready[chunks[next_chunk]] == i + 1) {
        all_reduce(chunks[next_chunk++]);
      }
    }
    while (next_chunk < chunks.size()) all_reduce(chunks[next_chunk++]);
    if (options.replicas) with_epilogue.push_back({OpKind::sync_replicas, -1, 0, -1});
    if (options.tied_embeddings &&
        std::find(tied_ranks.begin(), tied_ranks.end(), rank) != tied_ranks.end()) {
      with_epilogue.push_back({OpKind::tied_embedding, -1, 0, -1});
    }
    with_epilogue.push_back({OpKind::global_norm, -1, 0, -1});
    with_epilogue.push_back({OpKind::optimizer_step, -1, 0, -1});
    schedule.ops[rank] = std::move(with_epilogue);
  }
  return schedule;
}

std::vector<int> collective_ranks(const Schedule& schedule, OpKind kind) {
  if (kind == OpKind::tied_embedding) {
    const int first = schedule.rank_of_stage(0);
    const int last = schedule.rank_of_stage(schedule.stages() - 1);
    return first == last ? std::vector<int>{first} : std::vector<int>{first, last};
  }
  std::vector<int> all(static_cast<size_t>(schedule.ranks));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

}  // namespace hyperpipe::schedule
