#include "hyperpipe/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <stdexcept>

namespace hyperpipe::sim {
namespace {

using schedule::Op;
using schedule::OpKind;

constexpr double kUnknown = -1.0;

// A message between stages: when it was sent and when it arrives.
struct Message {
  double sent = kUnknown;
  double arrival = kUnknown;
};

class Engine {
 public:
  explicit Engine(const SimInput& input)
      : in_(input),
        s_(input.schedule),
        stages_(s_.stages()),
        m_(s_.micro_batches),
        cursor_(s_.ranks, 0),
        compute_free_(s_.ranks, 0.0),
        input_ready_(s_.ranks, 0.0),
        input_sent_(s_.ranks, 0.0),
        waiting_(s_.ranks, false),
        send_free_(s_.ranks, 0.0),
        recv_free_(s_.ranks, 0.0),
        activation_(static_cast<size_t>(stages_) * m_),
        gradient_(static_cast<size_t>(stages_) * m_),
        in_use_(s_.ranks, 0.0),
        in_flight_(s_.ranks, 0),
        last_weight_grad_(stages_, 0.0) {
    int links = 0;
    for (const auto& t : in_.activations) links = std::max(links, t.link + 1);
    for (const auto& t : in_.gradients) links = std::max(links, t.link + 1);
    link_free_.assign(links, 0.0);
    out_.ranks.resize(s_.ranks);
    out_.timeline.tracks.resize(s_.ranks);
    static_bytes_.assign(s_.ranks, 0.0);
    for (int stage = 0; stage < stages_; ++stage) {
      static_bytes_[s_.rank_of_stage(stage)] += in_.stages[stage].static_bytes;
    }
    for (int r = 0; r < s_.ranks; ++r) {
      static_bytes_[r] += in_.reserved_bytes.empty() ? 0.0 : in_.reserved_bytes[r];
      out_.timeline.tracks[r].memory.push_back({0.0, static_bytes_[r]});
    }
  }

  SimOutput run() {
    for (int r = 0; r < s_.ranks; ++r) events_.push({0.0, r});
    while (!events_.empty()) {
      const auto [time, rank] = events_.top();
      events_.pop();
      advance(rank);
    }
    for (int r = 0; r < s_.ranks; ++r) {
      if (cursor_[r] < s_.ops[r].size()) {
        throw std::runtime_error(fmt::format("simulation stuck: rank {} cannot run {}", r,
                                             to_string(s_.ops[r][cursor_[r]], s_.chunks > 1)));
      }
    }
    finish_iteration();
    out_.simulated_ops = s_.op_count();
    return std::move(out_);
  }

 private:
  using Event = std::pair<double, int>;  // (time, rank)

  size_t cell(int stage, int mb) const { return static_cast<size_t>(stage) * m_ + mb; }

  void advance(int r) {
    const auto& ops = s_.ops[r];
    while (cursor_[r] < ops.size()) {
      const Op& op = ops[cursor_[r]];
      const int stage = s_.stage_of(r, op.chunk);
      switch (op.kind) {
        case OpKind::recv_forward:
        case OpKind::recv_backward: {
          const Message& message = op.kind == OpKind::recv_forward
                                       ? activation_[cell(stage, op.micro_batch)]
                                       : gradient_[cell(stage, op.micro_batch)];
          if (message.arrival == kUnknown) {
            waiting_[r] = true;
            return;
          }
          waiting_[r] = false;
          if (message.arrival > input_ready_[r]) {
            input_ready_[r] = message.arrival;
            input_sent_[r] = message.sent;
          }
          ++cursor_[r];
          break;
        }
        case OpKind::send_forward:
          send(r, stage, stage + 1, in_.activations.at(stage),
               activation_[cell(stage + 1, op.micro_batch)], "send F", op);
          ++cursor_[r];
          break;
        case OpKind::send_backward:
          send(r, stage, stage - 1, in_.gradients.at(stage - 1),
               gradient_[cell(stage - 1, op.micro_batch)], "send B", op);
          ++cursor_[r];
          break;
        default:
          compute(r, stage, op);
          ++cursor_[r];
          events_.push({compute_free_[r], r});
          return;  // later sends must be issued at this op's finish, in time order
      }
    }
  }

  void send(int r, int stage, int target_stage, const TransferCost& cost, Message& message,
            const char* label, const Op& op) {
    const int target = s_.rank_of_stage(target_stage);
    const double issued = compute_free_[r];
    double start = std::max({issued, send_free_[r], recv_free_[target]});
    if (cost.link >= 0) start = std::max(start, link_free_[cost.link]);
    const double released = start + cost.occupancy;
    send_free_[r] = released;
    recv_free_[target] = released;
    if (cost.link >= 0) link_free_[cost.link] = released;
    message = {issued, released + cost.latency};
    out_.timeline.tracks[r].communication.push_back(
        {label, stage, op.micro_batch, op.chunk, start, message.arrival});
    if (waiting_[target]) events_.push({issued, target});
  }

  void compute(int r, int stage, const Op& op) {
    const StageCost& cost = in_.stages[stage];
    double duration = 0;
    switch (op.kind) {
      case OpKind::forward:
        duration = cost.forward;
        break;
      case OpKind::backward_input:
        duration = cost.backward_input;
        break;
      case OpKind::backward_weight:
        duration = cost.backward_weight;
        break;
      default:
        duration = cost.backward_input + cost.backward_weight - cost.split_extra;
        break;
    }
    RankStats& stats = out_.ranks[r];
    const double start = std::max(compute_free_[r], input_ready_[r]);
    const double waited = start - compute_free_[r];
    if (waited > 0) stats.comm_wait += std::min(waited, input_ready_[r] - input_sent_[r]);
    const double end = start + duration;
    stats.busy += duration;
    compute_free_[r] = end;
    input_ready_[r] = 0;
    input_sent_[r] = 0;
    auto& track = out_.timeline.tracks[r];
    track.compute.push_back(
        {std::string(schedule::letter(op.kind)), stage, op.micro_batch, op.chunk, start, end});
    if (op.kind == OpKind::forward) {
      in_use_[r] += cost.activation_bytes;
      stats.peak_in_flight = std::max(stats.peak_in_flight, ++in_flight_[r]);
      stats.peak_activation_bytes = std::max(stats.peak_activation_bytes, in_use_[r]);
      track.memory.push_back({start, static_bytes_[r] + in_use_[r]});
    } else if (op.kind == OpKind::backward_input) {
      // B frees what only it needed; W's inputs stay until W (with recomputation they may
      // exceed what F kept).
      in_use_[r] += cost.weight_gradient_bytes - cost.activation_bytes;
      --in_flight_[r];
      stats.peak_activation_bytes = std::max(stats.peak_activation_bytes, in_use_[r]);
      track.memory.push_back({end, static_bytes_[r] + in_use_[r]});
    } else if (op.kind == OpKind::backward_weight) {
      in_use_[r] -= cost.weight_gradient_bytes;
      track.memory.push_back({end, static_bytes_[r] + in_use_[r]});
    } else if (op.kind == OpKind::backward) {
      in_use_[r] -= cost.activation_bytes;
      --in_flight_[r];
      track.memory.push_back({end, static_bytes_[r] + in_use_[r]});
    }
    if (op.kind == OpKind::backward_weight || op.kind == OpKind::backward) {
      last_weight_grad_[stage] = std::max(last_weight_grad_[stage], end);
    }
  }

  // Gradient all-reduce per chunk, then the optimizer step of all chunks.
  void finish_iteration() {
    for (int r = 0; r < s_.ranks; ++r) {
      RankStats& stats = out_.ranks[r];
      stats.compute_end = compute_free_[r];
      std::vector<int> stages;
      stages.reserve(static_cast<size_t>(s_.chunks));
      for (int c = 0; c < s_.chunks; ++c) stages.push_back(s_.stage_of(r, c));
      std::sort(stages.begin(), stages.end(),
                [&](int a, int b) { return last_weight_grad_[a] < last_weight_grad_[b]; });
      double reduce_free = 0;
      double optimizer = 0;
      auto& track = out_.timeline.tracks[r];
      for (int stage : stages) {
        const double ready = in_.overlap_allreduce ? last_weight_grad_[stage] : stats.compute_end;
        const double start = std::max(reduce_free, ready);
        reduce_free = start + in_.stages[stage].allreduce;
        if (in_.stages[stage].allreduce > 0) {
          track.communication.push_back(
              {"allreduce", stage, -1, s_.chunk_of_stage(stage), start, reduce_free});
        }
        optimizer += in_.stages[stage].optimizer;
      }
      stats.reduced = std::max(reduce_free, stats.compute_end);
      stats.allreduce = stats.reduced - stats.compute_end;
      double optimizer_start = stats.reduced;
      double sync = 0;
      for (int stage : stages) sync += in_.stages[stage].replica_sync;
      if (sync > 0) {
        const double start = std::max(stats.reduced, in_.replica_barrier);
        optimizer_start = start + sync;
        track.communication.push_back({"replica sync", -1, -1, 0, start, optimizer_start});
      }
      stats.replica_sync = optimizer_start - stats.reduced;
      stats.optimizer = optimizer;
      stats.end = optimizer_start + optimizer;
      if (optimizer > 0) {
        track.compute.push_back({"optimizer", -1, -1, 0, optimizer_start, stats.end});
      }
      stats.peak_memory_bytes = static_bytes_[r] + stats.peak_activation_bytes;
      out_.iteration_time = std::max(out_.iteration_time, stats.end);
    }
    for (auto& stats : out_.ranks) {
      // What is left is idle time; summing the parts can leave a rounding residue below 0.
      stats.bubble = std::max(0.0, out_.iteration_time - stats.busy - stats.comm_wait -
                                       stats.allreduce - stats.replica_sync - stats.optimizer);
    }
  }

  const SimInput& in_;
  const schedule::Schedule& s_;
  int stages_;
  int m_;
  std::vector<size_t> cursor_;
  std::vector<double> compute_free_;
  std::vector<double> input_ready_;  // when the inputs of the next compute op arrive
  std::vector<double> input_sent_;   // when the latest of them was sent
  std::vector<bool> waiting_;        // blocked on a receive
  std::vector<double> send_free_;
  std::vector<double> recv_free_;
  std::vector<double> link_free_;
  std::vector<Message> activation_;  // [stage, mb]: the activation stage `stage` consumes
  std::vector<Message> gradient_;    // [stage, mb]: the gradient stage `stage` consumes
  std::vector<double> in_use_;       // activation bytes held per rank
  std::vector<int> in_flight_;
  std::vector<double> static_bytes_;
  std::vector<double> last_weight_grad_;  // per stage
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  SimOutput out_;
};

}  // namespace

SimOutput simulate(const SimInput& input) {
  const auto& s = input.schedule;
  const int stages = s.stages();
  if (static_cast<int>(s.ops.size()) != s.ranks ||
      static_cast<int>(input.stages.size()) != stages ||
      static_cast<int>(input.activations.size()) != stages - 1 ||
      static_cast<int>(input.gradients.size()) != stages - 1 ||
      (!input.reserved_bytes.empty() && static_cast<int>(input.reserved_bytes.size()) != s.ranks)) {
    throw std::invalid_argument(
        fmt::format("simulator input: {} stages need {} stage costs and {} transfer costs each way",
                    stages, stages, stages - 1));
  }
  return Engine(input).run();
}

}  // namespace hyperpipe::sim
