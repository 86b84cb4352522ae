// The executor's collectives: each bucket's gradient all-reduce over the group's
// data-parallel ranks, the sums across pipelines and of the tied embedding, the global
// norm, and the optimizer step (with the sharded optimizer's gather of the weights).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hyperpipe/common/log.h"
#include "hyperpipe/runtime/executor.h"
#include "hyperpipe/runtime/executor_slots.h"
#include "hyperpipe/runtime/timing.h"

namespace hyperpipe::runtime {

using schedule::Op;
using schedule::OpKind;

namespace {

// The sharded optimizer's gather of the updated weights on the communication track (the
// simulator counts it in the optimizer step, cost::CostModel::optimizer_time).
constexpr std::string_view kGatherWeightsLabel = "gather weights";

}  // namespace

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
    // plan::Slice by slice: both ends hold the same vocabulary slices.
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
}  // namespace hyperpipe::runtime
