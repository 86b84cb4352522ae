#include "hyperpipe/schedule/passes.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "hyperpipe/schedule/epilogue.h"

namespace hyperpipe::schedule {
namespace {

// What has happened so far in a zero-cost run, per (stage, micro-batch).
class Progress {
 public:
  explicit Progress(const Schedule& s)
      : stages_(s.stages()),
        micro_batches_(s.micro_batches),
        forward_(cells(), false),
        backward_(cells(), false),
        weight_(cells(), false),
        got_activation_(cells(), false),
        got_gradient_(cells(), false) {}

  size_t at(int stage, int mb) const { return static_cast<size_t>(stage) * micro_batches_ + mb; }
  size_t cells() const { return static_cast<size_t>(stages_) * micro_batches_; }

  int stages_;
  int micro_batches_;
  std::vector<bool> forward_;
  std::vector<bool> backward_;  // B or BW
  std::vector<bool> weight_;    // W or BW
  std::vector<bool> got_activation_;
  std::vector<bool> got_gradient_;
};

bool has_communication(const Schedule& s) {
  for (const auto& ops : s.ops) {
    for (const Op& op : ops) {
      if (is_communication(op.kind)) return true;
    }
  }
  return false;
}

// Why `op` on `rank` cannot run yet; empty when it can.
std::string blocker(const Schedule& s, const Progress& p, int rank, const Op& op, bool comm) {
  const int stage = s.stage_of(rank, op.chunk);
  const int last = s.stages() - 1;
  const int mb = op.micro_batch;
  const auto remote = [&](int other) { return s.rank_of_stage(other) != rank; };
  switch (op.kind) {
    case OpKind::forward:
      if (stage == 0) return "";
      if (comm && remote(stage - 1)) {
        return p.got_activation_[p.at(stage, mb)] ? "" : "its receive of the activation";
      }
      return p.forward_[p.at(stage - 1, mb)] ? "" : fmt::format("F{} of stage {}", mb, stage - 1);
    case OpKind::backward_input:
    case OpKind::backward:
      if (!p.forward_[p.at(stage, mb)]) return fmt::format("F{} of the same stage", mb);
      if (stage == last) return "";
      if (comm && remote(stage + 1)) {
        return p.got_gradient_[p.at(stage, mb)] ? "" : "its receive of the gradient";
      }
      return p.backward_[p.at(stage + 1, mb)] ? "" : fmt::format("B{} of stage {}", mb, stage + 1);
    case OpKind::backward_weight:
      return p.backward_[p.at(stage, mb)] ? "" : fmt::format("B{} of the same stage", mb);
    case OpKind::send_forward:
      return p.forward_[p.at(stage, mb)] ? "" : fmt::format("F{} of the same stage", mb);
    case OpKind::send_backward:
      return p.backward_[p.at(stage, mb)] ? "" : fmt::format("B{} of the same stage", mb);
    case OpKind::recv_forward:
    case OpKind::recv_backward:
      return "";  // handled with the message queue
    case OpKind::all_reduce:
    case OpKind::sync_replicas:
    case OpKind::tied_embedding:
    case OpKind::global_norm:
    case OpKind::optimizer_step:
      return "";  // the epilogue: ordered by check_epilogue, collectives in validate
  }
  return "";
}

using MessageKey = std::tuple<bool, int, int>;  // (is gradient, destination stage, micro-batch)

std::optional<std::string> check_ops_complete(const Schedule& s) {
  for (int rank = 0; rank < s.ranks; ++rank) {
    std::map<std::tuple<int, int, OpKind>, int> count;
    for (const Op& op : s.ops[rank]) {
      if (is_epilogue(op.kind)) continue;  // check_epilogue's
      if (op.micro_batch < 0 || op.micro_batch >= s.micro_batches || op.chunk < 0 ||
          op.chunk >= s.chunks) {
        return fmt::format("rank {}: {} is outside {} micro-batches and {} chunks", rank,
                           to_string(op, true), s.micro_batches, s.chunks);
      }
      if (is_compute(op.kind)) ++count[{op.chunk, op.micro_batch, op.kind}];
    }
    for (int chunk = 0; chunk < s.chunks; ++chunk) {
      for (int mb = 0; mb < s.micro_batches; ++mb) {
        const auto n = [&](OpKind kind) {
          const auto it = count.find({chunk, mb, kind});
          return it == count.end() ? 0 : it->second;
        };
        const Op shown{OpKind::forward, mb, chunk, -1};
        if (n(OpKind::forward) != 1) {
          return fmt::format("rank {}: {} appears {} times, expected once", rank,
                             to_string(shown, s.chunks > 1), n(OpKind::forward));
        }
        const bool combined = n(OpKind::backward) == 1 && n(OpKind::backward_input) == 0 &&
                              n(OpKind::backward_weight) == 0;
        const bool split = n(OpKind::backward) == 0 && n(OpKind::backward_input) == 1 &&
                           n(OpKind::backward_weight) == 1;
        if (!combined && !split) {
          return fmt::format(
              "rank {}: micro-batch {} chunk {} needs one BW or one B and one W, got {} BW, {} "
              "B, {} W",
              rank, mb, chunk, n(OpKind::backward), n(OpKind::backward_input),
              n(OpKind::backward_weight));
        }
      }
    }
  }
  return std::nullopt;
}

bool has_epilogue(const Schedule& s) {
  for (const auto& ops : s.ops) {
    for (const Op& op : ops) {
      if (is_epilogue(op.kind)) return true;
    }
  }
  return false;
}

// A schedule with an epilogue has it whole on every rank: one AR per chunk after that
// chunk's last weight gradient, RS on all ranks or none, TE on exactly the ranks of the
// first and last stage (or none), then GN, then OPT last.
std::optional<std::string> check_epilogue(const Schedule& s) {
  const auto tied = collective_ranks(s, OpKind::tied_embedding);
  int ranks_with_replica_sum = 0;
  int ranks_with_tied_sum = 0;
  for (int rank = 0; rank < s.ranks; ++rank) {
    const auto& ops = s.ops[rank];
    std::vector<int> all_reduces(static_cast<size_t>(s.chunks), 0);
    std::map<OpKind, int> count;
    size_t first_epilogue_collective = ops.size();
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind == OpKind::all_reduce) {
        if (op.chunk < 0 || op.chunk >= s.chunks) {
          return fmt::format("rank {}: AR of chunk {} outside its {} chunks", rank, op.chunk,
                             s.chunks);
        }
        if (++all_reduces[op.chunk] > 1) {
          return fmt::format("rank {}: chunk {} is all-reduced twice", rank, op.chunk);
        }
        continue;
      }
      if (op.kind == OpKind::backward || op.kind == OpKind::backward_weight) {
        if (all_reduces[op.chunk] > 0) {
          return fmt::format("rank {}: {} runs after the all-reduce of its chunk's gradients", rank,
                             to_string(op, s.chunks > 1));
        }
      }
      if (is_epilogue(op.kind)) {
        ++count[op.kind];
        first_epilogue_collective = std::min(first_epilogue_collective, i);
      } else if (first_epilogue_collective < ops.size()) {
        return fmt::format("rank {}: {} runs after {}", rank, to_string(op, s.chunks > 1),
                           to_string(ops[first_epilogue_collective]));
      }
    }
    for (int chunk = 0; chunk < s.chunks; ++chunk) {
      if (all_reduces[chunk] == 0) {
        return fmt::format("rank {}: chunk {}'s gradients are never all-reduced", rank, chunk);
      }
    }
    if (count[OpKind::global_norm] != 1 || count[OpKind::optimizer_step] != 1 ||
        ops.back().kind != OpKind::optimizer_step ||
        ops[ops.size() - 2].kind != OpKind::global_norm) {
      return fmt::format("rank {}: the epilogue must end with one GN and then one OPT", rank);
    }
    for (const OpKind kind : {OpKind::sync_replicas, OpKind::tied_embedding}) {
      if (count[kind] > 1) {
        return fmt::format("rank {}: {} appears {} times", rank, letter(kind), count[kind]);
      }
    }
    ranks_with_replica_sum += count[OpKind::sync_replicas];
    ranks_with_tied_sum += count[OpKind::tied_embedding];
    const bool holds_tied = std::find(tied.begin(), tied.end(), rank) != tied.end();
    if (count[OpKind::tied_embedding] == 1 && !holds_tied) {
      return fmt::format("rank {}: TE on a rank that holds neither the first nor the last stage",
                         rank);
    }
  }
  if (ranks_with_replica_sum != 0 && ranks_with_replica_sum != s.ranks) {
    return std::string("RS on some ranks only: every rank sums across the pipelines");
  }
  if (ranks_with_tied_sum != 0 && ranks_with_tied_sum != static_cast<int>(tied.size())) {
    return std::string("TE on one end only: the first and the last stage sum together");
  }
  return std::nullopt;
}

}  // namespace

Schedule insert_communication(Schedule schedule) {
  const int last = schedule.stages() - 1;
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    std::vector<Op> ops;
    ops.reserve(2 * schedule.ops[rank].size());
    const auto remote = [&](int stage) { return schedule.rank_of_stage(stage) != rank; };
    for (const Op& op : schedule.ops[rank]) {
      const int stage = schedule.stage_of(rank, op.chunk);
      const Op from_previous{OpKind::recv_forward, op.micro_batch, op.chunk,
                             stage > 0 ? schedule.rank_of_stage(stage - 1) : -1};
      const Op to_next{OpKind::send_forward, op.micro_batch, op.chunk,
                       stage < last ? schedule.rank_of_stage(stage + 1) : -1};
      const bool has_previous = stage > 0 && remote(stage - 1);
      const bool has_next = stage < last && remote(stage + 1);
      if (op.kind == OpKind::forward) {
        if (has_previous) ops.push_back(from_previous);
        ops.push_back(op);
        if (has_next) ops.push_back(to_next);
      } else if (is_backward(op.kind)) {
        if (has_next)
          ops.push_back({OpKind::recv_backward, op.micro_batch, op.chunk, to_next.peer});
        ops.push_back(op);
        if (has_previous) {
          ops.push_back({OpKind::send_backward, op.micro_batch, op.chunk, from_previous.peer});
        }
      } else {
        ops.push_back(op);
      }
    }
    schedule.ops[rank] = std::move(ops);
  }
  return schedule;
}

std::optional<std::string> validate(const Schedule& s) {
  if (s.ranks < 1 || s.micro_batches < 1 || s.chunks < 1 ||
      static_cast<int>(s.ops.size()) != s.ranks) {
    return std::string("the schedule has no stages, micro-batches or chunks");
  }
  if (auto incomplete = check_ops_complete(s)) return incomplete;
  if (has_epilogue(s)) {
    if (auto epilogue = check_epilogue(s)) return epilogue;
  }
  const bool comm = has_communication(s);
  Progress p(s);
  std::map<MessageKey, int> in_transit;
  std::vector<size_t> next(s.ranks, 0);
  const int last = s.stages() - 1;

  bool progressed = true;
  while (progressed) {
    progressed = false;
    for (int rank = 0; rank < s.ranks; ++rank) {
      while (next[rank] < s.ops[rank].size()) {
        const Op& op = s.ops[rank][next[rank]];
        if (is_epilogue(op.kind)) {
          if (!is_group_collective(op.kind)) {
            ++next[rank];
            progressed = true;
            continue;
          }
          // A collective ends when every rank taking part has reached it.
          const auto ranks = collective_ranks(s, op.kind);
          const bool all_there = std::all_of(ranks.begin(), ranks.end(), [&](int other) {
            return next[other] < s.ops[other].size() && s.ops[other][next[other]].kind == op.kind;
          });
          if (!all_there) break;
          for (int other : ranks) ++next[other];
          progressed = true;
          continue;
        }
        const int stage = s.stage_of(rank, op.chunk);
        const size_t cell = p.at(stage, op.micro_batch);
        if (op.kind == OpKind::recv_forward || op.kind == OpKind::recv_backward) {
          const bool gradient = op.kind == OpKind::recv_backward;
          const int source = gradient ? stage + 1 : stage - 1;
          if (source < 0 || source > last || s.rank_of_stage(source) != op.peer) {
            return fmt::format(
                "rank {}: {} receives from rank {}, but stage {}'s input comes "
                "from elsewhere",
                rank, to_string(op, s.chunks > 1), op.peer, stage);
          }
          auto it = in_transit.find({gradient, stage, op.micro_batch});
          if (it == in_transit.end() || it->second == 0) break;
          --it->second;
          (gradient ? p.got_gradient_ : p.got_activation_)[cell] = true;
        } else {
          if (!blocker(s, p, rank, op, comm).empty()) break;
          switch (op.kind) {
            case OpKind::forward:
              p.forward_[cell] = true;
              break;
            case OpKind::backward_input:
              p.backward_[cell] = true;
              break;
            case OpKind::backward:
              p.backward_[cell] = true;
              p.weight_[cell] = true;
              break;
            case OpKind::backward_weight:
              p.weight_[cell] = true;
              break;
            case OpKind::send_forward:
            case OpKind::send_backward: {
              const bool gradient = op.kind == OpKind::send_backward;
              const int target = gradient ? stage - 1 : stage + 1;
              if (target < 0 || target > last || s.rank_of_stage(target) != op.peer) {
                return fmt::format(
                    "rank {}: {} sends to rank {}, which does not run the "
                    "neighbouring stage",
                    rank, to_string(op, s.chunks > 1), op.peer);
              }
              ++in_transit[{gradient, target, op.micro_batch}];
              break;
            }
            default:
              break;
          }
        }
        ++next[rank];
        progressed = true;
      }
    }
  }

  std::string stuck;
  for (int rank = 0; rank < s.ranks; ++rank) {
    if (next[rank] == s.ops[rank].size()) continue;
    const Op& op = s.ops[rank][next[rank]];
    std::string why;
    if (is_group_collective(op.kind)) {
      for (int other : collective_ranks(s, op.kind)) {
        if (next[other] == s.ops[other].size() || s.ops[other][next[other]].kind != op.kind) {
          why = fmt::format("rank {} to reach {}", other, letter(op.kind));
          break;
        }
      }
    } else {
      why = blocker(s, p, rank, op, comm);
    }
    if (why.empty()) why = "a message that is never sent";
    stuck += fmt::format("{}rank {} waits at {} for {}", stuck.empty() ? "" : "; ", rank,
                         to_string(op, s.chunks > 1), why);
  }
  if (!stuck.empty()) return "deadlock: " + stuck;
  for (const auto& [key, count] : in_transit) {
    if (count > 0) {
      const auto& [gradient, stage, mb] = key;
      return fmt::format("the {} of micro-batch {} sent to stage {} is never received",
                         gradient ? "gradient" : "activation", mb, stage);
    }
  }
  return std::nullopt;
}

std::vector<int> peak_in_flight(const Schedule& schedule) {
  std::vector<int> peaks;
  for (const auto& ops : schedule.ops) {
    int now = 0;
    int peak = 0;
    for (const Op& op : ops) {
      if (op.kind == OpKind::forward) peak = std::max(peak, ++now);
      if (is_backward(op.kind)) --now;
    }
    peaks.push_back(peak);
  }
  return peaks;
}

Schedule forwards_only(const Schedule& schedule) {
  Schedule forwards = schedule;
  for (auto& ops : forwards.ops) {
    std::erase_if(ops, [](const Op& op) {
      return op.kind != OpKind::forward && op.kind != OpKind::send_forward &&
             op.kind != OpKind::recv_forward;
    });
    ops.push_back({OpKind::global_norm, -1, 0, -1});
  }
  return forwards;
}

}  // namespace hyperpipe::schedule
