#include "hyperpipe/runtime/deferred_weight_grads.h"

#include <utility>

namespace hyperpipe::runtime {
namespace {

// The store forwards on this thread defer into (forward always runs on the caller's
// thread; the backward may not, so the product's hook holds the store itself).
thread_local std::shared_ptr<WeightGradStore> current_store;

void accumulate(torch::Tensor& parameter, const torch::Tensor& grad) {
  if (parameter.grad().defined()) {
    parameter.mutable_grad().add_(grad);
  } else {
    parameter.mutable_grad() = grad;
  }
}

}  // namespace

void WeightGradStore::keep(torch::Tensor input, torch::Tensor output_grad, torch::Tensor weight,
                           torch::Tensor bias) {
  std::lock_guard lock(mutex_);
  products_.push_back(
      {std::move(input), std::move(output_grad), std::move(weight), std::move(bias)});
}

bool WeightGradStore::empty() const {
  std::lock_guard lock(mutex_);
  return products_.empty();
}

void WeightGradStore::apply() {
  std::vector<Product> products;
  {
    std::lock_guard lock(mutex_);
    products.swap(products_);
  }
  torch::NoGradGuard no_grad;
  for (auto& product : products) {
    const auto grad = product.output_grad.reshape({-1, product.output_grad.size(-1)});
    const auto input = product.input.reshape({-1, product.input.size(-1)});
    accumulate(product.weight, grad.t().mm(input));
    if (product.bias.defined()) accumulate(product.bias, grad.sum(0));
  }
}

DeferWeightGradients::DeferWeightGradients(std::shared_ptr<WeightGradStore> store)
    : previous_(std::exchange(current_store, std::move(store))) {}

DeferWeightGradients::~DeferWeightGradients() {
  current_store = std::move(previous_);
}

std::shared_ptr<WeightGradStore> current_weight_grad_store() {
  return current_store;
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  // Without a store, or where no gradient flows back through x, autograd does it all.
  if (!current_store || !torch::GradMode::is_enabled() || !x.requires_grad()) {
    return torch::nn::functional::linear(x, weight, bias);
  }
  auto output =
      torch::nn::functional::linear(x, weight.detach(), bias.defined() ? bias.detach() : bias);
  output.register_hook([store = current_store, input = x.detach(), weight, bias](
                           const torch::Tensor& grad) { store->keep(input, grad, weight, bias); });
  return output;
}

}  // namespace hyperpipe::runtime
