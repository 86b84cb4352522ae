#include "hyperpipe/model/layer.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "hyperpipe/model/layer_units.h"

namespace hyperpipe::model {
namespace {

// FlashAttention keeps one fp32 log-sum-exp per head and token instead of the score matrix.
constexpr int64_t kLogSumExpBytes = 4;

// One weight product of a block as a per-op checkpointing policy sees it.
struct BlockProduct {
  int64_t in = 0;
  int64_t out = 0;
  bool row_parallel = false;  // Megatron's row split: each rank's output is a partial sum
  bool bias = false;          // aten.addmm rather than aten.mm
};

// A block's weight products in the order its forward runs them.
std::vector<BlockProduct> block_products(const TransformerConfig& c) {
  const int64_t h = c.hidden;
  if (c.flavour == Flavour::gpt) {
    return {{h, h + 2 * c.kv_dim(), false, true},
            {h, h, true, true},
            {h, c.ffn_hidden, false, true},
            {c.ffn_hidden, h, true, true}};
  }
  // LLaMA: wq, wk, wv, wo, then w2(silu(w1(x)) * w3(x)) runs w1, w3, w2.
  return {{h, h, false, c.qkv_bias},          {h, c.kv_dim(), false, c.qkv_bias},
          {h, c.kv_dim(), false, c.qkv_bias}, {h, h, true, false},
          {h, c.ffn_hidden, false, false},    {h, c.ffn_hidden, false, false},
          {c.ffn_hidden, h, true, false}};
}

// Whether the per-op policy keeps each product's output: every other bias-free one.
std::vector<bool> alternate_kept(const std::vector<BlockProduct>& products) {
  std::vector<bool> kept;
  int counted = 0;
  for (const auto& p : products) {
    if (!p.bias) ++counted;
    kept.push_back(!p.bias && counted % 2 == 1);
  }
  return kept;
}

// Byte counts of absurd inputs can pass 2^63; they are computed in double and held there.
int64_t to_bytes(double bytes) {
  constexpr double kLargest = 9.0e18;
  return static_cast<int64_t>(std::min(bytes, kLargest));
}

}  // namespace

std::string_view to_string(LayerKind kind) {
  switch (kind) {
    case LayerKind::embedding:
      return "embedding";
    case LayerKind::decoder_block:
      return "decoder_block";
    case LayerKind::head:
      return "head";
  }
  return "decoder_block";
}

std::string_view to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "none";
}

std::optional<Recompute> parse_recompute(std::string_view name) {
  for (Recompute recompute : {Recompute::none, Recompute::selective, Recompute::full}) {
    if (name == to_string(recompute)) return recompute;
  }
  return std::nullopt;
}

std::vector<std::string> recompute_names() {
  return {"none", "selective", "full"};
}

Layer::Layer(LayerKind kind, int index, const TransformerConfig& config)
    : kind_(kind), index_(index), config_(config) {}

std::string Layer::name() const {
  switch (kind_) {
    case LayerKind::embedding:
      return "embedding";
    case LayerKind::decoder_block:
      return fmt::format("block {}", index_ - 1);
    case LayerKind::head:
      return "head";
  }
  return "layer";
}

int64_t Layer::unique_params() const {
  const auto& c = config_;
  const int64_t h = c.hidden;
  const int64_t d = c.embed_dim;
  const bool gpt = c.flavour == Flavour::gpt;
  const int64_t projection = d != h ? d * h : 0;  // OPT-350m's project_in / project_out
  switch (kind_) {
    case LayerKind::embedding: {
      const int64_t tokens = c.vocab * d;
      const int64_t positions = gpt ? (c.seq_len + c.position_offset) * h : 0;
      return tokens + positions + projection;
    }
    case LayerKind::decoder_block: {
      const int64_t qkv = h * (h + 2 * c.kv_dim());
      const int64_t out = h * h;
      const int64_t norm = gpt ? 2 * h : h;  // LayerNorm has a bias, RMSNorm none
      if (gpt) {
        const int64_t attention = qkv + (h + 2 * c.kv_dim()) + out + h;
        const int64_t mlp = 2 * h * c.ffn_hidden + c.ffn_hidden + h;
        return attention + mlp + 2 * norm;
      }
      const int64_t qkv_bias = c.qkv_bias ? h + 2 * c.kv_dim() : 0;
      return qkv + qkv_bias + out + 3 * h * c.ffn_hidden + 2 * norm;
    }
    case LayerKind::head: {
      const int64_t norm = c.final_norm ? (gpt ? 2 * h : h) : 0;
      const int64_t lm_head = c.tied_embeddings ? 0 : c.vocab * d;
      return norm + projection + lm_head;
    }
  }
  return 0;
}

int64_t Layer::params() const {
  const bool tied_copy = kind_ == LayerKind::head && config_.tied_embeddings;
  return unique_params() + (tied_copy ? config_.vocab * config_.embed_dim : 0);
}

LayerFlops Layer::block_flops(const Workload& work) const {
  const auto& c = config_;
  const double tokens = static_cast<double>(work.micro_batch) * work.seq_len;
  const double h = static_cast<double>(c.hidden);
  const double f = static_cast<double>(c.ffn_hidden);
  const double mlp_matrices = c.flavour == Flavour::gpt ? 2.0 : 3.0;
  const double weight_macs = tokens * (h * (h + 2.0 * c.kv_dim()) + h * h + mlp_matrices * h * f);
  // Q·Kᵀ and softmax·V: two products of s×s×head_dim per head (no causal saving, as in
  // the SC'21 formula).
  const double attention_macs = 2.0 * tokens * static_cast<double>(work.seq_len) * h;
  const double weights = kFlopsPerMultiplyAdd * weight_macs / work.tp;
  const double attention = kFlopsPerMultiplyAdd * attention_macs / work.tp;
  // Backward of a weight product is two products of the same size (input and weight
  // gradient); the attention products have no weights, both gradients are input gradients.
  return {weights + attention, weights + 2.0 * attention, weights};
}

LayerFlops Layer::flops(const Workload& work) const {
  const auto& c = config_;
  const double tokens = static_cast<double>(work.micro_batch) * work.seq_len;
  const double h = static_cast<double>(c.hidden);
  const double d = static_cast<double>(c.embed_dim);
  const double projection = c.embed_dim != c.hidden ? kFlopsPerMultiplyAdd * tokens * d * h : 0;
  switch (kind_) {
    case LayerKind::embedding:
      // The lookup is no product; only OPT-style projection in is.
      return {projection / work.tp, projection / work.tp, projection / work.tp};
    case LayerKind::decoder_block:
      return block_flops(work);
    case LayerKind::head: {
      const double logits = kFlopsPerMultiplyAdd * tokens * d * static_cast<double>(c.vocab);
      const double total = (logits + projection) / work.tp;  // vocabulary-parallel
      return {total, total, total};
    }
  }
  return {};
}

double Layer::recompute_flops(const Workload& work, Recompute recompute, SelectiveRule rule) const {
  if (kind_ != LayerKind::decoder_block || recompute == Recompute::none) return 0;
  const LayerFlops f = block_flops(work);
  if (recompute == Recompute::full) return f.forward;
  if (rule == SelectiveRule::alternate_products) return alternate_products_rerun_flops(work);
  // Selective: the attention core, i.e. the two products without weights.
  return f.backward_input - f.forward;
}

int64_t Layer::block_activation_bytes(const Workload& work, Recompute recompute) const {
  const auto& c = config_;
  const int64_t e = bytes_per_element(c.dtype);
  const double tokens = static_cast<double>(work.micro_batch) * static_cast<double>(work.seq_len);
  const int64_t h = c.hidden;
  const int64_t tp = work.tp;
  // Tensors that tensor parallelism alone does not split (norm inputs, the inputs of the
  // first column-parallel products, residual dropout masks); sequence parallelism does.
  const int64_t replicated_divisor = work.sequence_parallel ? tp : 1;
  if (recompute == Recompute::full) return to_bytes(tokens * h * e / replicated_divisor);

  const bool gpt = c.flavour == Flavour::gpt;
  const int64_t residual_masks = c.dropout ? 2 * kDropoutMaskBytes * h : 0;
  const int64_t replicated = 4 * e * h + residual_masks;  // 2 norm inputs, QKV in, MLP in
  // Q, K, V, the attention output (input of the output projection), and the MLP's
  // intermediates: GELU input and output, or SwiGLU's gate, up, SiLU(gate) and product.
  const int64_t mlp_intermediates = (gpt ? 2 : 4) * c.ffn_hidden;
  const int64_t split = e * (2 * h + 2 * c.kv_dim() + mlp_intermediates);
  int64_t per_token = replicated * tp / replicated_divisor + split;  // ×tp: undone below

  const int64_t s = work.seq_len;
  int64_t score_bytes = 0;
  if (c.flash_attention) {
    score_bytes = kLogSumExpBytes * c.heads;
  } else if (recompute == Recompute::none) {
    // Softmax output, plus its dropout mask and dropped-out copy when there is dropout.
    const int64_t per_score = c.dropout ? 2 * e + kDropoutMaskBytes : e;
    score_bytes = per_score * c.heads * s;
  }
  per_token += score_bytes;
  return to_bytes(tokens * static_cast<double>(per_token) / tp);
}

int64_t Layer::embedding_activation_bytes(const Workload& work) const {
  const auto& c = config_;
  const double tokens = static_cast<double>(work.micro_batch) * static_cast<double>(work.seq_len);
  const int64_t divisor = work.sequence_parallel ? work.tp : 1;
  double bytes = tokens * kTokenIdBytes;
  if (c.dropout) bytes += tokens * c.hidden * kDropoutMaskBytes / divisor;
  if (c.embed_dim != c.hidden) bytes += tokens * c.embed_dim * bytes_per_element(c.dtype);
  return to_bytes(bytes);
}

int64_t Layer::head_activation_bytes(const Workload& work) const {
  const auto& c = config_;
  const int64_t e = bytes_per_element(c.dtype);
  const double tokens = static_cast<double>(work.micro_batch) * static_cast<double>(work.seq_len);
  const int64_t divisor = work.sequence_parallel ? work.tp : 1;
  double bytes = tokens * kTokenIdBytes;  // targets
  if (c.final_norm) bytes += tokens * c.hidden * e / divisor;
  if (c.embed_dim != c.hidden) bytes += tokens * c.hidden * e / divisor;
  bytes += tokens * c.embed_dim * e / divisor;        // input of the LM head
  bytes += tokens * c.vocab * kLogitBytes / work.tp;  // vocabulary-parallel logits
  return to_bytes(bytes);
}

int64_t Layer::alternate_products_bytes(const Workload& work) const {
  const auto& c = config_;
  const double e = static_cast<double>(bytes_per_element(c.dtype));
  const double tokens = static_cast<double>(work.micro_batch) * static_cast<double>(work.seq_len);
  const double tp = static_cast<double>(work.tp);
  const bool split_sequence = work.sequence_parallel && work.tp > 1;
  // The block's input, which the checkpoint keeps to rerun it.
  double elements = static_cast<double>(c.hidden) / (split_sequence ? tp : 1.0);
  const auto products = block_products(c);
  const auto kept = alternate_kept(products);
  for (size_t i = 0; i < products.size(); ++i) {
    const auto& p = products[i];
    // A column split's output is 1/tp; a row split's is the whole partial sum, which with
    // sequence parallelism a reduce-scatter (also kept) turns into 1/tp.
    if (kept[i]) elements += p.row_parallel ? static_cast<double>(p.out) : p.out / tp;
    if (p.row_parallel && split_sequence) elements += p.out / tp;
  }
  double bytes = tokens * elements * e;
  if (c.flash_attention) {
    // The fused kernel's output and log-sum-exp are kept; without it the attention's
    // products and softmax are rerun like everything else.
    bytes += tokens *
             (static_cast<double>(c.hidden) * e + static_cast<double>(c.heads * kLogSumExpBytes)) /
             tp;
  }
  return to_bytes(bytes);
}

double Layer::alternate_products_rerun_flops(const Workload& work) const {
  const auto& c = config_;
  const double tokens = static_cast<double>(work.micro_batch) * static_cast<double>(work.seq_len);
  const auto products = block_products(c);
  const auto kept = alternate_kept(products);
  double macs = 0;
  for (size_t i = 0; i < products.size(); ++i) {
    if (!kept[i]) macs += tokens * static_cast<double>(products[i].in * products[i].out);
  }
  double flops = kFlopsPerMultiplyAdd * macs / work.tp;
  if (!c.flash_attention) {
    const LayerFlops f = block_flops(work);
    flops += f.backward_input - f.forward;  // the attention core's two products
  }
  return flops;
}

int64_t Layer::activation_bytes(const Workload& work, Recompute recompute,
                                SelectiveRule rule) const {
  switch (kind_) {
    case LayerKind::embedding:
      return embedding_activation_bytes(work);
    case LayerKind::decoder_block:
      if (recompute == Recompute::selective && rule == SelectiveRule::alternate_products) {
        return alternate_products_bytes(work);
      }
      return block_activation_bytes(work, recompute);
    case LayerKind::head:
      return head_activation_bytes(work);
  }
  return 0;
}

int64_t Layer::weight_gradient_bytes(const Workload& work) const {
  const auto& c = config_;
  const int64_t e = bytes_per_element(c.dtype);
  const double tokens = static_cast<double>(work.micro_batch) * static_cast<double>(work.seq_len);
  const int64_t divisor = work.sequence_parallel ? work.tp : 1;
  switch (kind_) {
    case LayerKind::embedding:
      // The embedding gradient scatters into rows by token id.
      return to_bytes(tokens * kTokenIdBytes +
                      (c.embed_dim != c.hidden ? tokens * c.embed_dim * e : 0.0));
    case LayerKind::decoder_block:
      // Inputs of the QKV and first MLP products (replicated without sequence
      // parallelism), of the output projection and of the last MLP product (split).
      return to_bytes(
          tokens * e *
          (2.0 * c.hidden / divisor + static_cast<double>(c.hidden + c.ffn_hidden) / work.tp));
    case LayerKind::head:
      return to_bytes(tokens * e *
                      static_cast<double>(c.embed_dim + (c.embed_dim != c.hidden ? c.hidden : 0)) /
                      divisor);
  }
  return 0;
}

int64_t Layer::output_bytes(const Workload& work) const {
  if (kind_ == LayerKind::head) return kLogitBytes;  // the scalar loss
  const int64_t e = bytes_per_element(config_.dtype);
  return to_bytes(static_cast<double>(work.micro_batch) * static_cast<double>(work.seq_len) *
                  static_cast<double>(config_.hidden) * e / static_cast<double>(work.tp));
}

MemoryTraffic Layer::memory_traffic(const Workload& work) const {
  const double e = bytes_per_element(config_.dtype);
  const double weights = static_cast<double>(params()) * e / work.tp;
  const double saved = static_cast<double>(activation_bytes(work, Recompute::none));
  const double output = static_cast<double>(work.micro_batch) * work.seq_len * config_.hidden * e;
  if (kind_ == LayerKind::embedding) {
    // A lookup reads only the rows of the tokens present (about one output's worth), but
    // PyTorch's dense embedding gradient writes the whole table.
    return {output + saved + output, 0.0, weights + saved + output};
  }
  return {weights + saved + output, weights + saved + 2.0 * output, weights + saved};
}

}  // namespace hyperpipe::model
