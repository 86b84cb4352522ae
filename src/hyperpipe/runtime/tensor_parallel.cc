#include "hyperpipe/runtime/tensor_parallel.h"

namespace hyperpipe::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The all-reduce travels to backward as the address of the function the layer owns (the
// layer outlives every graph built through it); saved_data holds only IValues.
int64_t address_of(const ShardAllReduce& all_reduce) {
  return reinterpret_cast<int64_t>(&all_reduce);
}
const ShardAllReduce& all_reduce_at(const c10::IValue& address) {
  return *reinterpret_cast<const ShardAllReduce*>(address.toInt());
}

struct CopyToShards : torch::autograd::Function<CopyToShards> {
  static torch::Tensor forward(AutogradContext* context, const torch::Tensor& input,
                               int64_t all_reduce) {
    context->saved_data["all_reduce"] = all_reduce;
    return input;
  }
  static variable_list backward(AutogradContext* context, variable_list grads) {
    auto sum = grads[0].contiguous().clone();
    all_reduce_at(context->saved_data["all_reduce"])(sum);
    return {sum, torch::Tensor()};
  }
};

struct SumOverShards : torch::autograd::Function<SumOverShards> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& partial, int64_t all_reduce) {
    auto sum = partial.contiguous().clone();
    all_reduce_at(all_reduce)(sum);
    return sum;
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], torch::Tensor()};
  }
};

}  // namespace

torch::Tensor copy_to_shards(const torch::Tensor& input,
                             const std::shared_ptr<const ShardAllReduce>& all_reduce) {
  if (!all_reduce || !*all_reduce) return input;
  return CopyToShards::apply(input, address_of(*all_reduce));
}

torch::Tensor sum_over_shards(const torch::Tensor& partial,
                              const std::shared_ptr<const ShardAllReduce>& all_reduce) {
  if (!all_reduce || !*all_reduce) return partial;
  return SumOverShards::apply(partial, address_of(*all_reduce));
}

torch::Tensor vocab_parallel_cross_entropy_sum(
    const torch::Tensor& logits, const torch::Tensor& targets, int64_t vocab_start, int shards,
    int rank, const std::shared_ptr<const ShardAllReduce>& all_reduce) {
  const int64_t slice = logits.size(-1);
  // The largest logit of every token over the whole vocabulary, for a stable exp: each
  // shard puts its own maxima in its row, the sum holds every shard's, the max is taken.
  // A constant per token, so it carries no gradient.
  auto maxima = torch::zeros({shards, logits.size(0), logits.size(1)}, logits.options());
  maxima[rank].copy_(std::get<0>(logits.detach().max(-1)));
  if (all_reduce && *all_reduce) (*all_reduce)(maxima);
  const auto shifted = logits - std::get<0>(maxima.max(0)).unsqueeze(-1);
  const auto sum_exp = sum_over_shards(shifted.exp().sum(-1), all_reduce);
  // The target's logit, from the one shard whose slice holds it (zero from the others).
  const auto local = targets - vocab_start;
  const auto mine = local.ge(0).logical_and(local.lt(slice));
  const auto picked = shifted.gather(-1, local.clamp(0, slice - 1).unsqueeze(-1)).squeeze(-1) *
                      mine.to(logits.dtype());
  const auto target_logit = sum_over_shards(picked, all_reduce);
  return (sum_exp.log() - target_logit).sum();
}

}  // namespace hyperpipe::runtime
