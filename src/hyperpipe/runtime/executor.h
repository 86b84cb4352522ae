// One process's part of a training iteration: it walks its device group's op list from
// plan::schedule_for (the very lists the simulator runs), one handler per op kind, with
// real tensors: forward, backward (input and weight apart, or together), and the sends and
// receives between stages, re-sharding micro-batches where neighbouring groups have
// different dp, each tensor-parallel shard of a group running its share of every op. Then
// the epilogue's ops: each chunk's gradient all-reduce inside the group (started, and
// waited for at the next collective, so an overlapped one runs beside the backward), the
// sum across the plan's pipelines where it has several, the tied embedding's sum, the
// global norm for clipping, and AdamW (each data-parallel rank stepping its part where the
// plan shards the optimizer, optimizer_shards.h).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/plan/rank_layout.h"
#include "hyperpipe/runtime/communicator.h"
#include "hyperpipe/runtime/mixed_precision.h"
#include "hyperpipe/runtime/optimizer.h"
#include "hyperpipe/runtime/optimizer_shards.h"
#include "hyperpipe/runtime/stage_module.h"
#include "hyperpipe/schedule/passes.h"
#include "hyperpipe/schedule/schedule.h"
#include "hyperpipe/trace/timeline.h"
#include "hyperpipe/training/loss_scaler.h"
#include "hyperpipe/training/text_corpus.h"

namespace hyperpipe::runtime {

struct ExecutorOptions {
  training::OptimizerOptions optimizer;
  uint64_t seed = 0;  // weights
  torch::Device device = torch::kCPU;
  // Speed of the device type this process stands in for, relative to the host: each
  // compute op is stretched to its host time ÷ speed (no stretch at 1 or above).
  double speed = 1.0;
  // Weights and activations: bf16 or fp16 train with fp32 master weights and main grads
  // (mixed_precision.h); otherwise the default dtype's (fp32, or fp64 where set).
  torch::ScalarType dtype = torch::kFloat;
  // Dynamic loss scaling (fp16's, but any dtype may ask for it).
  std::optional<training::LossScaling> loss_scaling;
  // Where given, hears of each of this process's layers as it is built, with how many
  // there are (start-up can take minutes on a big model).
  std::function<void(int built, int total)> layer_built;
};

// One micro-batch's logits from the last stage, whole over the vocabulary, on the CPU in
// fp32, with the token ids its rows were computed from and their targets.
struct LogitRows {
  int64_t first_sample = 0;  // the first row's place in the global batch
  torch::Tensor input_ids;   // [rows, seq]
  torch::Tensor targets;     // [rows, seq]: the next token of each input's
  torch::Tensor logits;      // [rows, seq, vocab]
};
using LogitsObserver = std::function<void(LogitRows)>;

struct StepResult {
  double loss = 0;        // mean cross-entropy over the global batch (every rank)
  double grad_norm = 0;   // before clipping (every rank)
  double seconds = 0;     // this process's iteration
  double loss_scale = 0;  // the scale the step's loss was multiplied by (0: no scaling)
  bool skipped = false;   // gradients not finite under loss scaling: no update
  double lr = 0;          // the learning rate of the step (training::OptimizerOptions::lr)
  trace::Track track;     // what this process did (its ops in order), times from the start
};

class Executor {
 public:
  Executor(const model::Model& model, const plan::Plan& plan, const plan::RankLayout& layout,
           Communicator& communicator, const training::TextCorpus& data, ExecutorOptions options);
  ~Executor();

  StepResult step(int64_t step);
  // Collective: the loss of validation batch `batch` (the data's held-out windows, no
  // dropout, no gradients), through the forward half of the step's schedule and the loss's
  // sum over every rank; the weights, the optimizer and the loss scale left as they are.
  StepResult evaluate(int64_t batch);

  // The model chunks this process holds (one per chunk of its device group).
  const std::vector<std::shared_ptr<StageModule>>& chunks() const { return chunks_; }
  // Whether this process steps only its part of the optimizer state (the plan's
  // shard_optimizer, over a data-parallel group of more than one).
  bool shards_optimizer() const { return shards_.has_value(); }
  // What AdamW updates for each parameter of chunk `c` (its fp32 master under mixed
  // precision, else the parameter itself) and its AdamW state, whole, in the order of the
  // chunk's named_parameters(). Checkpoints hold these. Sharded, a collective over the
  // data-parallel group: each of its ranks calls it for each chunk in turn.
  std::vector<TrainedState> trained_state(int c) const;
  // Parameter `i` of chunk `c` from its whole trained value and state (a checkpoint's).
  void restore_trained_state(int c, size_t i, const TrainedState& whole);
  // After every restore_trained_state: the model's weights follow the trained values.
  void trained_weights_changed();
  // The loss scaler, where the run scales its loss (null otherwise).
  training::DynamicLossScaler* loss_scaler() { return scaler_ ? &*scaler_ : nullptr; }
  const training::DynamicLossScaler* loss_scaler() const { return scaler_ ? &*scaler_ : nullptr; }
  const training::LrSchedule& lr_schedule() const { return options_.optimizer.lr; }
  const plan::ProcessRole& role() const { return role_; }
  // A stand-in's speed from the next op on (emulated throttling: train --stand-in-speeds).
  void set_speed(double speed) { options_.speed = speed; }
  double speed() const { return options_.speed; }
  // From the next step until it is cleared (an empty observer), each of the last stage's
  // forward ops hands its logits to `observer`: on tensor-parallel shard 0, after the
  // shards gather the vocabulary together (so every shard of the last stage must set one).
  void set_logits_observer(LogitsObserver observer) { logits_observer_ = std::move(observer); }

 private:
  struct Slot;
  Slot& slot(int chunk, int micro_batch);
  int stage_of(int chunk) const { return chunk * groups_ + role_.group; }
  int dp_of(int stage) const { return pipeline_.stages[stage].dp; }
  int tp_of(int stage) const { return pipeline_.stages[stage].tp; }
  int rank_of(int group, int dp_index, int tp_index) const {
    return layout_.rank_of(role_.pipeline, group, dp_index, tp_index);
  }
  // The shards of a neighbouring stage that this process sends to.
  std::vector<int> shards_fed_by(int neighbour) const;
  // Whether transfers with a neighbouring stage are scattered over the shards, as
  // Megatron-LM does between stages of equal tp: shard j sends and receives the j-th of tp
  // equal parts of the (replicated) activation or gradient, then the receiving shards
  // all-gather the rest. Otherwise each shard moves the whole tensor.
  bool scattered(int neighbour) const;
  // This shard's part of a contiguous region, as a view into it.
  torch::Tensor my_part(const torch::Tensor& region) const;
  int group_of(int stage) const { return stage % groups_; }
  int tag(int stage, int direction, int micro_batch) const;

  // One handler per op kind (handlers() in executor.cc), as the simulator has.
  using Handler = void (Executor::*)(const schedule::Op& op);
  static const schedule::OpKindTable<Handler>& handlers();
  void post_receive(const schedule::Op& op);
  void send(const schedule::Op& op);
  void compute(const schedule::Op& op);
  // The epilogue.
  void all_reduce(const schedule::Op& op);
  void sync_replicas(const schedule::Op& op);
  void tied_embedding(const schedule::Op& op);
  void global_norm(const schedule::Op& op);
  void optimizer_step(const schedule::Op& op);
  // Before an epilogue collective: every send done, every started all-reduce summed.
  void finish_backward_work();
  // A receive this process will complete only after the peers of a send have taken it in:
  // the sends wait on that receive's completion, then free their buffers (below).
  struct ReceiveKey {
    schedule::OpKind kind;  // recv_forward or recv_backward
    int chunk = 0;
    int micro_batch = 0;
    bool operator<(const ReceiveKey& other) const {
      return std::tie(kind, chunk, micro_batch) <
             std::tie(other.kind, other.chunk, other.micro_batch);
    }
  };
  // The receive that proves a send of `op` done, if a later one does (release_keys_).
  std::optional<ReceiveKey> proof_of(const schedule::Op& op) const;
  // The sends `key`'s completion proves done: waited for (at once) and freed.
  void release_sends(const ReceiveKey& key);
  // Runs a collective and records it on the communication track as `op`'s.
  template <typename Work>
  void collective(const schedule::Op& op, const Work& work);
  torch::Tensor batch_tokens(int64_t step, int micro_batch, bool targets) const;
  // Hands a forward's logits to logits_observer_ (a collective over the stage's shards).
  void observe_logits(const StageModule& module, const torch::Tensor& logits, int64_t step,
                      int micro_batch);
  // Then, for scattered receives, gathers the other shards' parts of `gathers`.
  void wait_all(std::vector<std::unique_ptr<Pending>>& pending, const char* what, int micro_batch,
                std::vector<torch::Tensor>* gathers = nullptr);
  std::vector<torch::Tensor> parameters() const;
  const torch::Tensor& trained(const torch::Tensor& parameter) const;
  // The sharded optimizer's gather of its parts over the data-parallel group.
  GatherParts gather_over_dp() const;
  // Bytes of the weights, of their gradients and of the optimizer's state for them.
  double static_bytes() const;
  // Adds what the process holds now to the track's memory: the allocator's count, with
  // the gradients not yet made counted as if they were (they are static in the cost model;
  // each step makes them anew in its backward).
  void sample_memory();
  void sum_tied_embedding();
  void sum_across_pipelines();
  // Sums `tensors` × scale over `ranks` in place (one all-reduce of one flat buffer).
  void sum_over(std::vector<torch::Tensor>& tensors, std::vector<int> ranks, double scale);
  // Runs `work` and records it on the track; compute (`stretch`) is stretched to host time
  // ÷ speed, communication is not (a wait is as long as the peer makes it).
  template <typename Work>
  void timed(trace::Interval interval, const Work& work, bool stretch = true);

  const model::Model& model_;
  const plan::Plan& plan_;
  const plan::RankLayout& layout_;
  Communicator& communicator_;
  const training::TextCorpus& data_;
  ExecutorOptions options_;
  plan::ProcessRole role_;
  const plan::Pipeline& pipeline_;  // the one this process is part of
  int groups_ = 1;
  int stages_ = 1;
  int64_t tokens_per_step_ = 1;
  int64_t first_sample_ = 0;  // this pipeline's share starts here in the global batch
  plan::SampleRange mine_;    // this process's samples of every micro-batch
  schedule::Schedule schedule_;
  schedule::Schedule forward_schedule_;  // evaluate()'s: swapped with schedule_ meanwhile
  bool split_backward_ = false;          // the schedule has W ops of its own
  std::vector<std::shared_ptr<StageModule>> chunks_;
  std::unique_ptr<MasterWeights> masters_;  // under mixed precision
  std::optional<OptimizerShards> shards_;   // under the plan's shard_optimizer
  std::vector<torch::Tensor> stepped_;      // what AdamW steps
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::optional<training::DynamicLossScaler> scaler_;
  LogitsObserver logits_observer_;
  torch::ScalarType activation_type_ = torch::kFloat;
  torch::ScalarType reduce_type_ = torch::kFloat;  // of the gradients' all-reduce
  std::vector<Slot> slots_;
  // The step being run, its position in the op list, and what it has left in flight.
  int64_t step_ = 0;
  bool evaluating_ = false;  // within evaluate()
  size_t op_index_ = 0;
  std::vector<std::unique_ptr<Pending>> sends_;  // waited for at the epilogue
  std::map<ReceiveKey, std::vector<std::unique_ptr<Pending>>> held_sends_;
  struct StartedAllReduce;
  std::vector<StartedAllReduce> all_reduces_;
  StepResult result_;
  double loss_sum_ = 0;
  std::chrono::steady_clock::time_point start_;
  trace::Track track_;
};

}  // namespace hyperpipe::runtime
