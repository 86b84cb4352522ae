// The executor's point-to-point side: posting receives ahead (schedule/receive_posting.h),
// sending activations and gradients (scattered over the neighbour's shards where dp or tp
// differ), and holding sends until the receive that proves them delivered.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "hyperpipe/runtime/executor.h"
#include "hyperpipe/runtime/executor_slots.h"
#include "hyperpipe/runtime/timing.h"
#include "hyperpipe/schedule/receive_posting.h"

namespace hyperpipe::runtime {

using schedule::Op;
using schedule::OpKind;

namespace {

enum Direction { kForward = 0, kBackward = 1 };

}  // namespace

std::vector<int> Executor::shards_fed_by(int neighbour) const {
  // Every shard of a stage holds the whole activation (and its whole gradient), so shard
  // j of a neighbour with tp' shards gets it from this stage's shard j mod tp.
  std::vector<int> fed;
  for (int j = role_.tp_index; j < tp_of(neighbour); j += role_.tp) fed.push_back(j);
  return fed;
}

int Executor::tag(int stage, int direction, int micro_batch) const {
  return (stage * 2 + direction) * pipeline_.micro_batches + micro_batch;
}

void Executor::post_receive(const Op& op) {
  Slot& s = slot(op.chunk, op.micro_batch);
  const int stage = stage_of(op.chunk);
  const bool forward = op.kind == OpKind::recv_forward;
  bool& posted = forward ? s.forward_posted : s.backward_posted;
  if (posted) return;
  posted = true;
  const auto shape = std::vector<int64_t>{mine_.size(), data_.seq_len(), model_.config().hidden};
  const auto options = torch::TensorOptions().device(options_.device).dtype(activation_type_);
  torch::Tensor& into = forward ? s.input : s.from_next;
  into = torch::empty(shape, options);
  // The activation from the stage before, or the gradient from the one after.
  const int peer = forward ? stage - 1 : stage + 1;
  auto& gathers = forward ? s.forward_gathers : s.backward_gathers;
  auto& receives = forward ? s.forward_receives : s.backward_receives;
  // A piece from each of the peer's data-parallel ranks that holds samples of ours.
  for (const auto& slice : plan::reshard(pipeline_.micro_batch_size, dp_of(peer), role_.dp)) {
    if (slice.to_index != role_.dp_index) continue;
    const auto region = into.narrow(0, slice.samples.begin - mine_.begin, slice.samples.size());
    if (scattered(peer)) gathers.push_back(region);
    receives.push_back(communicator_.recv(
        scattered(peer) ? my_part(region) : region,
        rank_of(group_of(peer), slice.from_index, role_.tp_index % tp_of(peer)),
        tag(stage, forward ? kForward : kBackward, op.micro_batch),
        fmt::format("the {} of micro-batch {} for stage {}", forward ? "activation" : "gradient",
                    op.micro_batch, stage)));
  }
}

void Executor::send(const Op& op) {
  const auto proof = proof_of(op);
  auto& sends = proof ? held_sends_[*proof] : sends_;
  Slot& s = slot(op.chunk, op.micro_batch);
  const bool forward = op.kind == OpKind::send_forward;
  // The activation to the stage after, or the gradient to the one before.
  const int peer = forward ? stage_of(op.chunk) + 1 : stage_of(op.chunk) - 1;
  const torch::Tensor values = forward ? s.output.detach() : s.input_grad;
  // Each of the peer's data-parallel ranks that holds samples of ours gets their piece,
  // resharded from the forward's side (this stage's dp forwards, the peer's backwards).
  const int64_t batch = pipeline_.micro_batch_size;
  const auto slices = forward ? plan::reshard(batch, role_.dp, dp_of(peer))
                              : plan::reshard(batch, dp_of(peer), role_.dp);
  for (const auto& slice : slices) {
    const int ours = forward ? slice.from_index : slice.to_index;
    const int theirs = forward ? slice.to_index : slice.from_index;
    if (ours != role_.dp_index) continue;
    const auto region =
        values.narrow(0, slice.samples.begin - mine_.begin, slice.samples.size()).contiguous();
    for (const int shard : shards_fed_by(peer)) {
      sends.push_back(communicator_.send(
          scattered(peer) ? my_part(region) : region, rank_of(group_of(peer), theirs, shard),
          tag(peer, forward ? kForward : kBackward, op.micro_batch),
          fmt::format("the {} of micro-batch {} for stage {}", forward ? "activation" : "gradient",
                      op.micro_batch, peer)));
    }
  }
  if (forward) {
    // Each send holds its region until it is done; the backward needs only the output's
    // autograd node, so its values go now (Megatron-LM's deallocate_output_tensor): one
    // activation less per micro-batch in flight.
    s.output.set_data(torch::empty({0}, s.output.options()));
  } else {
    s.input_grad = torch::Tensor();
  }
}

bool Executor::scattered(int neighbour) const {
  return role_.tp > 1 && tp_of(neighbour) == role_.tp;
}

torch::Tensor Executor::my_part(const torch::Tensor& region) const {
  // hidden is a multiple of tp (heads are), so the parts are equal.
  const int64_t part = region.numel() / role_.tp;
  return region.view({-1}).narrow(0, role_.tp_index * part, part);
}

void Executor::wait_all(std::vector<std::unique_ptr<Pending>>& pending, const char* what,
                        int micro_batch, std::vector<torch::Tensor>* gathers) {
  if (pending.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  for (auto& p : pending) p->wait();
  pending.clear();
  if (gathers) {
    const auto ranks = layout_.tp_ranks(role_.pipeline, role_.group, role_.dp_index);
    for (auto& region : *gathers) {
      auto parts = region.view({-1}).chunk(role_.tp);
      communicator_.all_gather(parts[role_.tp_index].clone(), parts, ranks);
    }
    gathers->clear();
  }
  const double begin = std::chrono::duration<double>(start - start_).count();
  track_.communication.push_back({what, -1, micro_batch, 0, begin, seconds_since(start_)});
}

std::optional<Executor::ReceiveKey> Executor::proof_of(const Op& op) const {
  const int stage = stage_of(op.chunk);
  if (op.kind == OpKind::send_forward) {
    // The next stage sends this micro-batch's gradient back only after its backward, so
    // after its forward: every rank this activation went to had it (its tp shards run the
    // forward's sums together; the same ranks hold these samples backwards).
    return ReceiveKey{OpKind::recv_backward, op.chunk, op.micro_batch};
  }
  // The previous stage's ranks that take this gradient in send this process activations
  // (of the same samples) after that micro-batch's backward: the first such one proves it.
  const int previous = stage - 1;
  const auto& theirs = schedule_.ops[group_of(previous)];
  const int their_chunk = previous / groups_;
  const auto backward = std::find_if(theirs.begin(), theirs.end(), [&](const Op& o) {
    return (o.kind == OpKind::backward || o.kind == OpKind::backward_input) &&
           o.chunk == their_chunk && o.micro_batch == op.micro_batch;
  });
  for (auto o = backward; o != theirs.end(); ++o) {
    if (o->kind != OpKind::send_forward) continue;
    const int to = o->chunk * groups_ + group_of(previous) + 1;
    if (group_of(to) == role_.group)
      return ReceiveKey{OpKind::recv_forward, to / groups_, o->micro_batch};
  }
  return std::nullopt;
}

void Executor::release_sends(const ReceiveKey& key) {
  const auto held = held_sends_.find(key);
  if (held == held_sends_.end()) return;
  for (auto& pending : held->second) pending->wait();
  held_sends_.erase(held);
}
}  // namespace hyperpipe::runtime
