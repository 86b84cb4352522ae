// One layer of the pipeline chain (embedding, decoder block, or final norm + LM head) and
// what it costs: parameters, FLOPs, saved activations, bytes at a cut.
//
// FLOPs count matrix multiplications only (2 per multiply-add), the convention of
// Narayanan et al., SC'21 and of model-FLOPs utilisation; element-wise work is memory
// bound and is accounted for by memory_traffic() instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hyperpipe/model/transformer_config.h"

namespace hyperpipe::model {

enum class LayerKind { embedding, decoder_block, head };
std::string_view to_string(LayerKind kind);

// How much of the forward pass is kept for backward (Korthikanti et al., 2022):
// none keeps everything, selective recomputes the attention core (softmax and its
// dropout), full keeps only each block's input and reruns its forward in backward.
enum class Recompute { none, selective, full };
std::string_view to_string(Recompute recompute);
std::optional<Recompute> parse_recompute(std::string_view name);
// "none", "selective", "full", in the enum's order (for option checks and messages).
std::vector<std::string> recompute_names();

// What `selective` keeps is the framework's choice. Megatron-LM's (and HyperPipe's)
// recomputes the attention core (Korthikanti et al.). torchtitan's per-op policy keeps the
// outputs of the fused attention kernel and of every other bias-free matrix product in
// forward order (the 1st, 3rd, ...), and reruns everything else from the block's input
// (torchtitan/distributed/activation_checkpoint.py, SelectiveAC: aten.mm is saved unless
// its count in the block is even; biased products are aten.addmm, never saved).
enum class SelectiveRule { attention_core, alternate_products };

// What one device of a stage processes in one micro-batch step.
struct Workload {
  int64_t micro_batch = 1;  // sequences on this device (after data-parallel split)
  int64_t seq_len = 1;
  int64_t tp = 1;  // tensor-parallel degree (Megatron column/row split)
  // Megatron sequence parallelism with tp > 1 (Korthikanti et al.): norms and dropouts are
  // split along the sequence, so every saved activation divides by tp.
  bool sequence_parallel = true;
};

struct LayerFlops {
  double forward = 0;
  double backward_input = 0;   // gradient with respect to the layer's input (critical path)
  double backward_weight = 0;  // gradient with respect to its weights (can be deferred)
  double backward() const { return backward_input + backward_weight; }
};

struct MemoryTraffic {
  double forward = 0;
  double backward_input = 0;
  double backward_weight = 0;
};

class Layer {
 public:
  Layer(LayerKind kind, int index, const TransformerConfig& config);

  LayerKind kind() const { return kind_; }
  int index() const { return index_; }  // position in the chain, 0 = embedding
  const TransformerConfig& config() const { return config_; }
  std::string name() const;

  // Parameters a stage holding this layer keeps in memory. With tied embeddings the head
  // keeps its own copy of the embedding matrix (as Megatron-LM does when the two sit on
  // different stages), so this counts it.
  int64_t params() const;
  // Parameters counted once for the model total (the tied copy excluded).
  int64_t unique_params() const;

  // Per device: FLOPs divide by tp.
  LayerFlops flops(const Workload& work) const;
  // Extra forward FLOPs run during backward under `recompute` (the head and embedding are
  // never recomputed).
  double recompute_flops(const Workload& work, Recompute recompute,
                         SelectiveRule rule = SelectiveRule::attention_core) const;
  // Bytes this layer keeps for backward per micro-batch on one device.
  int64_t activation_bytes(const Workload& work, Recompute recompute,
                           SelectiveRule rule = SelectiveRule::attention_core) const;
  // Bytes still held between this layer's backward-input (B) and backward-weight (W) when
  // they run apart (zero-bubble schedules): the inputs of its matrix products, which the
  // weight gradient needs (Qi et al., ICLR'24, call this M_W). Everything else B frees.
  int64_t weight_gradient_bytes(const Workload& work) const;
  // Bytes of the output tensor one device sends across a pipeline cut after this layer
  // (Megatron's scatter/gather: each of the tp ranks sends 1/tp of it).
  int64_t output_bytes(const Workload& work) const;
  // Coarse DRAM traffic of each pass on one device, feeding the memory-bound half of the
  // roofline. Forward reads the weights, writes the saved activations and the output;
  // backward-input reads the weights, the saved activations and the output gradient and
  // writes the input gradient; backward-weight reads the saved activations and writes the
  // weight gradients.
  MemoryTraffic memory_traffic(const Workload& work) const;

 private:
  LayerFlops block_flops(const Workload& work) const;
  int64_t block_activation_bytes(const Workload& work, Recompute recompute) const;
  int64_t alternate_products_bytes(const Workload& work) const;
  double alternate_products_rerun_flops(const Workload& work) const;
  int64_t embedding_activation_bytes(const Workload& work) const;
  int64_t head_activation_bytes(const Workload& work) const;

  LayerKind kind_;
  int index_;
  TransformerConfig config_;
};

}  // namespace hyperpipe::model
