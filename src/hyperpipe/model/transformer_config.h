// The shape of a decoder-only transformer: everything the cost formulas need.
#pragma once

#include <cstdint>
#include <numeric>
#include <string>

#include "hyperpipe/model/dtype.h"

namespace hyperpipe::model {

// GPT: LayerNorm, GELU MLP (two matrices, biases), learned positions, dropout.
// LLaMA: RMSNorm, SwiGLU MLP (three matrices, no biases), rotary positions (no position
// parameters), grouped-query attention, no dropout.
enum class Flavour { gpt, llama };

// The norm epsilon of GPT-2 (layer_norm_epsilon) and of Meta's LLaMA reference model
// (norm_eps): models that say nothing else.
inline constexpr double kDefaultNormEps = 1e-5;
// The rotary base of RoFormer (Su et al.) and LLaMA 1 and 2; Llama 3 uses 500 000, Qwen2 and
// Mistral v0.2 1 000 000.
inline constexpr double kDefaultRopeTheta = 10000.0;

std::string_view to_string(Flavour flavour);

struct TransformerConfig {
  std::string name;
  Flavour flavour = Flavour::gpt;
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  // Key/value heads of grouped-query attention; 0 means "as many as heads" (multi-head).
  int64_t kv_heads = 0;
  // MLP inner size; 0 means the flavour's default (see complete()).
  int64_t ffn_hidden = 0;
  int64_t vocab = 0;
  // Training sequence length; for GPT also the number of learned positions.
  int64_t seq_len = 0;
  // Width of the token embeddings when narrower than `hidden` (OPT-350m's
  // word_embed_proj_dim, projected in and out); 0 means equal to hidden.
  int64_t embed_dim = 0;
  // Learned-position rows beyond seq_len (OPT reserves 2 for its padding offset).
  int64_t position_offset = 0;
  bool tied_embeddings = true;
  bool final_norm = true;
  bool dropout = true;
  // The LayerNorm (GPT) or RMSNorm (LLaMA) epsilon, and LLaMA's rotary base: they change
  // the logits, not the cost.
  double norm_eps = kDefaultNormEps;
  double rope_theta = kDefaultRopeTheta;
  // LLaMA flavour: biases on the query, key and value projections (Qwen2's). GPT blocks
  // have every bias.
  bool qkv_bias = false;
  // Fused attention (FlashAttention) keeps no s×s score matrix for backward.
  bool flash_attention = false;
  DType dtype = DType::fp16;
  // An fp32 model's matrix products on TF32 tensor cores (torch.backends.cuda.matmul.
  // allow_tf32): off by default in PyTorch since 1.12, on in NVIDIA's PyTorch containers
  // (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1). The runtime sets it on CUDA devices.
  bool tf32 = false;

  // The sequence length of a run (or a setting) that asks for `asked`: 0 means the model's.
  int64_t sequence_length(int64_t asked) const { return asked > 0 ? asked : seq_len; }
  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return kv_heads * head_dim(); }
  // Megatron-LM's tensor-parallel shards hold equal parts of the attention heads, the key/
  // value heads and the MLP columns: a tp must divide all three, i.e. their gcd.
  int64_t tensor_parallel_divisor() const {
    return std::gcd(heads, std::gcd(kv_heads, ffn_hidden));
  }
};

// Fills the fields left at 0 with the flavour's defaults: kv_heads = heads, embed_dim =
// hidden, ffn_hidden = 4·hidden (GPT) or LLaMA's rule (2/3·4·hidden rounded up to a
// multiple of 256, as in Meta's reference model.py).
TransformerConfig complete(TransformerConfig config);

// Throws InputError (naming `source`) if a size is not positive or the shape is
// inconsistent (hidden not divisible by heads, heads not divisible by kv_heads).
void validate(const TransformerConfig& config, const std::string& source);

}  // namespace hyperpipe::model
