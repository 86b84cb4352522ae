// Megatron-LM's sequence parallelism (Korthikanti et al., 2022, "Reducing Activation
// Recomputation in Large Transformer Models", §4.2.2) under tensor parallelism: between
// the column- and row-parallel products each shard holds 1/tp of the sequence, so the
// norms, dropouts and residual adds (and what they keep for the backward) are split too.
// The all-reduce after a row-parallel product becomes a reduce-scatter along the sequence
// (ḡ) and the copy before a column-parallel one an all-gather (g), whose inputs are kept
// as the shard's part and gathered again in the backward, as Megatron-LM's linear layers
// do. A stage takes its input whole (the transfers between stages are as without) and
// gathers its output whole again.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

#include "hyperpipe/runtime/tensor_parallel.h"

namespace hyperpipe::runtime {

// One tensor-parallel group's collectives along the sequence: dimension 1 of [b, s, …],
// cut into `size` equal parts, part `rank` this shard's.
struct SequenceShards {
  int size = 1;
  int rank = 0;
  // Every shard's part [b, s/size, …] → the whole [b, s, …], in the same order on every
  // shard.
  std::function<torch::Tensor(const torch::Tensor&)> all_gather;
  // Every shard's whole [b, s, …] summed → this shard's part of the sum [b, s/size, …].
  std::function<torch::Tensor(const torch::Tensor&)> reduce_scatter;

  // This shard's part of a whole [b, s, …] (a view).
  torch::Tensor part_of(const torch::Tensor& whole) const;
  // The first position of this shard's part of a sequence of `whole` positions.
  int64_t first_position(int64_t whole) const { return whole / size * rank; }
};

// The shard's part of an activation every shard holds whole; backward, the parts'
// gradients gathered whole (Megatron-LM's scatter_to_sequence_parallel_region).
torch::Tensor scatter_to_sequence(const torch::Tensor& whole, const SequenceShards& shards);

// The whole activation from every shard's part, for a consumer that holds it whole on
// every shard (the next stage); backward, the shard's part of the whole gradient.
torch::Tensor gather_from_sequence(const torch::Tensor& part, const SequenceShards& shards);

// ḡ: the shards' partial results summed and cut along the sequence, each shard keeping
// its part; backward, the parts' gradients gathered whole.
torch::Tensor reduce_scatter_to_sequence(const torch::Tensor& partial,
                                         const SequenceShards& shards);

// g fused with column-parallel products of one input: the shards' parts [b, s/tp, h]
// gathered whole and multiplied by each of `weights` (plus its bias, where `biases` has
// one). Only the part is kept for the backward, which gathers it again; the input's
// gradient is summed over the shards and cut to the part (reduce-scatter). Inside a
// DeferWeightGradients scope the weights' gradients are deferred to W (with the gathered
// input), as runtime::linear defers them.
std::vector<torch::Tensor> gathered_linears(const torch::Tensor& part,
                                            const std::vector<torch::Tensor>& weights,
                                            const std::vector<torch::Tensor>& biases,
                                            const SequenceShards& shards);

}  // namespace hyperpipe::runtime
