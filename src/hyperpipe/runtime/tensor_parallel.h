// Megatron-LM's tensor-parallel communication as autograd ops (Shoeybi et al., 2019, §3):
// `f` before a column-parallel product (identity forward, gradient summed over the
// shards backward) and `g` after a row-parallel one (partial sums summed forward,
// identity backward), and the vocabulary-parallel cross-entropy over a head whose logits
// are split by vocabulary slice, so no rank ever holds all the logits.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

namespace hyperpipe::runtime {

// In-place sum of a tensor over the ranks of one tensor-parallel group. Every rank of
// the group calls it in the same order (the shards run the same ops).
using ShardAllReduce = std::function<void(torch::Tensor&)>;

// f: the input of a column-parallel product, whose gradient each shard holds only its
// part of. Without `all_reduce` (a shard profiled alone) the input itself.
torch::Tensor copy_to_shards(const torch::Tensor& input,
                             const std::shared_ptr<const ShardAllReduce>& all_reduce);

// g: the sum of the shards' partial results, its gradient passed to each shard unchanged.
// Without `all_reduce` the partial result itself.
torch::Tensor sum_over_shards(const torch::Tensor& partial,
                              const std::shared_ptr<const ShardAllReduce>& all_reduce);

// Σ over tokens of the cross-entropy whose logits [b, s, slice] are this shard's vocabulary
// slice, starting at `vocab_start` of the whole vocabulary: every shard returns the same
// loss, and the gradient of its own slice of the logits.
torch::Tensor vocab_parallel_cross_entropy_sum(
    const torch::Tensor& logits, const torch::Tensor& targets, int64_t vocab_start, int shards,
    int rank, const std::shared_ptr<const ShardAllReduce>& all_reduce);

}  // namespace hyperpipe::runtime
