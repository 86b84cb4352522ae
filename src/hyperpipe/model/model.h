// A transformer as the ordered chain of layers a pipeline cuts: embedding, N decoder
// blocks, final norm + LM head.
#pragma once

#include <cstdint>
#include <vector>

#include "hyperpipe/model/layer.h"
#include "hyperpipe/model/transformer_config.h"

namespace hyperpipe::model {

class Model {
 public:
  // `config` must be complete() and validate()d; the loaders do both.
  explicit Model(TransformerConfig config);

  const TransformerConfig& config() const { return config_; }
  // The same model held and computed in `dtype` (a plan's or a run's precision in place of
  // the file's): what it is costed, simulated and trained as.
  Model in_dtype(DType dtype) const;
  const std::vector<Layer>& layers() const { return layers_; }
  int num_layers() const { return static_cast<int>(layers_.size()); }

  // Parameters of the model, tied embeddings counted once.
  int64_t total_params() const;
  // Matmul FLOPs of one training iteration over `global_batch` sequences of `seq_len`
  // tokens on one device (forward, backward, and the forward rerun by `recompute`).
  double iteration_flops(int64_t global_batch, int64_t seq_len, Recompute recompute) const;

 private:
  TransformerConfig config_;
  std::vector<Layer> layers_;
};

}  // namespace hyperpipe::model
