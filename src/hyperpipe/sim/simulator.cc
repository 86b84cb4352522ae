#include "hyperpipe/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <stdexcept>

#include "hyperpipe/schedule/epilogue.h"
#include "hyperpipe/schedule/receive_posting.h"

namespace hyperpipe::sim {
namespace {

using schedule::Op;
using schedule::OpKind;

constexpr double kUnknown = -1.0;

// A message between stages: when it was sent, when its receiver posted the receive and
// when it arrives. An async send posted before its receive waits, off the compute stream,
// as `pending_send` of rank `sender`.
struct Message {
  double sent = kUnknown;
  double arrival = kUnknown;
  double posted = kUnknown;
  int sender = -1;
  const Op* pending_send = nullptr;
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
        reduce_free_(s_.ranks, 0.0),
        arrived_(s_.ranks, kUnknown),
        activation_(static_cast<size_t>(stages_) * m_),
        gradient_(static_cast<size_t>(stages_) * m_),
        in_use_(s_.ranks, 0.0),
        in_flight_(s_.ranks, 0),
        reduced_(s_.ranks, false) {
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
      if (in_.record_timeline) reserve_track(r);
      out_.timeline.tracks[r].static_bytes = static_bytes_[r];
      if (!in_.allocator_ratio.empty()) {
        out_.timeline.tracks[r].allocator_ratio = in_.allocator_ratio[r];
      }
      record_memory(r, 0.0, 0.0);
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
        throw SimulationStuck(fmt::format("simulation stuck: rank {} cannot run {}", r,
                                          to_string(s_.ops[r][cursor_[r]], s_.chunks > 1)));
      }
    }
    finish();
    out_.simulated_ops = s_.op_count();
    return std::move(out_);
  }

 private:
  static constexpr size_t index(OpKind kind) { return schedule::op_index(kind); }
  using Event = std::pair<double, int>;  // (time, rank)
  // What a handler tells the rank's loop: go on with the next op, stop until the time the
  // rank's compute is free (later ops are issued then, in time order), or wait for an
  // input or for the others at a collective (another rank's progress wakes it).
  enum class Next { op, at_compute_free, wait };
  using Handler = Next (Engine::*)(int rank, const Op& op);

  // One handler per op kind, as the runtime's executor has.
  static const schedule::OpKindTable<Handler>& handlers() {
    static constexpr schedule::OpKindTable<Handler> table = [] {
      schedule::OpKindTable<Handler> t{};
      t[index(OpKind::forward)] = &Engine::compute;
      t[index(OpKind::backward_input)] = &Engine::compute;
      t[index(OpKind::backward_weight)] = &Engine::compute;
      t[index(OpKind::backward)] = &Engine::compute;
      t[index(OpKind::send_forward)] = &Engine::send;
      t[index(OpKind::send_backward)] = &Engine::send;
      t[index(OpKind::recv_forward)] = &Engine::receive;
      t[index(OpKind::recv_backward)] = &Engine::receive;
      t[index(OpKind::all_reduce)] = &Engine::all_reduce;
      t[index(OpKind::sync_replicas)] = &Engine::collective;
      t[index(OpKind::tied_embedding)] = &Engine::collective;
      t[index(OpKind::global_norm)] = &Engine::collective;
      t[index(OpKind::optimizer_step)] = &Engine::optimizer_step;
      return t;
    }();
    static_assert(schedule::every_kind_handled(table), "an op kind has no handler");
    return table;
  }

  size_t cell(int stage, int mb) const { return static_cast<size_t>(stage) * m_ + mb; }

  // Room for what rank r's track will record, known from its ops: the planner re-scores
  // many long schedules, and growing these vectors op by op was a large share of its time.
  void reserve_track(int r) {
    size_t compute = 0, communication = 0;
    for (const Op& op : s_.ops[r]) {
      compute += schedule::is_compute(op.kind) ? 1 : 0;
      communication += schedule::is_communication(op.kind) ? 1 : 0;
    }
    auto& track = out_.timeline.tracks[r];
    track.ops.reserve(s_.ops[r].size());
    track.compute.reserve(compute);
    track.communication.reserve(communication);
    track.memory.reserve(compute + 1);
  }

  // Rank r is done with `op` (its list's next): on to the one after, and on its track.
  void ran(int r, const Op& op) {
    if (in_.record_timeline) {
      out_.timeline.tracks[r].ops.push_back(to_string(op, /*show_chunk=*/true));
    }
    ++cursor_[r];
  }

  // On rank r's track, where the timeline is recorded: what the device holds from `time` on.
  // (Intervals are pushed where in_.record_timeline is asked first, so that without it no
  // label is built.)
  void record_memory(int r, double time, double activations) {
    if (in_.record_timeline) {
      out_.timeline.tracks[r].memory.push_back({time, held(r, activations)});
    }
  }

  void advance(int r) {
    const auto& ops = s_.ops[r];
    while (cursor_[r] < ops.size()) {
      const Op& op = ops[cursor_[r]];
      const Next next = (this->*handlers()[index(op.kind)])(r, op);
      if (next == Next::wait) return;
      ran(r, op);
      if (next == Next::at_compute_free) {
        // Events run in (time, rank) order: one no later than every queued event would be
        // the next popped, so it runs now, without the round trip through the queue.
        const Event resume{compute_free_[r], r};
        if (!events_.empty() && events_.top() < resume) {
          events_.push(resume);
          return;
        }
      }
    }
  }

  // The message a receive op takes in.
  Message& received(int r, const Op& op) {
    const int stage = s_.stage_of(r, op.chunk);
    return op.kind == OpKind::recv_forward ? activation_[cell(stage, op.micro_batch)]
                                           : gradient_[cell(stage, op.micro_batch)];
  }

  // The rank that sends what a receive op takes in.
  int sender_of(int r, const Op& op) const {
    const int stage = s_.stage_of(r, op.chunk);
    return s_.rank_of_stage(op.kind == OpKind::recv_forward ? stage - 1 : stage + 1);
  }

  // Rank r posts a receive at `time`. Blocking: a sender waiting for it goes on. Async: a
  // send already posted starts its transfer.
  void post(int r, const Op& op, double time) {
    Message& message = received(r, op);
    if (message.posted != kUnknown) return;
    message.posted = time;
    const int sender = sender_of(r, op);
    if (in_.p2p == P2pMode::blocking) {
      if (waiting_[sender]) events_.push({time, sender});
    } else if (message.pending_send != nullptr) {
      transfer(message.sender, *message.pending_send, message);
    }
  }

  // On reaching a compute op, the receives the runtime's executor posts then
  // (schedule/receive_posting.h).
  void post_next_receives(int r) {
    schedule::receives_posted_at(s_, r, cursor_[r], posted_);
    for (const size_t j : posted_) post(r, s_.ops[r][j], compute_free_[r]);
  }

  Next receive(int r, const Op& op) {
    if (in_.p2p == P2pMode::blocking) return blocking_receive(r, op);
    post(r, op, compute_free_[r]);
    const Message& message = received(r, op);
    if (message.arrival == kUnknown) {
      waiting_[r] = true;
      return Next::wait;
    }
    waiting_[r] = false;
    if (message.arrival > input_ready_[r]) {
      input_ready_[r] = message.arrival;
      input_sent_[r] = message.sent;
    }
    return Next::op;
  }

  // The compute stream stops at the receive until its data is in.
  Next blocking_receive(int r, const Op& op) {
    post(r, op, compute_free_[r]);
    const Message& message = received(r, op);
    if (message.arrival == kUnknown) {
      waiting_[r] = true;
      return Next::wait;
    }
    waiting_[r] = false;
    block_until(r, message.arrival, message.sent);
    return Next::op;
  }

  // Rank r's compute stream is held by communication until `until`; of that, the time
  // since the data was sent counts as waiting for a transfer, the rest as bubble.
  void block_until(int r, double until, double sent) {
    const double blocked = until - compute_free_[r];
    if (blocked <= 0) return;
    out_.ranks[r].comm_wait += std::min(blocked, until - sent);
    compute_free_[r] = until;
  }

  Next send(int r, const Op& op) {
    const bool blocking = in_.p2p == P2pMode::blocking;
    if (blocking) {
      // A receive right after the send is posted with it (one batched exchange).
      const auto& ops = s_.ops[r];
      const size_t after = cursor_[r] + 1;
      if (after < ops.size() &&
          (ops[after].kind == OpKind::recv_forward || ops[after].kind == OpKind::recv_backward)) {
        post(r, ops[after], compute_free_[r]);
      }
    }
    Message& message = sent_message(r, op);
    if (blocking && message.posted == kUnknown) {
      waiting_[r] = true;  // until the receiver posts (post() wakes it)
      return Next::wait;
    }
    waiting_[r] = false;
    message.sent = compute_free_[r];
    message.sender = r;
    if (!blocking && message.posted == kUnknown) {
      message.pending_send = &op;  // the receiver's post() starts it
      return Next::op;
    }
    const double start = transfer(r, op, message);
    if (blocking) block_until(r, message.arrival, start);
    return Next::op;
  }

  // The message a send op puts out.
  Message& sent_message(int r, const Op& op) {
    const int stage = s_.stage_of(r, op.chunk);
    return op.kind == OpKind::send_forward ? activation_[cell(stage + 1, op.micro_batch)]
                                           : gradient_[cell(stage - 1, op.micro_batch)];
  }

  // Rank r's send `op`, sent and posted for: it holds both ports and its link, from when
  // the receiver's readiness reaches the sender (a latency after the post: Gloo's sender
  // waits for the receiver's notice), then arrives a latency later. Returns its start.
  double transfer(int r, const Op& op, Message& message) {
    const int stage = s_.stage_of(r, op.chunk);
    const bool forward = op.kind == OpKind::send_forward;
    const int target_stage = forward ? stage + 1 : stage - 1;
    const TransferCost& cost = forward ? in_.activations.at(stage) : in_.gradients.at(stage - 1);
    const int target = s_.rank_of_stage(target_stage);
    const bool blocking = in_.p2p == P2pMode::blocking;
    double start =
        std::max({message.sent, message.posted + cost.latency, send_free_[r], recv_free_[target]});
    if (cost.link >= 0) start = std::max(start, link_free_[cost.link]);
    const double released = start + cost.occupancy;
    send_free_[r] = released;
    recv_free_[target] = released;
    if (cost.link >= 0) link_free_[cost.link] = released;
    message.arrival = released + cost.latency;
    message.pending_send = nullptr;
    if (in_.record_timeline) {
      out_.timeline.tracks[r].communication.push_back(
          {forward ? "send F" : "send B", stage, op.micro_batch, op.chunk, start, message.arrival});
    }
    if (waiting_[target]) {
      events_.push({blocking ? message.arrival : std::max(message.sent, message.posted), target});
    }
    return start;
  }

  Next compute(int r, const Op& op) {
    if (in_.p2p == P2pMode::async) post_next_receives(r);
    const int stage = s_.stage_of(r, op.chunk);
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
    stats.compute_end = end;
    input_ready_[r] = 0;
    input_sent_[r] = 0;
    if (in_.record_timeline) {
      out_.timeline.tracks[r].compute.push_back(
          {std::string(schedule::letter(op.kind)), stage, op.micro_batch, op.chunk, start, end});
    }
    if (op.kind == OpKind::forward) {
      in_use_[r] += cost.activation_bytes;
      stats.peak_in_flight = std::max(stats.peak_in_flight, ++in_flight_[r]);
      stats.peak_activation_bytes = std::max(stats.peak_activation_bytes, in_use_[r]);
      record_memory(r, start, in_use_[r]);
    } else if (op.kind == OpKind::backward_input) {
      // B frees what only it needed; W's inputs stay until W (with recomputation they may
      // exceed what F kept).
      in_use_[r] += cost.weight_gradient_bytes - cost.activation_bytes;
      --in_flight_[r];
      stats.peak_activation_bytes = std::max(stats.peak_activation_bytes, in_use_[r]);
      record_memory(r, end, in_use_[r]);
    } else if (op.kind == OpKind::backward_weight) {
      in_use_[r] -= cost.weight_gradient_bytes;
      record_memory(r, end, in_use_[r]);
    } else {
      in_use_[r] -= cost.activation_bytes;
      --in_flight_[r];
      record_memory(r, end, in_use_[r]);
    }
    return Next::at_compute_free;
  }

  // A chunk's bucket: all-reduced on the rank's reduce stream, beside its compute, from
  // when it is issued (its weight gradients are done there).
  Next all_reduce(int r, const Op& op) {
    const int stage = s_.stage_of(r, op.chunk);
    const double seconds = in_.stages[stage].allreduce;
    const double start = std::max(compute_free_[r], reduce_free_[r]);
    reduce_free_[r] = start + seconds;
    if (seconds > 0 && in_.record_timeline) {
      out_.timeline.tracks[r].communication.push_back(
          {std::string(schedule::timeline_label(op.kind)), stage, -1, op.chunk, start,
           reduce_free_[r]});
    }
    return Next::op;
  }

  // After the last bucket: the time its gradients are summed inside its group.
  double reduced(int r) {
    const double time = std::max(compute_free_[r], reduce_free_[r]);
    if (!reduced_[r]) {
      reduced_[r] = true;
      out_.ranks[r].reduced = time;
      out_.ranks[r].allreduce = time - out_.ranks[r].compute_end;
    }
    return time;
  }

  // RS, TE and GN: every rank taking part arrives with its buckets reduced; the sum starts
  // when the last arrives (RS also no earlier than the other pipelines, replica_barrier).
  Next collective(int r, const Op& op) {
    if (arrived_[r] == kUnknown) arrived_[r] = reduced(r);
    const auto ranks = schedule::collective_ranks(s_, op.kind);
    double start = op.kind == OpKind::sync_replicas ? in_.replica_barrier : 0.0;
    for (int other : ranks) {
      if (arrived_[other] == kUnknown || s_.ops[other][cursor_[other]].kind != op.kind) {
        return Next::wait;  // the last to arrive runs it for everyone
      }
      start = std::max(start, arrived_[other]);
    }
    for (int other : ranks) {
      double seconds = op.kind == OpKind::tied_embedding ? in_.tied_embedding : in_.global_norm;
      if (op.kind == OpKind::sync_replicas) {
        seconds = 0;
        for (int c = 0; c < s_.chunks; ++c)
          seconds += in_.stages[s_.stage_of(other, c)].replica_sync;
      }
      const double end = start + seconds;
      RankStats& stats = out_.ranks[other];
      // Waiting for the other pipelines counts with their sum (as they are another's
      // iteration); waiting for the ranks of this one is idle time, the bubble.
      if (op.kind == OpKind::sync_replicas) stats.replica_sync += end - arrived_[other];
      if (op.kind == OpKind::tied_embedding) stats.tied_embedding += seconds;
      if (op.kind == OpKind::global_norm) stats.global_norm += seconds;
      // Drawn even when free (one group summing its own tied copies), as the runtime draws
      // every collective it runs; a bucket of dp 1 is neither run nor drawn. Drawn from the
      // rank's arrival, as the runtime measures a collective from its call: the wait for the
      // others is part of it on both timelines.
      if (in_.record_timeline) {
        out_.timeline.tracks[other].communication.push_back(
            {std::string(schedule::timeline_label(op.kind)), -1, -1, 0, arrived_[other], end});
      }
      compute_free_[other] = end;
      arrived_[other] = kUnknown;
      if (other != r) {
        ran(other, s_.ops[other][cursor_[other]]);
        events_.push({end, other});
      }
    }
    return Next::at_compute_free;
  }

  Next optimizer_step(int r, const Op& /*op*/) {
    const double start = reduced(r);
    double seconds = 0;
    for (int c = 0; c < s_.chunks; ++c) seconds += in_.stages[s_.stage_of(r, c)].optimizer;
    compute_free_[r] = start + seconds;
    out_.ranks[r].optimizer = seconds;
    if (seconds > 0 && in_.record_timeline) {
      out_.timeline.tracks[r].compute.push_back(
          {std::string(schedule::timeline_label(OpKind::optimizer_step)), -1, -1, 0, start,
           compute_free_[r]});
    }
    return Next::op;
  }

  void finish() {
    for (int r = 0; r < s_.ranks; ++r) {
      RankStats& stats = out_.ranks[r];
      stats.end = reduced(r);  // a schedule without an epilogue ends at its last op
      stats.peak_memory_bytes = held(r, stats.peak_activation_bytes);
      out_.iteration_time = std::max(out_.iteration_time, stats.end);
    }
    for (auto& stats : out_.ranks) {
      // What is left is idle time; summing the parts can leave a rounding residue below 0.
      stats.bubble = std::max(0.0, out_.iteration_time - stats.busy - stats.comm_wait -
                                       stats.allreduce - stats.epilogue_sync() - stats.optimizer);
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
  std::vector<double> reduce_free_;  // per rank: its all-reduce stream
  std::vector<double> arrived_;      // per rank: when it reached the collective it waits at
  std::vector<Message> activation_;  // [stage, mb]: the activation stage `stage` consumes
  std::vector<Message> gradient_;    // [stage, mb]: the gradient stage `stage` consumes
  std::vector<double> in_use_;       // activation bytes held per rank
  std::vector<int> in_flight_;
  std::vector<double> static_bytes_;

  // What rank r's device holds with `activations` bytes of activations in flight: the
  // bytes outside the allocator, and the allocator's reserve for the rest.
  double held(int r, double activations) const {
    const double outside = in_.reserved_bytes.empty() ? 0.0 : in_.reserved_bytes[r];
    const double ratio = in_.allocator_ratio.empty() ? 1.0 : in_.allocator_ratio[r];
    const double buffers = in_.buffer_bytes.empty() ? 0.0 : in_.buffer_bytes[r];
    return outside + ratio * (static_bytes_[r] + buffers + activations);
  }
  std::vector<bool> reduced_;   // per rank: its buckets all reduced (stats.reduced set)
  std::vector<size_t> posted_;  // the receives a compute op posts (reused, not reallocated)
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
      (!input.reserved_bytes.empty() && static_cast<int>(input.reserved_bytes.size()) != s.ranks) ||
      (!input.allocator_ratio.empty() &&
       static_cast<int>(input.allocator_ratio.size()) != s.ranks) ||
      (!input.buffer_bytes.empty() && static_cast<int>(input.buffer_bytes.size()) != s.ranks)) {
    throw std::invalid_argument(
        fmt::format("simulator input: {} stages need {} stage costs and {} transfer costs each way",
                    stages, stages, stages - 1));
  }
  return Engine(input).run();
}

}  // namespace hyperpipe::sim
