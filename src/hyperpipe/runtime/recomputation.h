// Activation recomputation (Chen et al., 2016, "Training Deep Nets with Sublinear Memory
// Cost"; Megatron-LM's `full` and `selective` modes, Korthikanti et al., 2022): a piece of
// the forward keeps only its inputs for the backward, and the backward runs it again, with
// autograd recording, and back-propagates through the rerun. Activation memory is traded
// for a second forward of that piece.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace hyperpipe::runtime {

// A piece of the forward: a pure function of its inputs and of parameters it reads (the
// same values on the rerun, so the rerun reproduces the first run bit for bit).
using Recomputable = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// `function(inputs)`, keeping only `inputs` for the backward. The rerun's gradients reach
// the inputs and the parameters the piece reads (into .grad, or into the store the forward
// deferred into: deferred_weight_grads.h); tensor-parallel sums inside it run again on the
// rerun, in the same order on every shard. Where no gradient is recorded (no input needs
// one, or autograd is off) it is simply `function(inputs)`.
torch::Tensor recomputed(Recomputable function, const std::vector<torch::Tensor>& inputs);

}  // namespace hyperpipe::runtime
