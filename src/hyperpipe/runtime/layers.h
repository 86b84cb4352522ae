// The model's chain (embedding, blocks, head) as libtorch modules, one module per layer
// of model::Model, so a stage builds exactly its layer range. Weights are drawn from a
// generator seeded by the layer index, so every split of the model starts identical.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/model/layer.h"
#include "hyperpipe/model/transformer_config.h"
#include "hyperpipe/runtime/lean_ops.h"
#include "hyperpipe/runtime/sequence_parallel.h"
#include "hyperpipe/runtime/tensor_parallel.h"

namespace hyperpipe::runtime {

// GPT-2's initialisation (Radford et al., 2019, and its released code): weights drawn
// from N(0, 0.02²), biases zero, norms one; the projections back into the residual
// stream scaled by 1/√(2·blocks) so the residual's variance does not grow with depth.
inline constexpr double kInitStd = 0.02;

// One rank's share of a layer under tensor parallelism (Megatron-LM, Shoeybi et al.,
// 2019): a block holds heads/size attention heads (and key/value heads) and ffn/size MLP
// columns, the embedding and the head a vocabulary slice of ⌈vocab/size⌉ rows. The
// weights are the matching slices of the whole layer's, so the shards of one layer add up
// to it. With `all_reduce`, the shards of a tensor-parallel run sum their partial results
// (after the attention and the MLP, and the embedding's lookups) and, backwards, the
// gradients of the inputs they share (tensor_parallel.h); without it a shard keeps its
// partial sums, which is what `hyperpipe profile --tp` times (the cost model adds the
// all-reduces from the links). The head returns its vocabulary slice of the logits.
struct TensorShard {
  int size = 1;
  int rank = 0;
  std::shared_ptr<const ShardAllReduce> all_reduce;
  // With it, sequence parallelism (sequence_parallel.h): between the tensor-parallel
  // products the layers hold the shard's part of the sequence.
  std::shared_ptr<const SequenceShards> sequence;
  // The first row of this shard's slice of a dimension of n rows.
  int64_t first_row(int64_t n) const { return std::min(n, (n + size - 1) / size * rank); }
};

// Where a parameter split over the shards lies in the whole layer's: along `dim`, the
// whole is `parts` consecutive segments (three for the fused query, key and value rows),
// each cut into the shards' slices of ⌈part/size⌉ rows (the last shard may hold fewer).
struct ShardSplit {
  int64_t dim = 0;
  std::vector<int64_t> parts;
};

// The shard's slice of a whole parameter (the whole itself, uncopied, for one shard).
torch::Tensor shard_of(const torch::Tensor& whole, const ShardSplit& split,
                       const TensorShard& shard);

// The whole parameter from every shard's slice: collective, each shard calls it with its
// own (through the shard's all_reduce; one shard: `mine` itself).
torch::Tensor whole_of(const torch::Tensor& mine, const ShardSplit& split,
                       const TensorShard& shard);

// One layer of the chain. Embedding: token ids [b, s] (int64) → hidden [b, s, h];
// block: hidden → hidden; head: hidden → logits [b, s, vocab].
class LayerModule : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
  // The head's copy of a tied embedding matrix (nullptr elsewhere or when untied): its
  // gradient is summed with the embedding's every step so the two stay equal.
  virtual torch::Tensor tied_weight() { return {}; }
  // How parameter `name` is split over the tensor-parallel shards (each holds its own
  // slice); nullopt for one every shard holds whole (norms, biases added after the sum).
  virtual std::optional<ShardSplit> split(const std::string& name) const = 0;
};

// Throws InputError when the runtime cannot build this shape (e.g. a projected
// embedding width, or heads that do not split over the shards). `recompute` applies to
// decoder blocks, as Megatron-LM's does: `selective` reruns the attention core (scores,
// mask, softmax, their product with the values) in the backward, keeping the queries, keys
// and values; `full` keeps only the block's input and reruns the whole block
// (recomputation.h). The embedding and the head keep their activations.
std::shared_ptr<LayerModule> make_layer(const model::Layer& layer,
                                        const model::TransformerConfig& config, uint64_t seed,
                                        const TensorShard& shard = {},
                                        model::Recompute recompute = model::Recompute::none);

// The embedding's token matrix, or the head's tied copy of it: both drawn first from the
// embedding layer's generator, so they start equal.
torch::Generator layer_generator(uint64_t seed, int layer_index);

}  // namespace hyperpipe::runtime
