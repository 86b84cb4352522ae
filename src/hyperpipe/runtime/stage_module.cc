#include "hyperpipe/runtime/stage_module.h"

#include <numeric>
#include <string>

namespace hyperpipe::runtime {

StageModule::StageModule(const model::Model& model, int first_layer, int end_layer, uint64_t seed,
                         const TensorShard& shard, model::Recompute recompute,
                         const std::function<void()>& layer_built)
    : first_(first_layer),
      end_(end_layer),
      layers_(model.num_layers()),
      vocab_(model.config().vocab),
      shard_(shard) {
  for (int l = first_; l < end_; ++l) {
    chain_.push_back(make_layer(model.layers().at(l), model.config(), seed, shard, recompute));
    register_module("layer" + std::to_string(l), chain_.back());
    if (layer_built) layer_built();
  }
}

torch::Tensor StageModule::forward(torch::Tensor input) {
  // Under sequence parallelism a stage takes its input whole and hands its output on
  // whole: what crosses to the next stage is as without.
  if (shard_.sequence && !holds_embedding()) input = scatter_to_sequence(input, *shard_.sequence);
  for (auto& layer : chain_) input = layer->forward(input);
  if (shard_.sequence && !holds_head()) input = gather_from_sequence(input, *shard_.sequence);
  return input;
}

torch::Tensor StageModule::embedding_tokens() {
  if (!holds_embedding()) return {};
  return chain_.front()->named_parameters(false)["tokens"];
}

torch::Tensor StageModule::tied_head_tokens() {
  if (!holds_head()) return {};
  return chain_.back()->tied_weight();
}

torch::Tensor StageModule::loss_sum(const torch::Tensor& logits_as_run,
                                    const torch::Tensor& targets) const {
  // In fp32 under mixed precision, as Megatron-LM's cross-entropy is by default: a sum of
  // exponentials over the vocabulary in 16 bits loses the loss's last digits.
  const auto logits =
      logits_as_run.scalar_type() == torch::kBFloat16 || logits_as_run.scalar_type() == torch::kHalf
          ? logits_as_run.to(torch::kFloat)
          : logits_as_run;
  if (shard_.size == 1) return cross_entropy_sum(logits, targets);
  return vocab_parallel_cross_entropy_sum(logits, targets, shard_.first_row(vocab_), shard_.size,
                                          shard_.rank, shard_.all_reduce);
}

torch::Tensor StageModule::whole_logits(const torch::Tensor& logits) const {
  constexpr int64_t kVocabDim = 2;  // [b, s, vocab]
  return whole_of(logits, ShardSplit{kVocabDim, {vocab_}}, shard_);
}

std::optional<ShardSplit> StageModule::split(const std::string& name) const {
  if (shard_.size == 1) return std::nullopt;
  const int layer = parameter_layer(name);
  if (layer < first_ || layer >= end_) throw std::out_of_range(name + " is not in this stage");
  return chain_.at(layer - first_)->split(name.substr(name.find('.') + 1));
}

torch::Tensor StageModule::share_of_whole(const std::string& name,
                                          const torch::Tensor& whole) const {
  const auto how = split(name);
  const bool is_whole =
      how && whole.dim() > how->dim &&
      whole.size(how->dim) == std::accumulate(how->parts.begin(), how->parts.end(), int64_t{0});
  return is_whole ? shard_of(whole, *how, shard_) : whole;
}

size_t StageModule::parameter_index(const std::string& name) const {
  size_t i = 0;
  for (const auto& item : named_parameters()) {
    if (item.key() == name) return i;
    ++i;
  }
  throw std::out_of_range("not a parameter of the module: " + name);
}

int parameter_layer(const std::string& name) {
  constexpr size_t kPrefix = 5;  // "layer"
  return std::stoi(name.substr(kPrefix, name.find('.') - kPrefix));
}

torch::Tensor cross_entropy_sum(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

}  // namespace hyperpipe::runtime
