#include "hyperpipe/runtime/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "hyperpipe/common/log.h"
#include "hyperpipe/plan/plan_schedule.h"
#include "hyperpipe/runtime/deferred_weight_grads.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/memory_in_use.h"
#include "hyperpipe/runtime/process_memory.h"
#include "hyperpipe/runtime/stand_in_clock.h"
#include "hyperpipe/runtime/timing.h"
#include "hyperpipe/schedule/epilogue.h"
#include "hyperpipe/schedule/receive_posting.h"

namespace hyperpipe::runtime {

using schedule::Op;
using schedule::OpKind;

// What one micro-batch of one chunk holds between its ops.
struct Executor::Slot {
  torch::Tensor input;       // received activation (requires grad) or token ids
  torch::Tensor output;      // activation, or the loss on the last stage
  torch::Tensor from_next;   // gradient of the output, received
  torch::Tensor input_grad;  // gradient of the input, to send back
  // Split backward: the weights' gradients B left for W.
  std::shared_ptr<WeightGradStore> weight_grads;
  std::vector<std::unique_ptr<Pending>> forward_receives;
  std::vector<std::unique_ptr<Pending>> backward_receives;
  // Under scattered transfers, the received regions whose other parts the shards gather.
  std::vector<torch::Tensor> forward_gathers;
  std::vector<torch::Tensor> backward_gathers;
  bool forward_posted = false;
  bool backward_posted = false;
};

// A chunk's bucket on its way: its gradients flattened into one buffer, summed over the
// group's data-parallel ranks while the schedule goes on.
struct Executor::StartedAllReduce {
  std::unique_ptr<Pending> pending;
  torch::Tensor buffer;
  std::vector<torch::Tensor> gradients;
  int stage = 0;
  int chunk = 0;
  double start = 0;
};

namespace {

enum Direction { kForward = 0, kBackward = 1 };

// The sharded optimizer's gather of the updated weights on the communication track (the
// simulator counts it in the optimizer step, cost::CostModel::optimizer_time).
constexpr std::string_view kGatherWeightsLabel = "gather weights";

}  // namespace

Executor::Executor(const model::Model& model, const plan::Plan& plan, const RankLayout& layout,
                   Communicator& communicator, const TextCorpus& data, ExecutorOptions options)
    : model_(model),
      plan_(plan),
      layout_(layout),
      communicator_(communicator),
      data_(data),
      options_(options),
      role_(layout.role(communicator.rank())),
      pipeline_(plan.pipeline(role_.pipeline)),
      groups_(pipeline_.ranks()),
      stages_(static_cast<int>(pipeline_.stages.size())),
      tokens_per_step_(plan.global_batch() * data.seq_len()),
      mine_(shard(pipeline_.micro_batch_size, role_.dp, role_.dp_index)) {
  for (int p = 0; p < role_.pipeline; ++p) first_sample_ += plan.pipeline(p).samples();
  const auto& pipeline = pipeline_;
  schedule_ = plan::schedule_for(plan, role_.pipeline, model.config().tied_embeddings);
  forward_schedule_ = schedule::forwards_only(schedule_);
  // Under tensor parallelism each chunk holds this rank's shard of its layers; the
  // shards of the group's data-parallel rank sum their partial results.
  TensorShard shard{role_.tp, role_.tp_index, nullptr, nullptr};
  if (role_.tp > 1) {
    const auto ranks = layout.tp_ranks(role_.pipeline, role_.group, role_.dp_index);
    shard.all_reduce = std::make_shared<const ShardAllReduce>([this, ranks](torch::Tensor& tensor) {
      std::vector<torch::Tensor> sum{tensor};
      communicator_.all_reduce_sum(sum, ranks);
    });
    if (plan.sequence_parallel) {
      SequenceShards sequence{role_.tp, role_.tp_index, {}, {}};
      sequence.all_gather = [this, ranks](const torch::Tensor& part) {
        std::vector<torch::Tensor> parts;
        for (int r = 0; r < role_.tp; ++r) parts.push_back(torch::empty_like(part));
        communicator_.all_gather(part, parts, ranks);
        return torch::cat(parts, 1);
      };
      sequence.reduce_scatter = [this, ranks](const torch::Tensor& whole) {
        return communicator_.reduce_scatter_sum(whole, 1, ranks);
      };
      shard.sequence = std::make_shared<const SequenceShards>(std::move(sequence));
    }
  }
  std::vector<torch::Tensor> parameters;
  std::vector<std::vector<torch::Tensor>> chunk_parameters;
  int layers = 0;
  for (int c = 0; c < pipeline.chunks; ++c) {
    const auto& stage = pipeline.stages[stage_of(c)];
    layers += stage.end_layer - stage.first_layer;
  }
  int built = 0;
  const std::function<void()> layer_built = [&] {
    if (options.layer_built) options.layer_built(++built, layers);
  };
  for (int c = 0; c < pipeline.chunks; ++c) {
    const auto& stage = pipeline.stages[stage_of(c)];
    chunks_.push_back(std::make_shared<StageModule>(model, stage.first_layer, stage.end_layer,
                                                    options.seed, shard, stage.recompute,
                                                    layer_built));
    chunks_.back()->to(options.device);
    chunk_parameters.push_back(chunks_.back()->parameters());
    for (const auto& p : chunk_parameters.back()) parameters.push_back(p);
  }
  const bool sharded = plan.shard_optimizer && role_.dp > 1;
  activation_type_ = torch::typeMetaToScalarType(torch::get_default_dtype());
  if (needs_master_weights(options.dtype)) {
    // Built in fp32 (so every split and dtype starts from the same draws), then turned;
    // sharded, only this rank's pieces have masters.
    masters_ = std::make_unique<MasterWeights>(
        parameters, options.dtype,
        sharded ? pieces_of(chunk_parameters, role_.dp, role_.dp_index) : std::vector<FlatRange>{});
    activation_type_ = options.dtype;
  }
  reduce_type_ = masters_ ? scalar_type_of(plan.gradient_reduce_dtype) : activation_type_;
  if (options.loss_scaling) scaler_.emplace(*options.loss_scaling);
  if (sharded) {
    shards_.emplace(chunk_parameters, role_.dp, role_.dp_index, masters_.get());
    stepped_ = shards_->pieces();
    optimizer_ = make_optimizer(stepped_, shards_->decayed(), options.optimizer);
  } else {
    stepped_ = masters_ ? masters_->masters() : parameters;
    optimizer_ = make_optimizer(stepped_, options.optimizer);
  }
  slots_.resize(static_cast<size_t>(pipeline.chunks) * pipeline.micro_batches);
  const auto& ops = schedule_.ops[role_.group];
  split_backward_ = std::any_of(ops.begin(), ops.end(),
                                [](const Op& op) { return op.kind == OpKind::backward_weight; });
}

Executor::~Executor() = default;

Executor::Slot& Executor::slot(int chunk, int micro_batch) {
  return slots_[static_cast<size_t>(chunk) * pipeline_.micro_batches + micro_batch];
}

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

torch::Tensor Executor::batch_tokens(int64_t step, int micro_batch, bool targets) const {
  const int64_t seq = data_.seq_len();
  std::vector<int64_t> tokens;
  tokens.reserve(static_cast<size_t>(mine_.size() * seq));
  for (int64_t s = mine_.begin; s < mine_.end; ++s) {
    const int64_t index = sample_index(
        step, plan_.global_batch(), first_sample_ + micro_batch * pipeline_.micro_batch_size + s);
    const auto sample = evaluating_ ? data_.validation_sample(index) : data_.sample(index);
    tokens.insert(tokens.end(), sample.begin() + (targets ? 1 : 0),
                  sample.begin() + (targets ? 1 : 0) + seq);
  }
  return torch::tensor(tokens, torch::kLong).view({mine_.size(), seq}).to(options_.device);
}

void Executor::observe_logits(const StageModule& module, const torch::Tensor& logits, int64_t step,
                              int micro_batch) {
  const torch::NoGradGuard no_grad;
  const auto whole = module.whole_logits(logits);
  if (role_.tp_index != 0) return;
  logits_observer_(LogitRows{first_sample_ + micro_batch * pipeline_.micro_batch_size + mine_.begin,
                             batch_tokens(step, micro_batch, false).cpu(),
                             batch_tokens(step, micro_batch, true).cpu(),
                             whole.to(torch::kFloat).cpu()});
}

void Executor::post_receive(const Op& op) {
  Slot& s = slot(op.chunk, op.micro_batch);
  const int stage = stage_of(op.chunk);
  const auto shape = std::vector<int64_t>{mine_.size(), data_.seq_len(), model_.config().hidden};
  const auto options = torch::TensorOptions().device(options_.device).dtype(activation_type_);
  if (op.kind == OpKind::recv_forward) {
    if (s.forward_posted) return;
    s.forward_posted = true;
    const int previous = stage - 1;
    s.input = torch::empty(shape, options);
    for (const auto& slice : reshard(pipeline_.micro_batch_size, dp_of(previous), role_.dp)) {
      if (slice.to_index != role_.dp_index) continue;
      const auto region =
          s.input.narrow(0, slice.samples.begin - mine_.begin, slice.samples.size());
      if (scattered(previous)) s.forward_gathers.push_back(region);
      s.forward_receives.push_back(communicator_.recv(
          scattered(previous) ? my_part(region) : region,
          rank_of(group_of(previous), slice.from_index, role_.tp_index % tp_of(previous)),
          tag(stage, kForward, op.micro_batch),
          fmt::format("the activation of micro-batch {} for stage {}", op.micro_batch, stage)));
    }
  } else {
    if (s.backward_posted) return;
    s.backward_posted = true;
    const int next = stage + 1;
    s.from_next = torch::empty(shape, options);
    for (const auto& slice : reshard(pipeline_.micro_batch_size, role_.dp, dp_of(next))) {
      if (slice.from_index != role_.dp_index) continue;
      const auto region =
          s.from_next.narrow(0, slice.samples.begin - mine_.begin, slice.samples.size());
      if (scattered(next)) s.backward_gathers.push_back(region);
      s.backward_receives.push_back(communicator_.recv(
          scattered(next) ? my_part(region) : region,
          rank_of(group_of(next), slice.to_index, role_.tp_index % tp_of(next)),
          tag(stage, kBackward, op.micro_batch),
          fmt::format("the gradient of micro-batch {} for stage {}", op.micro_batch, stage)));
    }
  }
}

const std::vector<Executor::Handler>& Executor::handlers() {
  static const std::vector<Handler> table = [] {
    std::vector<Handler> t(static_cast<size_t>(OpKind::optimizer_step) + 1, nullptr);
    const auto set = [&](OpKind kind, Handler handler) { t[static_cast<size_t>(kind)] = handler; };
    for (OpKind kind :
         {OpKind::forward, OpKind::backward_input, OpKind::backward_weight, OpKind::backward}) {
      set(kind, &Executor::compute);
    }
    set(OpKind::send_forward, &Executor::send);
    set(OpKind::send_backward, &Executor::send);
    set(OpKind::recv_forward, &Executor::post_receive);
    set(OpKind::recv_backward, &Executor::post_receive);
    set(OpKind::all_reduce, &Executor::all_reduce);
    set(OpKind::sync_replicas, &Executor::sync_replicas);
    set(OpKind::tied_embedding, &Executor::tied_embedding);
    set(OpKind::global_norm, &Executor::global_norm);
    set(OpKind::optimizer_step, &Executor::optimizer_step);
    return t;
  }();
  return table;
}

void Executor::send(const Op& op) {
  const auto proof = proof_of(op);
  auto& sends = proof ? held_sends_[*proof] : sends_;
  Slot& s = slot(op.chunk, op.micro_batch);
  const int stage = stage_of(op.chunk);
  if (op.kind == OpKind::send_forward) {
    const int next = stage + 1;
    const auto output = s.output.detach();
    for (const auto& slice : reshard(pipeline_.micro_batch_size, role_.dp, dp_of(next))) {
      if (slice.from_index != role_.dp_index) continue;
      const auto region =
          output.narrow(0, slice.samples.begin - mine_.begin, slice.samples.size()).contiguous();
      for (const int shard : shards_fed_by(next)) {
        sends.push_back(communicator_.send(
            scattered(next) ? my_part(region) : region,
            rank_of(group_of(next), slice.to_index, shard), tag(next, kForward, op.micro_batch),
            fmt::format("the activation of micro-batch {} for stage {}", op.micro_batch, next)));
      }
    }
    // Each send holds its region until it is done; the backward needs only the output's
    // autograd node, so its values go now (Megatron-LM's deallocate_output_tensor): one
    // activation less per micro-batch in flight.
    s.output.set_data(torch::empty({0}, s.output.options()));
  } else {
    const int previous = stage - 1;
    for (const auto& slice : reshard(pipeline_.micro_batch_size, dp_of(previous), role_.dp)) {
      if (slice.to_index != role_.dp_index) continue;
      const auto region =
          s.input_grad.narrow(0, slice.samples.begin - mine_.begin, slice.samples.size())
              .contiguous();
      for (const int shard : shards_fed_by(previous)) {
        sends.push_back(communicator_.send(
            scattered(previous) ? my_part(region) : region,
            rank_of(group_of(previous), slice.from_index, shard),
            tag(previous, kBackward, op.micro_batch),
            fmt::format("the gradient of micro-batch {} for stage {}", op.micro_batch, previous)));
      }
    }
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

template <typename Work>
void Executor::timed(trace::Interval interval, const Work& work, bool stretch) {
  // CUDA kernels run asynchronously: the op ends when the device is done with it.
  const auto synchronize = [&] {
    if (options_.device.is_cuda()) torch::cuda::synchronize(options_.device.index());
  };
  synchronize();
  const auto start = std::chrono::steady_clock::now();
  const double work_start = work_seconds();
  work();
  synchronize();
  if (stretch && options_.speed < 1.0) {
    const double emulated = (work_seconds() - work_start) / options_.speed;
    const double rest = emulated - seconds_since(start);
    if (rest > 0) std::this_thread::sleep_for(std::chrono::duration<double>(rest));
  }
  interval.start = std::chrono::duration<double>(start - start_).count();
  interval.end = seconds_since(start_);
  track_.compute.push_back(std::move(interval));
}

void Executor::compute(const Op& op) {
  const int64_t step = step_;
  // The next ops' receives go out first, so they arrive while this runs (a message moves
  // only once its receive is posted: schedule/receive_posting.h).
  const auto& ops = schedule_.ops[role_.group];
  for (const size_t j : schedule::receives_posted_at(schedule_, role_.group, op_index_)) {
    post_receive(ops[j]);
  }
  Slot& s = slot(op.chunk, op.micro_batch);
  const int stage = stage_of(op.chunk);
  StageModule& module = *chunks_[op.chunk];
  const bool last = stage == stages_ - 1;
  const trace::Interval interval{
      std::string(schedule::letter(op.kind)), stage, op.micro_batch, op.chunk, 0, 0};
  switch (op.kind) {
    case OpKind::forward: {
      wait_all(s.forward_receives, "wait RF", op.micro_batch, &s.forward_gathers);
      if (stage > 0) release_sends({OpKind::recv_forward, op.chunk, op.micro_batch});
      if (stage == 0) {
        s.input = batch_tokens(step, op.micro_batch, false);
      } else {
        // One device group holding both neighbours (several chunks, one group) hands the
        // activation over in memory: the schedule has no transfer for it.
        if (group_of(stage - 1) == role_.group) {
          s.input = slot(op.chunk - 1, op.micro_batch).output.detach();
        }
        s.input.requires_grad_(true);
      }
      const auto targets = last ? batch_tokens(step, op.micro_batch, true) : torch::Tensor();
      if (split_backward_) s.weight_grads = std::make_shared<WeightGradStore>();
      // Dropout masks are drawn for these rows' places in the global batch (dropout.h).
      // Validation draws none.
      const auto place =
          evaluating_
              ? std::nullopt
              : std::optional(DropoutPlace{
                    options_.seed, step,
                    first_sample_ + op.micro_batch * pipeline_.micro_batch_size + mine_.begin});
      torch::Tensor observed;  // the logits, where an observer wants them
      timed(interval, [&] {
        const DeferWeightGradients defer(s.weight_grads);
        const DropoutScope dropout_scope(place);
        s.output = module.forward(s.input);
        if (last) {
          if (logits_observer_ && !evaluating_) observed = s.output.detach();
          s.output = module.loss_sum(s.output, targets) / static_cast<double>(tokens_per_step_);
        }
      });
      if (observed.defined()) observe_logits(module, observed, step, op.micro_batch);
      if (last) {
        loss_sum_ += s.output.item<double>();
        // The backward starts from the scaled loss, so small gradients stay above fp16's
        // smallest number; the norm's op scales them back (global_norm).
        if (scaler_) s.output = s.output * scaler_->scale();
      }
      break;
    }
    case OpKind::backward:
    case OpKind::backward_input: {
      if (!last) {
        wait_all(s.backward_receives, "wait RB", op.micro_batch, &s.backward_gathers);
        release_sends({OpKind::recv_backward, op.chunk, op.micro_batch});
      }
      if (!last && group_of(stage + 1) == role_.group) {
        // The next stage is this group's next chunk: its input's gradient, in memory.
        Slot& next = slot(op.chunk + 1, op.micro_batch);
        s.from_next = next.input_grad;
        next.input_grad = torch::Tensor();
      }
      const std::vector<torch::Tensor> grad =
          last ? std::vector<torch::Tensor>{} : std::vector<torch::Tensor>{s.from_next};
      timed(interval, [&] {
        // With a split backward, this is B: the linear layers keep their weights'
        // gradients for W (deferred_weight_grads.h); the rest is as a whole backward.
        torch::autograd::backward({s.output}, grad);
        if (stage > 0) s.input_grad = s.input.grad();
        s.output = s.input = s.from_next = torch::Tensor();
      });
      break;
    }
    case OpKind::backward_weight: {
      timed(interval, [&] {
        s.weight_grads->apply();
        s.weight_grads.reset();
      });
      break;
    }
    default:
      break;
  }
  sample_memory();
}

double Executor::static_bytes() const {
  double bytes = masters_ ? masters_->bytes() : 0.0;
  // Each weight and its gradient (under mixed precision the gradient is the main grad,
  // in the masters' bytes).
  for (const auto& p : parameters()) {
    bytes += (masters_ ? 1.0 : 2.0) * static_cast<double>(p.nbytes());
  }
  for (const auto& [key, state] : optimizer_->state()) {
    const auto& adam = static_cast<const torch::optim::AdamWParamState&>(*state);
    for (const auto& moment : {adam.exp_avg(), adam.exp_avg_sq(), adam.max_exp_avg_sq()}) {
      if (moment.defined()) bytes += static_cast<double>(moment.nbytes());
    }
  }
  return bytes;
}

void Executor::sample_memory() {
  const auto in_use = bytes_in_use(options_.device);
  if (!in_use) return;
  double not_yet_made = 0;
  for (const auto& p : parameters()) {
    if (!p.grad().defined()) not_yet_made += static_cast<double>(p.nbytes());
  }
  track_.memory.push_back({seconds_since(start_), *in_use + not_yet_made});
}

std::vector<torch::Tensor> Executor::parameters() const {
  std::vector<torch::Tensor> all;
  for (const auto& chunk : chunks_) {
    for (const auto& p : chunk->parameters()) all.push_back(p);
  }
  return all;
}

void Executor::all_reduce(const Op& op) {
  // The bucket of this chunk's gradients (zeros for a parameter no op touched).
  StartedAllReduce started;
  started.stage = stage_of(op.chunk);
  started.chunk = op.chunk;
  started.start = seconds_since(start_);
  for (auto& p : chunks_[op.chunk]->parameters()) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    started.gradients.push_back(p.grad());
  }
  if (plan_.sequence_parallel && role_.tp > 1) {
    // Under sequence parallelism the shards' parameters held whole (norms, the biases
    // added after a reduce-scatter, positions) saw only their part of the sequence: their
    // gradients are summed over the shards first (Megatron-LM's layer-norm all-reduce).
    std::vector<torch::Tensor> whole;
    for (const auto& item : chunks_[op.chunk]->named_parameters()) {
      if (!chunks_[op.chunk]->split(item.key())) whole.push_back(item.value().grad());
    }
    if (!whole.empty()) {
      sum_over(whole, layout_.tp_ranks(role_.pipeline, role_.group, role_.dp_index), 1.0);
    }
  }
  if (role_.dp == 1) return;
  std::vector<torch::Tensor> flat;
  for (const auto& g : started.gradients) flat.push_back(g.reshape({-1}));
  // In the plan's reduce dtype (fp32 main grads may travel in 16 bits, half the bytes).
  started.buffer = torch::cat(flat).to(reduce_type_);
  started.pending = communicator_.start_all_reduce_sum(
      started.buffer, layout_.dp_ranks(role_.pipeline, role_.group, role_.tp_index));
  all_reduces_.push_back(std::move(started));
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

void Executor::finish_backward_work() {
  for (auto& [key, pending] : held_sends_) {
    for (auto& p : pending) sends_.push_back(std::move(p));
  }
  held_sends_.clear();
  wait_all(sends_, "wait sends", -1);
  for (auto& started : all_reduces_) {
    started.pending->wait();
    int64_t offset = 0;
    for (auto& g : started.gradients) {
      g.copy_(started.buffer.narrow(0, offset, g.numel()).view_as(g));
      offset += g.numel();
    }
    track_.communication.push_back({std::string(schedule::timeline_label(OpKind::all_reduce)),
                                    started.stage, -1, started.chunk, started.start,
                                    seconds_since(start_)});
  }
  all_reduces_.clear();
}

template <typename Work>
void Executor::collective(const Op& op, const Work& work) {
  finish_backward_work();
  const double begin = seconds_since(start_);
  work();
  track_.communication.push_back(
      {std::string(schedule::timeline_label(op.kind)), -1, -1, 0, begin, seconds_since(start_)});
}

void Executor::sync_replicas(const Op& op) {
  collective(op, [&] { sum_across_pipelines(); });
}

void Executor::tied_embedding(const Op& op) {
  collective(op, [&] { sum_tied_embedding(); });
}

void Executor::global_norm(const Op& op) {
  finish_backward_work();
  // Each rank adds its share (÷ its dp and the pipelines, as every dp rank of every
  // pipeline holds the same sums; what every tensor-parallel shard holds whole also ÷ tp)
  // with the head's tied copy left out, and the loss of its samples (÷ tp: every shard
  // computed it). Computing it is part of the optimizer's work (its profile includes it).
  double squares = 0;
  timed({std::string(schedule::timeline_label(OpKind::optimizer_step)), -1, -1, 0, 0, 0}, [&] {
    if (scaler_ && !evaluating_) {
      // The gradients of the scaled loss back to the loss's own (a power of two: exact).
      for (auto& p : parameters()) p.mutable_grad().mul_(1.0 / scaler_->scale());
    }
    for (const auto& chunk : chunks_) {
      const auto tied = chunk->tied_head_tokens();
      std::vector<torch::Tensor> split, whole;
      for (const auto& p : chunk->named_parameters()) {
        if (tied.defined() && p.value().is_same(tied)) continue;
        (chunk->split(p.key()) ? split : whole).push_back(p.value());
      }
      squares += gradient_squares(split) + gradient_squares(whole) / role_.tp;
    }
  });
  std::vector<torch::Tensor> totals{
      torch::tensor({squares / role_.dp / plan_.pipeline_count(), loss_sum_ / role_.tp},
                    torch::kDouble)
          .to(options_.device)};
  collective(op, [&] {
    std::vector<int> all(communicator_.world_size());
    std::iota(all.begin(), all.end(), 0);
    communicator_.all_reduce_sum(totals, all);
  });
  const auto sums = totals[0].cpu();
  result_.grad_norm = std::sqrt(sums[0].item<double>());
  result_.loss = sums[1].item<double>();
}

void Executor::optimizer_step(const Op& op) {
  finish_backward_work();
  result_.lr = options_.optimizer.lr.at(step_);
  if (scaler_) {
    // Every rank sees the same global norm, so all skip or step together.
    result_.loss_scale = scaler_->scale();
    result_.skipped = !scaler_->update(std::isfinite(result_.grad_norm));
    if (result_.skipped) {
      if (communicator_.rank() == 0) {
        log().warn(
            "step {} skipped: its gradients are not finite under loss scale {:g}; the "
            "scale is now {:g}",
            step_ + 1, result_.loss_scale, scaler_->scale());
      }
      return;
    }
  }
  const double factor = clip_factor(result_.grad_norm, options_.optimizer.clip_norm);
  timed({std::string(schedule::timeline_label(op.kind)), -1, -1, 0, 0, 0}, [&] {
    if (shards_) shards_->point_gradients();
    set_learning_rate(*optimizer_, result_.lr);
    clipped_step(*optimizer_, stepped_, factor);
    if (shards_) shards_->release_gradients();
    if (masters_) masters_->copy_to_model();
  });
  if (!shards_) return;
  shards_->stepped();
  // Every rank's updated part into the weights of all: communication, never stretched.
  const double begin = seconds_since(start_);
  shards_->gather_weights(gather_over_dp());
  track_.communication.push_back(
      {std::string(kGatherWeightsLabel), -1, -1, 0, begin, seconds_since(start_)});
}

const torch::Tensor& Executor::trained(const torch::Tensor& parameter) const {
  return masters_ ? masters_->master_of(parameter) : parameter;
}

GatherParts Executor::gather_over_dp() const {
  const auto ranks = layout_.dp_ranks(role_.pipeline, role_.group, role_.tp_index);
  return [this, ranks](const torch::Tensor& mine, std::vector<torch::Tensor>& parts) {
    communicator_.all_gather(mine, parts, ranks);
  };
}

std::vector<TrainedState> Executor::trained_state(int c) const {
  if (shards_) return shards_->whole_state(c, *optimizer_, gather_over_dp());
  std::vector<TrainedState> states;
  for (const auto& p : chunks_[c]->parameters()) {
    TrainedState state{trained(p).detach(), {}, {}, 0};
    const auto found = optimizer_->state().find(adam_state_key(trained(p)));
    if (found != optimizer_->state().end()) {  // else no step taken yet
      const auto& adam = static_cast<const torch::optim::AdamWParamState&>(*found->second);
      state.exp_avg = adam.exp_avg();
      state.exp_avg_sq = adam.exp_avg_sq();
      state.steps = adam.step();
    }
    states.push_back(std::move(state));
  }
  return states;
}

void Executor::restore_trained_state(int c, size_t i, const TrainedState& whole) {
  if (shards_) {
    shards_->restore(c, i, whole, *optimizer_);
    return;
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor parameter = chunks_[c]->parameters().at(i);
  const torch::Tensor& value = trained(parameter);
  value.detach().copy_(whole.value);
  if (!whole.exp_avg.defined()) return;
  auto state = std::make_unique<torch::optim::AdamWParamState>();
  state->step(whole.steps);
  state->exp_avg(whole.exp_avg.to(value.options()).clone());
  state->exp_avg_sq(whole.exp_avg_sq.to(value.options()).clone());
  optimizer_->state()[adam_state_key(value)] = std::move(state);
}

void Executor::trained_weights_changed() {
  if (masters_) masters_->copy_to_model();
}

void Executor::sum_tied_embedding() {
  if (!model_.config().tied_embeddings) return;
  const int head_stage = stages_ - 1;
  const int embedding_group = group_of(0);
  const int head_group = group_of(head_stage);
  torch::Tensor embedding;
  torch::Tensor head;
  const StageModule* holder = nullptr;
  for (const auto& chunk : chunks_) {
    if (chunk->holds_embedding()) embedding = chunk->embedding_tokens();
    if (chunk->holds_head()) head = chunk->tied_head_tokens();
    if (chunk->holds_embedding() || chunk->holds_head()) holder = chunk.get();
  }
  if (embedding_group == head_group) {
    // Both copies here: each takes the sum.
    const auto sum = embedding.grad() + head.grad();
    embedding.mutable_grad().copy_(sum);
    head.mutable_grad().copy_(sum);
    return;
  }
  if (!embedding.defined() && !head.defined()) return;
  auto& mine = embedding.defined() ? embedding : head;
  // Every rank of both groups holds the sum of its group already: each adds its copy's
  // gradient ÷ the ranks of its group holding it, so the total is embedding + head once.
  if (tp_of(0) == tp_of(head_stage)) {
    // Slice by slice: both ends hold the same vocabulary slices.
    auto ranks = layout_.dp_ranks(role_.pipeline, embedding_group, role_.tp_index);
    for (int r : layout_.dp_ranks(role_.pipeline, head_group, role_.tp_index)) ranks.push_back(r);
    std::vector<torch::Tensor> grads{mine.grad()};
    sum_over(grads, ranks, 1.0 / role_.dp);
    return;
  }
  // The two ends are split over different tp: the whole matrix's gradient is summed over
  // every rank of both groups, and each shard keeps its slice of it.
  const ShardSplit vocabulary{0, {model_.config().vocab}};
  std::vector<torch::Tensor> whole{whole_of(mine.grad(), vocabulary, holder->shard())};
  auto ranks = layout_.group_ranks(role_.pipeline, embedding_group);
  for (int r : layout_.group_ranks(role_.pipeline, head_group)) ranks.push_back(r);
  sum_over(whole, ranks, 1.0 / (role_.dp * role_.tp));
  mine.mutable_grad().copy_(shard_of(whole[0], vocabulary, holder->shard()));
}

void Executor::sum_across_pipelines() {
  const int pipelines = plan_.pipeline_count();
  if (pipelines == 1) return;
  // Per run of layers that the same stages hold in every pipeline, in increasing layer
  // order (so processes sharing runs meet them in the same order): every rank of those
  // stages adds its gradient ÷ its group's dp, which sums each layer once per pipeline.
  for (const auto& chunk : chunks_) {
    auto named = chunk->named_parameters();
    for (int first = chunk->first_layer(); first < chunk->end_layer();) {
      int end = chunk->end_layer();
      // The stages holding the run, and whether all of them split it as this one does.
      std::vector<std::pair<int, int>> holders;
      bool same_tp = true;
      for (int p = 0; p < pipelines; ++p) {
        const auto& other = plan_.pipeline(p);
        for (int s = 0; s < static_cast<int>(other.stages.size()); ++s) {
          const auto& stage = other.stages[s];
          if (stage.first_layer <= first && first < stage.end_layer) {
            end = std::min(end, stage.end_layer);
            holders.emplace_back(p, s % other.ranks());
            same_tp = same_tp && stage.tp == role_.tp;
          }
        }
      }
      std::vector<std::string> names;
      std::vector<torch::Tensor> grads;
      for (const auto& item : named) {
        const int layer = parameter_layer(item.key());
        if (layer < first || layer >= end) continue;
        names.push_back(item.key());
        grads.push_back(item.value().grad());
      }
      if (same_tp) {
        // Shard by shard: every holder cuts the run into the same slices.
        std::vector<int> ranks;
        for (const auto& [p, group] : holders) {
          for (int r : layout_.dp_ranks(p, group, role_.tp_index)) ranks.push_back(r);
        }
        sum_over(grads, ranks, 1.0 / role_.dp);
      } else {
        // Pipelines split the run over different tp: every rank of every holder adds the
        // whole gradients (÷ its dp·tp, as each of its group's ranks holds the same sums),
        // and each shard keeps its slice of the sum.
        std::vector<int> ranks;
        for (const auto& [p, group] : holders) {
          for (int r : layout_.group_ranks(p, group)) ranks.push_back(r);
        }
        std::vector<std::optional<ShardSplit>> splits;
        std::vector<torch::Tensor> wholes;
        for (size_t i = 0; i < grads.size(); ++i) {
          splits.push_back(chunk->split(names[i]));
          wholes.push_back(splits[i] ? whole_of(grads[i], *splits[i], chunk->shard()) : grads[i]);
        }
        sum_over(wholes, ranks, 1.0 / (role_.dp * role_.tp));
        for (size_t i = 0; i < grads.size(); ++i) {
          if (splits[i]) grads[i].copy_(shard_of(wholes[i], *splits[i], chunk->shard()));
        }
      }
      first = end;
    }
  }
}

void Executor::sum_over(std::vector<torch::Tensor>& tensors, std::vector<int> ranks, double scale) {
  // One flat buffer: one all-reduce instead of one per tensor.
  std::sort(ranks.begin(), ranks.end());
  std::vector<torch::Tensor> flat;
  for (const auto& t : tensors) flat.push_back(t.reshape({-1}) * scale);
  std::vector<torch::Tensor> buffer{torch::cat(flat)};
  communicator_.all_reduce_sum(buffer, ranks);
  int64_t offset = 0;
  for (auto& t : tensors) {
    t.copy_(buffer[0].narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

StepResult Executor::evaluate(int64_t batch) {
  // The training step's forwards on held-out windows, without dropout or gradients; its
  // GN sums the loss (the norm of no gradients is 0).
  const torch::NoGradGuard no_gradients;
  evaluating_ = true;
  std::swap(schedule_, forward_schedule_);
  const auto restore = [&] {
    std::swap(schedule_, forward_schedule_);
    evaluating_ = false;
  };
  try {
    StepResult result = step(batch);
    restore();
    return result;
  } catch (...) {
    restore();
    throw;
  }
}

StepResult Executor::step(int64_t step) {
  start_ = std::chrono::steady_clock::now();
  track_ = trace::Track();
  result_ = StepResult();
  loss_sum_ = 0;
  step_ = step;
  for (auto& s : slots_) s = Slot();
  if (masters_) {
    masters_->zero_main_grads();
  } else {
    for (auto& p : parameters()) p.mutable_grad() = torch::Tensor();
  }
  track_.static_bytes = static_bytes();
  reset_device_peak(options_.device);
  sample_memory();

  const auto& ops = schedule_.ops[role_.group];
  for (op_index_ = 0; op_index_ < ops.size(); ++op_index_) {
    const Op& op = ops[op_index_];
    (this->*handlers()[static_cast<size_t>(op.kind)])(op);
    track_.ops.push_back(schedule::to_string(op, /*show_chunk=*/true));
  }
  finish_backward_work();  // a schedule without an epilogue ends here
  result_.seconds = seconds_since(start_);
  track_.device_peak_bytes = device_peak_bytes(options_.device).value_or(0);
  result_.track = std::move(track_);
  return std::move(result_);
}

}  // namespace hyperpipe::runtime
