// A pipeline stage's share of the model: layers [first, end) of the chain as one module.
// Its parameters are named by layer ("layer7.qkv"), so checkpoints move between splits.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/model/model.h"
#include "hyperpipe/runtime/layers.h"

namespace hyperpipe::runtime {

class StageModule : public torch::nn::Module {
 public:
  // `shard`: this rank's share of each layer under tensor parallelism; `recompute`: what
  // its blocks rerun in the backward instead of keeping (layers.h).
  // `layer_built`, where given, hears of each layer as it is made (start-up progress).
  StageModule(const model::Model& model, int first_layer, int end_layer, uint64_t seed,
              const TensorShard& shard = {}, model::Recompute recompute = model::Recompute::none,
              const std::function<void()>& layer_built = {});

  // Token ids [b, s] when the stage holds the embedding, else hidden states [b, s, h];
  // returns hidden states, or logits [b, s, vocab] when it holds the head (the shard's
  // vocabulary slice of them under tensor parallelism).
  torch::Tensor forward(torch::Tensor input);

  int first_layer() const { return first_; }
  int end_layer() const { return end_; }
  bool holds_embedding() const { return first_ == 0; }
  bool holds_head() const { return end_ == layers_; }
  // The embedding's token matrix and the head's tied copy of it, where this stage holds
  // them (undefined tensors otherwise).
  torch::Tensor embedding_tokens();
  torch::Tensor tied_head_tokens();
  // Σ of the cross-entropy over every token of the head's output and the targets [b, s]:
  // over the whole vocabulary also when the shards hold slices of it.
  torch::Tensor loss_sum(const torch::Tensor& logits, const torch::Tensor& targets) const;
  // The head's output over the whole vocabulary: collective over the tensor-parallel
  // shards, each with its slice (one shard: `logits` itself).
  torch::Tensor whole_logits(const torch::Tensor& logits) const;
  // How parameter `name` ("layer7.qkv") is this shard's slice of the layer's; nullopt for
  // one every shard holds whole, and for every parameter when unsharded.
  std::optional<ShardSplit> split(const std::string& name) const;
  const TensorShard& shard() const { return shard_; }
  // This shard's slice of parameter `name` given the whole of it (as checkpoints hold
  // parameters), or `whole` itself where the parameter is not split.
  torch::Tensor share_of_whole(const std::string& name, const torch::Tensor& whole) const;
  // The position of parameter `name` among named_parameters() (the order of parameters()).
  size_t parameter_index(const std::string& name) const;

 private:
  int first_;
  int end_;
  int layers_;
  int64_t vocab_;
  TensorShard shard_;
  std::vector<std::shared_ptr<LayerModule>> chain_;
};

// The layer a parameter name belongs to: 7 for "layer7.qkv".
int parameter_layer(const std::string& name);

// Σ of the cross-entropy over every token: logits [b, s, vocab], targets [b, s]. The
// caller divides by the tokens of the whole global batch, so micro-batches and data-
// parallel shards add up to the mean over the batch.
torch::Tensor cross_entropy_sum(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace hyperpipe::runtime
