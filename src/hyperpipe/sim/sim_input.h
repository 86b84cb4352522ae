// What the simulator needs to know, in seconds and bytes: a schedule, the cost of each
// stage's ops and of each transfer. Built from a plan by plan_simulation.h, or by hand in
// tests, so the event engine knows nothing of models or clusters.
#pragma once

#include <vector>

#include "hyperpipe/schedule/schedule.h"

namespace hyperpipe::sim {

struct StageCost {
  double forward = 0;
  double backward_input = 0;  // includes recomputation
  double backward_weight = 0;
  // What B and W run apart cost more than one whole backward (the combined op's time is
  // backward_input + backward_weight − split_extra).
  double split_extra = 0;
  double activation_bytes = 0;  // kept per micro-batch from F until its backward
  // Of a split backward: what B leaves for W (the inputs of the matrix products).
  double weight_gradient_bytes = 0;
  double static_bytes = 0;  // weights, gradients, optimizer state
  double allreduce = 0;     // gradient all-reduce over the stage's data-parallel group
  // Gradient sum of the stage's layers across the plan's other pipelines (plan::Plan's
  // replicas), after the all-reduce above.
  double replica_sync = 0;
  double optimizer = 0;  // optimizer step
};

// A point-to-point transfer: it holds the sender's send port, the receiver's receive port
// and its shared link (if any) for `occupancy` seconds, then arrives `latency` later.
struct TransferCost {
  double occupancy = 0;
  double latency = 0;
  int link = -1;  // transfers with the same id share one link (e.g. one Ethernet uplink)
};

// How point-to-point transfers meet the compute stream.
enum class P2pMode {
  // HyperPipe's runtime: sends are posted and the stage computes on while they travel;
  // a receive waits only for its data.
  async,
  // DeepSpeed's pipeline engine and Megatron-LM's non-overlapped 1F1B: an exchange with a
  // neighbour blocks the compute stream until its data has arrived, and a send starts only
  // once the receiver has posted the matching receive. A send right before a receive in a
  // rank's list is one batched exchange (Megatron-LM's send_forward_recv_backward): both
  // are posted together, so neighbours that send to each other do not deadlock.
  blocking,
};

struct SimInput {
  // Ops per rank, with communication and the epilogue (plan::schedule_for); where the
  // lists have no epilogue, the iteration ends with the last backward.
  schedule::Schedule schedule;
  std::vector<StageCost> stages;          // per pipeline stage
  std::vector<TransferCost> activations;  // [s]: stage s to stage s + 1
  std::vector<TransferCost> gradients;    // [s]: stage s + 1 back to stage s
  std::vector<double> reserved_bytes;     // per rank: memory held outside the allocator
  // Per rank: the caching allocator's reserved over allocated bytes (empty: 1).
  std::vector<double> allocator_ratio;
  // Per rank: what the allocator holds all step besides the stages' static bytes (the
  // framework's buffers, the loss's logits, workspaces; empty: none).
  std::vector<double> buffer_bytes;
  // The epilogue's collectives (their ops in the schedule, schedule/epilogue.h): the tied
  // embedding's gradient sum between the first and the last stage's groups, and the
  // global norm's sum over every rank.
  double tied_embedding = 0;
  double global_norm = 0;
  // With several pipelines: the cross-pipeline gradient sum starts no earlier than this,
  // when every pipeline's gradients are reduced.
  double replica_barrier = 0;
  P2pMode p2p = P2pMode::async;
  // Whether the output's tracks get the ops, intervals and memory points a timeline draws;
  // without them (a planner scoring candidates) the figures are the same, about twice as
  // fast.
  bool record_timeline = true;
};

}  // namespace hyperpipe::sim
