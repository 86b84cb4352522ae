// AdamW as HyperPipe trains with it: decoupled weight decay on matrices only (not on
// biases, norms or positions' vectors), gradients clipped by their global norm first.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "hyperpipe/training/optimizer_options.h"

namespace hyperpipe::runtime {

// PyTorch's clip_grad_norm_ adds this to the norm before dividing.
inline constexpr double kClipEpsilon = 1e-6;

std::unique_ptr<torch::optim::AdamW> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                    const training::OptimizerOptions& options);
// The same for tensors that are not shaped as their parameters (a sharded optimizer's
// flat pieces): `decayed` says for each whether weight decay applies.
std::unique_ptr<torch::optim::AdamW> make_optimizer(const std::vector<torch::Tensor>& tensors,
                                                    const std::vector<bool>& decayed,
                                                    const training::OptimizerOptions& options);

// The optimizer's key for a tensor it steps: libtorch keys AdamW state by the address of
// the tensor's impl (Optimizer::state()).
void* adam_state_key(const torch::Tensor& tensor);

// The factor clip_grad_norm_ scales gradients by for this global norm (1 when within).
double clip_factor(double global_norm, double clip_norm);

// Σ of the squared gradients of `parameters` (those that have one): this rank's share
// of the squared global norm.
double gradient_squares(const std::vector<torch::Tensor>& parameters);

// Every parameter group's rate from now on (the schedule's, step by step).
void set_learning_rate(torch::optim::Optimizer& optimizer, double rate);

// The step after the norm is known: gradients scaled by `factor` where it clips (< 1),
// then the optimizer's update.
void clipped_step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters,
                  double factor);

}  // namespace hyperpipe::runtime
