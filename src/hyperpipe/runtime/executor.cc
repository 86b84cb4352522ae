#include "hyperpipe/runtime/executor.h"

#include <fmt/format.h>

#include <algorithm>

#include "hyperpipe/common/log.h"
#include "hyperpipe/plan/plan_schedule.h"
#include "hyperpipe/runtime/deferred_weight_grads.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/executor_slots.h"
#include "hyperpipe/runtime/memory_in_use.h"
#include "hyperpipe/runtime/process_memory.h"
#include "hyperpipe/schedule/receive_posting.h"

namespace hyperpipe::runtime {

using schedule::Op;
using schedule::OpKind;

Executor::Executor(const model::Model& model, const plan::Plan& plan,
                   const plan::RankLayout& layout, Communicator& communicator,
                   const training::TextCorpus& data, ExecutorOptions options)
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
      mine_(plan::shard(pipeline_.micro_batch_size, role_.dp, role_.dp_index)) {
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

torch::Tensor Executor::batch_tokens(int64_t step, int micro_batch, bool targets) const {
  const int64_t seq = data_.seq_len();
  std::vector<int64_t> tokens;
  tokens.reserve(static_cast<size_t>(mine_.size() * seq));
  for (int64_t s = mine_.begin; s < mine_.end; ++s) {
    const int64_t index = training::sample_index(
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

const schedule::OpKindTable<Executor::Handler>& Executor::handlers() {
  static constexpr schedule::OpKindTable<Handler> table = [] {
    schedule::OpKindTable<Handler> t{};
    const auto set = [&](OpKind kind, Handler handler) { t[schedule::op_index(kind)] = handler; };
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
  static_assert(schedule::every_kind_handled(table), "an op kind has no handler");
  return table;
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
    (this->*handlers()[schedule::op_index(op.kind)])(op);
    track_.ops.push_back(schedule::to_string(op, /*show_chunk=*/true));
  }
  finish_backward_work();  // a schedule without an epilogue ends here
  result_.seconds = seconds_since(start_);
  track_.device_peak_bytes = device_peak_bytes(options_.device).value_or(0);
  result_.track = std::move(track_);
  return std::move(result_);
}
}  // namespace hyperpipe::runtime
