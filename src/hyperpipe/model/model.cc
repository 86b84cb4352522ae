#include "hyperpipe/model/model.h"

#include <utility>

namespace hyperpipe::model {

Model Model::in_dtype(DType dtype) const {
  if (dtype == config_.dtype) return *this;
  TransformerConfig config = config_;
  config.dtype = dtype;
  return Model(std::move(config));
}

Model::Model(TransformerConfig config) : config_(std::move(config)) {
  layers_.reserve(config_.layers + 2);
  layers_.emplace_back(LayerKind::embedding, 0, config_);
  for (int64_t i = 0; i < config_.layers; ++i) {
    layers_.emplace_back(LayerKind::decoder_block, static_cast<int>(i + 1), config_);
  }
  layers_.emplace_back(LayerKind::head, static_cast<int>(config_.layers + 1), config_);
}

int64_t Model::total_params() const {
  int64_t total = 0;
  for (const auto& layer : layers_) total += layer.unique_params();
  return total;
}

double Model::iteration_flops(int64_t global_batch, int64_t seq_len, Recompute recompute) const {
  const Workload work{global_batch, seq_len, 1, false};
  double total = 0;
  for (const auto& layer : layers_) {
    const LayerFlops f = layer.flops(work);
    total += f.forward + f.backward() + layer.recompute_flops(work, recompute);
  }
  return total;
}

}  // namespace hyperpipe::model
