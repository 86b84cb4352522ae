// Zero-bubble schedules split a backward into B, the input's gradient (on the pipeline's
// critical path), and W, the weights' gradient (deferrable into bubbles). libtorch runs a
// backward as one pass, so the linear layers, which hold nearly all of a transformer's
// weight-gradient work, defer theirs: a forward run inside a DeferWeightGradients scope
// multiplies by detached weights and, when the backward reaches each product, keeps its
// input and output gradient; W later turns them into the weights' gradients. This is the
// scheme of Megatron-LM's zero-bubble WeightGradStore (Qi et al., "Zero Bubble Pipeline
// Parallelism", ICLR 2024). The other parameters (norms, embedding) get theirs in B.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <vector>

namespace hyperpipe::runtime {

// The deferred products of one micro-batch of one stage.
class WeightGradStore {
 public:
  // Adds ∂L/∂weight (and ∂L/∂bias) of every deferred product to the parameters'
  // gradients and empties the store.
  void apply();
  bool empty() const;

  // Called by the backward (possibly on an autograd device thread).
  void keep(torch::Tensor input, torch::Tensor output_grad, torch::Tensor weight,
            torch::Tensor bias);

 private:
  struct Product {
    torch::Tensor input;        // [..., in], detached
    torch::Tensor output_grad;  // [..., out]
    torch::Tensor weight;       // [out, in], the parameter itself
    torch::Tensor bias;         // [out] or undefined
  };
  mutable std::mutex mutex_;
  std::vector<Product> products_;
};

// While one is alive on this thread, `linear` defers its weights' gradients into `store`.
class DeferWeightGradients {
 public:
  explicit DeferWeightGradients(std::shared_ptr<WeightGradStore> store);
  ~DeferWeightGradients();
  DeferWeightGradients(const DeferWeightGradients&) = delete;
  DeferWeightGradients& operator=(const DeferWeightGradients&) = delete;

 private:
  std::shared_ptr<WeightGradStore> previous_;
};

// The store `linear` defers into on this thread (null outside a DeferWeightGradients scope).
std::shared_ptr<WeightGradStore> current_weight_grad_store();

// x·weightᵀ + bias, as torch::nn::functional::linear; inside a DeferWeightGradients scope
// the weights' gradients are deferred.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias = {});

}  // namespace hyperpipe::runtime
