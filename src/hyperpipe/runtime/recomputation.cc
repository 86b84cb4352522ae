#include "hyperpipe/runtime/recomputation.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "hyperpipe/runtime/deferred_weight_grads.h"

namespace hyperpipe::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the backward needs beside the inputs: the piece itself, and the store its linear
// layers deferred into when it first ran (the rerun defers into the same one).
struct Rerun : torch::CustomClassHolder {
  Recomputable function;
  std::shared_ptr<WeightGradStore> store;
};

constexpr const char* kRerunKey = "rerun";

class Recomputation : public torch::autograd::Function<Recomputation> {
 public:
  // autograd::Function runs this with autograd off: nothing inside is kept.
  static torch::Tensor forward(AutogradContext* ctx, Recomputable function,
                               std::shared_ptr<WeightGradStore> store, at::TensorList inputs) {
    variable_list kept(inputs.begin(), inputs.end());
    ctx->save_for_backward(kept);
    auto output = function(kept);
    auto rerun = c10::make_intrusive<Rerun>();
    rerun->function = std::move(function);
    rerun->store = std::move(store);
    ctx->saved_data[kRerunKey] = c10::IValue::make_capsule(std::move(rerun));
    return output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list output_grads) {
    const auto holder = ctx->saved_data.at(kRerunKey).toCapsule();
    const auto& rerun = static_cast<const Rerun&>(*holder);
    // Leaves of the rerun's own graph: the inputs' gradients gather in them.
    variable_list leaves;
    for (const auto& input : ctx->get_saved_variables()) {
      leaves.push_back(input.detach().requires_grad_(input.requires_grad()));
    }
    torch::Tensor output;
    {
      const torch::AutoGradMode record(true);
      const DeferWeightGradients defer(rerun.store);
      output = rerun.function(leaves);
    }
    torch::autograd::backward({output}, {output_grads.at(0)});
    // No gradient for the function and the store, then one per input.
    variable_list grads(2);
    for (const auto& leaf : leaves)
      grads.push_back(leaf.requires_grad() ? leaf.grad() : torch::Tensor());
    return grads;
  }
};

}  // namespace

torch::Tensor recomputed(Recomputable function, const std::vector<torch::Tensor>& inputs) {
  const bool recorded =
      torch::GradMode::is_enabled() &&
      std::any_of(inputs.begin(), inputs.end(), [](const auto& t) { return t.requires_grad(); });
  if (!recorded) return function(inputs);
  // As a TensorList, so autograd counts each input as one of the function's (a vector
  // would be taken for a single non-tensor argument).
  return Recomputation::apply(std::move(function), current_weight_grad_store(),
                              at::TensorList(inputs));
}

}  // namespace hyperpipe::runtime
