#include "hyperpipe/runtime/sequence_parallel.h"

#include <utility>

#include "hyperpipe/runtime/deferred_weight_grads.h"

namespace hyperpipe::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The shards' collectives travel to backward as the address of the object the layer owns
// (it outlives every graph built through it); saved_data holds only IValues.
int64_t address_of(const SequenceShards& shards) {
  return reinterpret_cast<int64_t>(&shards);
}
const SequenceShards& shards_at(const c10::IValue& address) {
  return *reinterpret_cast<const SequenceShards*>(address.toInt());
}

torch::Tensor summed_part(const torch::Tensor& partial, const SequenceShards& shards) {
  return shards.reduce_scatter(partial.contiguous());
}

struct ScatterToSequence : torch::autograd::Function<ScatterToSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& whole, int64_t shards) {
    ctx->saved_data["shards"] = shards;
    return shards_at(shards).part_of(whole).contiguous();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {shards_at(ctx->saved_data["shards"]).all_gather(grads[0].contiguous()), {}};
  }
};

struct GatherFromSequence : torch::autograd::Function<GatherFromSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& part, int64_t shards) {
    ctx->saved_data["shards"] = shards;
    return shards_at(shards).all_gather(part.contiguous());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {shards_at(ctx->saved_data["shards"]).part_of(grads[0]).contiguous(), {}};
  }
};

struct ReduceScatterToSequence : torch::autograd::Function<ReduceScatterToSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& partial, int64_t shards) {
    ctx->saved_data["shards"] = shards;
    return summed_part(partial, shards_at(shards));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {shards_at(ctx->saved_data["shards"]).all_gather(grads[0].contiguous()), {}};
  }
};

// The store the forward deferred into, kept for the backward (null: not deferred).
struct DeferredInto : torch::CustomClassHolder {
  std::shared_ptr<WeightGradStore> store;
};

struct GatheredLinears : torch::autograd::Function<GatheredLinears> {
  // Runs with autograd off: the gathered input is not kept.
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& part,
                               at::TensorList weights, at::TensorList biases, int64_t shards,
                               std::shared_ptr<WeightGradStore> store) {
    variable_list kept{part};
    kept.insert(kept.end(), weights.begin(), weights.end());
    kept.insert(kept.end(), biases.begin(), biases.end());
    ctx->save_for_backward(kept);
    ctx->saved_data["shards"] = shards;
    ctx->saved_data["weights"] = static_cast<int64_t>(weights.size());
    auto deferred = c10::make_intrusive<DeferredInto>();
    deferred->store = std::move(store);
    ctx->saved_data["store"] = c10::IValue::make_capsule(std::move(deferred));
    const auto whole = shards_at(shards).all_gather(part.contiguous());
    variable_list outputs;
    for (size_t i = 0; i < weights.size(); ++i) {
      outputs.push_back(torch::nn::functional::linear(
          whole, weights[i], i < biases.size() ? biases[i] : torch::Tensor()));
    }
    return outputs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list output_grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& shards = shards_at(ctx->saved_data["shards"]);
    const auto count = static_cast<size_t>(ctx->saved_data["weights"].toInt());
    const auto holder = ctx->saved_data["store"].toCapsule();
    const auto& store = static_cast<const DeferredInto&>(*holder).store;
    const auto whole = shards.all_gather(saved[0].contiguous());  // gathered again
    torch::Tensor input_grad;
    variable_list weight_grads(count), bias_grads(saved.size() - 1 - count);
    for (size_t i = 0; i < count; ++i) {
      const auto& weight = saved[1 + i];
      const auto bias = i < bias_grads.size() ? saved[1 + count + i] : torch::Tensor();
      const auto& grad = output_grads[i];
      const auto product = grad.matmul(weight);
      input_grad = input_grad.defined() ? input_grad + product : product;
      if (store) {
        // W turns these into the weights' gradients (deferred_weight_grads.h).
        store->keep(whole, grad, weight, bias);
        continue;
      }
      const auto rows = grad.reshape({-1, grad.size(-1)});
      weight_grads[i] = rows.t().mm(whole.reshape({-1, whole.size(-1)}));
      if (bias.defined()) bias_grads[i] = rows.sum(0);
    }
    variable_list grads{summed_part(input_grad, shards)};
    grads.insert(grads.end(), weight_grads.begin(), weight_grads.end());
    grads.insert(grads.end(), bias_grads.begin(), bias_grads.end());
    grads.emplace_back();  // shards
    grads.emplace_back();  // store
    return grads;
  }
};

}  // namespace

torch::Tensor SequenceShards::part_of(const torch::Tensor& whole) const {
  const int64_t length = whole.size(1) / size;
  return whole.narrow(1, length * rank, length);
}

torch::Tensor scatter_to_sequence(const torch::Tensor& whole, const SequenceShards& shards) {
  return ScatterToSequence::apply(whole, address_of(shards));
}

torch::Tensor gather_from_sequence(const torch::Tensor& part, const SequenceShards& shards) {
  return GatherFromSequence::apply(part, address_of(shards));
}

torch::Tensor reduce_scatter_to_sequence(const torch::Tensor& partial,
                                         const SequenceShards& shards) {
  return ReduceScatterToSequence::apply(partial, address_of(shards));
}

std::vector<torch::Tensor> gathered_linears(const torch::Tensor& part,
                                            const std::vector<torch::Tensor>& weights,
                                            const std::vector<torch::Tensor>& biases,
                                            const SequenceShards& shards) {
  // Weights' gradients deferred only where autograd would defer them (runtime::linear).
  auto store = current_weight_grad_store();
  if (!torch::GradMode::is_enabled() || !part.requires_grad()) store = nullptr;
  return GatheredLinears::apply(part, at::TensorList(weights), at::TensorList(biases),
                                address_of(shards), std::move(store));
}

}  // namespace hyperpipe::runtime
