#include "hyperpipe/schedule/generators.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace hyperpipe::schedule {
namespace {

// The message is formatted only when the check fails: schedules are built for every plan
// the planner simulates, and formatting each message up front cost a tenth of planning.
template <typename... Args>
void require(bool condition, fmt::format_string<Args...> message, Args&&... args) {
  if (!condition) throw std::invalid_argument(fmt::format(message, std::forward<Args>(args)...));
}

void check_sizes(int ranks, int micro_batches) {
  require(ranks >= 1, "a schedule needs at least 1 stage, got {}", ranks);
  require(micro_batches >= 1, "a schedule needs at least 1 micro-batch, got {}", micro_batches);
}

Schedule empty(ScheduleKind kind, int ranks, int micro_batches, int chunks) {
  Schedule s;
  s.kind = kind;
  s.ranks = ranks;
  s.micro_batches = micro_batches;
  s.chunks = chunks;
  s.ops.resize(ranks);
  return s;
}

Op compute(OpKind kind, int micro_batch, int chunk = 0) {
  return {kind, micro_batch, chunk, -1};
}

}  // namespace

Schedule gpipe(int ranks, int micro_batches) {
  check_sizes(ranks, micro_batches);
  Schedule s = empty(ScheduleKind::gpipe, ranks, micro_batches, 1);
  for (auto& ops : s.ops) {
    for (int mb = 0; mb < micro_batches; ++mb) ops.push_back(compute(OpKind::forward, mb));
    for (int mb = 0; mb < micro_batches; ++mb) ops.push_back(compute(OpKind::backward, mb));
  }
  return s;
}

Schedule hetero_1f1b(int micro_batches, const std::vector<int>& warmup) {
  const int ranks = static_cast<int>(warmup.size());
  check_sizes(ranks, micro_batches);
  for (int r = 0; r < ranks; ++r) {
    require(warmup[r] >= 1, "warm-up depth of stage {} must be at least 1, got {}", r, warmup[r]);
    // The message names stage r − 1, so it is formatted only when there is one.
    if (r > 0 && warmup[r] > warmup[r - 1]) {
      throw std::invalid_argument(
          fmt::format("warm-up depth of stage {} ({}) exceeds that of stage {} ({}): the "
                      "pipeline would deadlock",
                      r, warmup[r], r - 1, warmup[r - 1]));
    }
  }
  Schedule s = empty(ScheduleKind::hetero_1f1b, ranks, micro_batches, 1);
  for (int r = 0; r < ranks; ++r) {
    const int depth = std::min(warmup[r], micro_batches);
    s.warmup.push_back(depth);
    auto& ops = s.ops[r];
    int next_forward = 0;
    while (next_forward < depth) ops.push_back(compute(OpKind::forward, next_forward++));
    for (int mb = 0; mb < micro_batches; ++mb) {
      ops.push_back(compute(OpKind::backward, mb));
      if (next_forward < micro_batches) ops.push_back(compute(OpKind::forward, next_forward++));
    }
  }
  return s;
}

Schedule one_f_one_b(int ranks, int micro_batches) {
  check_sizes(ranks, micro_batches);
  std::vector<int> depths;
  depths.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) depths.push_back(ranks - r);
  Schedule s = hetero_1f1b(micro_batches, depths);
  s.kind = ScheduleKind::one_f_one_b;
  return s;
}

Schedule interleaved_1f1b(int ranks, int micro_batches, int chunks) {
  check_sizes(ranks, micro_batches);
  require(chunks >= 1, "chunks must be at least 1, got {}", chunks);
  if (chunks == 1) {
    Schedule s = one_f_one_b(ranks, micro_batches);
    s.kind = ScheduleKind::interleaved;
    return s;
  }
  Schedule s = empty(ScheduleKind::interleaved, ranks, micro_batches, chunks);
  const int total = micro_batches * chunks;
  // Micro-batches move in groups through chunk 0, 1, … (backward: the last chunk first).
  // Groups hold S micro-batches; when S does not divide m the first group also takes the
  // m mod S left over: warm-up covers the first group, and later groups are never
  // larger than one before them, so the 1F1B phase always has a forward to run.
  const int groups = std::max(1, micro_batches / ranks);
  const int first_size = micro_batches - (groups - 1) * ranks;
  const auto group_start = [&](int group) {
    return group == 0 ? 0 : first_size + (group - 1) * ranks;
  };
  const auto group_size = [&](int group) { return group == 0 ? first_size : ranks; };
  // The k-th forward (or backward) of a rank as (micro-batch, chunk).
  const auto unit = [&](int k, bool forward) {
    const int first_span = first_size * chunks;
    const int group = k < first_span ? 0 : 1 + (k - first_span) / (ranks * chunks);
    const int within = group == 0 ? k : (k - first_span) % (ranks * chunks);
    const int size = group_size(group);
    const int chunk = within / size;
    const int micro_batch = group_start(group) + within % size;
    return std::pair{micro_batch, forward ? chunk : chunks - 1 - chunk};
  };
  for (int r = 0; r < ranks; ++r) {
    int warmup = micro_batches < ranks ? total : 2 * (ranks - r - 1) + (chunks - 1) * group_size(0);
    warmup = std::min(warmup, total);
    s.warmup.push_back(std::min(warmup + 1, total));
    auto& ops = s.ops[r];
    int forwards = 0;
    int backwards = 0;
    const auto add = [&](OpKind kind, int k) {
      const auto [micro_batch, chunk] = unit(k, kind == OpKind::forward);
      ops.push_back(compute(kind, micro_batch, chunk));
    };
    while (forwards < warmup) add(OpKind::forward, forwards++);
    while (forwards < total) {
      add(OpKind::forward, forwards++);
      add(OpKind::backward, backwards++);
    }
    while (backwards < total) add(OpKind::backward, backwards++);
  }
  return s;
}

Schedule zb_h1(int ranks, int micro_batches) {
  const Schedule base = one_f_one_b(ranks, micro_batches);
  Schedule s = empty(ScheduleKind::zb_h1, ranks, micro_batches, 1);
  s.warmup = base.warmup;
  for (int r = 0; r < ranks; ++r) {
    const int deferred = r;
    int next_weight = 0;
    int backwards = 0;
    for (const Op& op : base.ops[r]) {
      if (op.kind != OpKind::backward) {
        s.ops[r].push_back(op);
        continue;
      }
      s.ops[r].push_back(compute(OpKind::backward_input, op.micro_batch));
      ++backwards;
      if (backwards > deferred) s.ops[r].push_back(compute(OpKind::backward_weight, next_weight++));
    }
    while (next_weight < micro_batches) {
      s.ops[r].push_back(compute(OpKind::backward_weight, next_weight++));
    }
  }
  return s;
}

Schedule make_schedule(ScheduleKind kind, int ranks, int micro_batches, int chunks,
                       const std::vector<int>& warmup) {
  require(kind == ScheduleKind::interleaved || chunks == 1,
          "only the interleaved schedule runs several chunks per stage, got {} "
          "chunks for {}",
          chunks, to_string(kind));
  switch (kind) {
    case ScheduleKind::gpipe:
      return gpipe(ranks, micro_batches);
    case ScheduleKind::one_f_one_b:
      return one_f_one_b(ranks, micro_batches);
    case ScheduleKind::interleaved:
      return interleaved_1f1b(ranks, micro_batches, chunks);
    case ScheduleKind::zb_h1:
      return zb_h1(ranks, micro_batches);
    case ScheduleKind::hetero_1f1b:
      require(warmup.empty() || static_cast<int>(warmup.size()) == ranks,
              "hetero-1f1b needs one warm-up depth per stage: {} stages, {} depths", ranks,
              warmup.size());
      if (warmup.empty()) {
        Schedule s = one_f_one_b(ranks, micro_batches);
        s.kind = ScheduleKind::hetero_1f1b;
        return s;
      }
      return hetero_1f1b(micro_batches, warmup);
  }
  throw std::invalid_argument("unknown schedule kind");
}

std::vector<int> link_aware_warmup(const std::vector<double>& rank_time,
                                   const std::vector<double>& link_time,
                                   const std::vector<int>& max_in_flight) {
  const int ranks = static_cast<int>(rank_time.size());
  require(ranks >= 1, "link_aware_warmup needs at least one stage");
  require(static_cast<int>(link_time.size()) == ranks - 1,
          "link_aware_warmup needs one link time per pair of neighbouring stages");
  require(static_cast<int>(max_in_flight.size()) == ranks,
          "link_aware_warmup needs one memory bound per stage");
  std::vector<int> depth(ranks, 1);
  for (int r = ranks - 2; r >= 0; --r) {
    require(rank_time[r] > 0, "stage times must be positive");
    const int cover = static_cast<int>(std::ceil(2.0 * link_time[r] / rank_time[r]));
    depth[r] = depth[r + 1] + 1 + cover;
  }
  for (int r = 0; r < ranks; ++r) {
    require(max_in_flight[r] >= 1, "stage {} cannot hold even one micro-batch in flight", r);
    depth[r] = std::min(depth[r], max_in_flight[r]);
    if (r > 0) depth[r] = std::min(depth[r], depth[r - 1]);
  }
  return depth;
}

}  // namespace hyperpipe::schedule
