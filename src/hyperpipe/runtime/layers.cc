#include "hyperpipe/runtime/layers.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "hyperpipe/common/error.h"
#include "hyperpipe/runtime/deferred_weight_grads.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/lean_ops.h"
#include "hyperpipe/runtime/recomputation.h"

namespace hyperpipe::runtime {
namespace {

namespace F = torch::nn::functional;

torch::Tensor normal(std::vector<int64_t> shape, double stddev, torch::Generator& generator) {
  return torch::empty(shape).normal_(0.0, stddev, generator);
}

// The scale of the projections back into the residual stream (GPT-2).
double residual_std(const model::TransformerConfig& config) {
  return kInitStd / std::sqrt(2.0 * static_cast<double>(config.layers));
}

// A shard's rows of a dimension of n: ⌈n/size⌉ from rank · ⌈n/size⌉ (the last shard may
// hold fewer).
struct ShardRows {
  int64_t start = 0;
  int64_t length = 0;
};

ShardRows shard_rows(int64_t n, const TensorShard& shard) {
  const int64_t chunk = (n + shard.size - 1) / shard.size;
  const int64_t start = shard.first_row(n);
  return {start, std::min(chunk, n - start)};
}

// Rows split by vocabulary slice, MLP column or attention head (the fused query/key/
// value rows by each of the three).
ShardSplit rows(std::vector<int64_t> parts) {
  return {0, std::move(parts)};
}
ShardSplit columns(int64_t n) {
  return {1, {n}};
}

torch::Tensor reduced(const TensorShard& shard, const torch::Tensor& partial) {
  return sum_over_shards(partial, shard.all_reduce);
}

// The input of the shard's column-parallel products: its gradient summed over the shards.
torch::Tensor shared(const TensorShard& shard, const torch::Tensor& input) {
  return shard.size == 1 ? input : copy_to_shards(input, shard.all_reduce);
}

// Row-parallel projection: each shard's partial product, summed over the shards (and,
// under sequence parallelism, cut to the shard's part of the sequence), then the bias.
torch::Tensor row_parallel(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias, const TensorShard& shard) {
  if (shard.size == 1) return runtime::linear(x, weight, bias);
  const auto partial = runtime::linear(x, weight);
  const auto sum = shard.sequence ? reduce_scatter_to_sequence(partial, *shard.sequence)
                                  : reduced(shard, partial);
  return bias.defined() ? sum + bias : sum;
}

// Column-parallel products of one input (each weight with its bias, where `biases` has
// one): under sequence parallelism the input is the shard's part, gathered whole inside.
std::vector<torch::Tensor> column_parallel(const torch::Tensor& x,
                                           const std::vector<torch::Tensor>& weights,
                                           const std::vector<torch::Tensor>& biases,
                                           const TensorShard& shard) {
  if (shard.sequence) return gathered_linears(x, weights, biases, *shard.sequence);
  const auto input = shared(shard, x);
  std::vector<torch::Tensor> outputs;
  for (size_t i = 0; i < weights.size(); ++i) {
    outputs.push_back(
        runtime::linear(input, weights[i], i < biases.size() ? biases[i] : torch::Tensor()));
  }
  return outputs;
}

// A product's bias as column_parallel takes it: none where it has none.
std::vector<torch::Tensor> biases(const torch::Tensor& bias) {
  if (!bias.defined()) return {};
  return {bias};
}

// Where a shard's part of the sequence lies, for its dropout masks (none: it holds all).
std::optional<SequencePart> sequence_part(const torch::Tensor& x, const TensorShard& shard) {
  if (!shard.sequence) return std::nullopt;
  const int64_t whole = x.size(1) * shard.sequence->size;
  return SequencePart{shard.sequence->first_position(whole), whole};
}

void require_split(const model::TransformerConfig& config, const char* field, int64_t count,
                   const TensorShard& shard) {
  if (count % shard.size != 0) {
    throw InputError(
        "model " + config.name, field,
        fmt::format("{} must split evenly over {} tensor-parallel shards", count, shard.size));
  }
}

class Embedding final : public LayerModule {
 public:
  Embedding(const model::TransformerConfig& config, torch::Generator generator,
            const TensorShard& shard)
      : offset_(config.position_offset),
        vocab_(config.vocab),
        dropout_(config.dropout),
        shard_(shard),
        rows_(shard_rows(config.vocab, shard)) {
    tokens_ = register_parameter(
        "tokens", shard_of(normal({config.vocab, config.hidden}, kInitStd, generator),
                           *split("tokens"), shard));
    if (config.flavour == model::Flavour::gpt) {
      positions_ = register_parameter(
          "positions",
          normal({config.seq_len + config.position_offset, config.hidden}, kInitStd, generator));
    }
  }

  torch::Tensor forward(const torch::Tensor& ids) override {
    auto hidden = shard_.size == 1 ? torch::embedding(tokens_, ids) : vocabulary_parallel(ids);
    if (positions_.defined()) {
      // The positions of the shard's part under sequence parallelism.
      const int64_t first = shard_.sequence ? shard_.sequence->first_position(ids.size(1)) : 0;
      const auto where = torch::arange(offset_ + first, offset_ + first + hidden.size(1),
                                       ids.options().dtype(torch::kLong));
      hidden = hidden + positions_.index_select(0, where);
    }
    return dropout_ ? dropout(hidden, 0, DropoutSite::embedding, sequence_part(hidden, shard_))
                    : hidden;
  }

  std::optional<ShardSplit> split(const std::string& name) const override {
    if (name == "tokens") return rows({vocab_});
    return std::nullopt;
  }

 private:
  // Each shard looks up the tokens of its vocabulary slice, zeros for the others; the
  // sum over the shards is the whole lookup.
  torch::Tensor vocabulary_parallel(const torch::Tensor& ids) const {
    const auto local = ids - rows_.start;
    const auto mine = (local >= 0).logical_and(local < rows_.length);
    const auto found = torch::embedding(tokens_, local.clamp(0, rows_.length - 1));
    const auto partial = found * mine.unsqueeze(-1).to(found.scalar_type());
    return shard_.sequence ? reduce_scatter_to_sequence(partial, *shard_.sequence)
                           : reduced(shard_, partial);
  }

  int64_t offset_;
  int64_t vocab_;
  bool dropout_;
  TensorShard shard_;
  ShardRows rows_;
  torch::Tensor tokens_;
  torch::Tensor positions_;
};

class Block final : public LayerModule {
 public:
  Block(const model::TransformerConfig& config, int index, torch::Generator generator,
        const TensorShard& shard, model::Recompute recompute)
      : gpt_(config.flavour == model::Flavour::gpt),
        norm_eps_(config.norm_eps),
        rope_theta_(config.rope_theta),
        index_(index),
        dropout_(config.dropout),
        recompute_(recompute),
        heads_(config.heads / shard.size),
        kv_heads_(config.kv_heads / shard.size),
        head_dim_(config.head_dim()),
        hidden_(config.hidden),
        kv_dim_(config.kv_dim()),
        ffn_(config.ffn_hidden),
        shard_(shard) {
    require_split(config, "heads", config.heads, shard);
    require_split(config, "kv_heads", config.kv_heads, shard);
    require_split(config, "ffn_hidden", config.ffn_hidden, shard);
    const int64_t h = hidden_;
    const int64_t kv = kv_dim_;
    const int64_t ffn = ffn_;
    const double out_std = residual_std(config);
    // Each split parameter is drawn whole, so every tp starts from the same model, and
    // cut to the shard's slice.
    const auto add = [&](const char* name, const torch::Tensor& whole) {
      const auto how = split(name);
      return register_parameter(name, how ? shard_of(whole, *how, shard) : whole);
    };
    attention_norm_ = add("attention_norm", torch::ones({h}));
    if (gpt_) attention_norm_bias_ = add("attention_norm_bias", torch::zeros({h}));
    qkv_ = add("qkv", normal({h + 2 * kv, h}, kInitStd, generator));
    if (gpt_ || config.qkv_bias) qkv_bias_ = add("qkv_bias", torch::zeros({h + 2 * kv}));
    out_ = add("out", normal({h, h}, out_std, generator));
    if (gpt_) out_bias_ = add("out_bias", torch::zeros({h}));
    mlp_norm_ = add("mlp_norm", torch::ones({h}));
    if (gpt_) mlp_norm_bias_ = add("mlp_norm_bias", torch::zeros({h}));
    up_ = add("up", normal({ffn, h}, kInitStd, generator));
    if (gpt_) {
      up_bias_ = add("up_bias", torch::zeros({ffn}));
    } else {
      gate_ = add("gate", normal({ffn, h}, kInitStd, generator));
    }
    down_ = add("down", normal({h, ffn}, out_std, generator));
    if (gpt_) down_bias_ = add("down_bias", torch::zeros({h}));
  }

  // Column-parallel: the shard's query, key and value heads and MLP columns (rows of the
  // weights); row-parallel: the matching input columns of the projections back.
  std::optional<ShardSplit> split(const std::string& name) const override {
    if (name == "qkv" || name == "qkv_bias") return rows({hidden_, kv_dim_, kv_dim_});
    if (name == "out") return columns(hidden_);
    if (name == "up" || name == "up_bias" || name == "gate") return rows({ffn_});
    if (name == "down") return columns(ffn_);
    return std::nullopt;
  }

  torch::Tensor forward(const torch::Tensor& x) override {
    if (recompute_ != model::Recompute::full) return body(x);
    // The rerun draws the first run's dropout masks: it runs in the same place.
    return recomputed(
        [this, place = current_dropout_place()](const std::vector<torch::Tensor>& in) {
          const DropoutScope scope(place);
          return body(in[0]);
        },
        {x});
  }

 private:
  // x: [b, s, h], or the shard's part [b, s/tp, h] under sequence parallelism.
  torch::Tensor body(const torch::Tensor& x) const {
    const auto h = x + residual(attention(norm(x, attention_norm_, attention_norm_bias_)),
                                DropoutSite::attention_residual);
    return h + residual(mlp(norm(h, mlp_norm_, mlp_norm_bias_)), DropoutSite::mlp_residual);
  }

  // A residual branch before it is added: dropped out where the model has dropout.
  torch::Tensor residual(const torch::Tensor& branch, DropoutSite site) const {
    return dropout_ ? dropout(branch, index_, site, sequence_part(branch, shard_)) : branch;
  }

  torch::Tensor norm(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) const {
    if (!gpt_) return rms_norm(x, weight, norm_eps_);
    return F::layer_norm(
        x, F::LayerNormFuncOptions({x.size(-1)}).weight(weight).bias(bias).eps(norm_eps_));
  }

  torch::Tensor attention(const torch::Tensor& x) const {
    const auto qkv = column_parallel(x, {qkv_}, biases(qkv_bias_), shard_)[0];
    const int64_t b = qkv.size(0);
    const int64_t s = qkv.size(1);  // the whole sequence, also under sequence parallelism
    const int64_t kv = kv_heads_ * head_dim_;
    const auto parts = qkv.split_with_sizes({heads_ * head_dim_, kv, kv}, -1);
    auto q = parts[0].view({b, s, heads_, head_dim_}).transpose(1, 2);
    auto k = parts[1].view({b, s, kv_heads_, head_dim_}).transpose(1, 2);
    auto v = parts[2].view({b, s, kv_heads_, head_dim_}).transpose(1, 2);
    if (!gpt_) {
      q = rotary(q, rope_theta_);
      k = rotary(k, rope_theta_);
    }
    // Compact copies: what the core keeps for its backward (or, recomputed, as its inputs)
    // is then q, k and v themselves, not the fused projection's whole output through
    // views of it — what the cost model counts.
    q = q.contiguous();
    k = k.contiguous();
    v = v.contiguous();
    const auto core_of = [this,
                          place = current_dropout_place()](const std::vector<torch::Tensor>& in) {
      const DropoutScope scope(place);  // a rerun draws the first run's masks
      return core(in[0], in[1], in[2]);
    };
    const auto mixed =
        recompute_ == model::Recompute::selective ? recomputed(core_of, {q, k, v}) : core(q, k, v);
    return row_parallel(mixed.transpose(1, 2).reshape({b, s, -1}), out_, out_bias_, shard_);
  }

  // The attention core, without weights: causal softmax(q·kᵀ/√d)·v on [b, heads, s, d]
  // (keys and values [b, kv_heads, s, d]). Under grouped-query attention key/value head i
  // serves query heads i·group … i·group + group − 1; their rows are stacked against it,
  // so keys and values are neither copied per query head nor kept more than once.
  torch::Tensor core(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) const {
    const int64_t b = q.size(0);
    const int64_t s = q.size(2);
    const int64_t group = heads_ / kv_heads_;
    const auto rows = q.reshape({b, kv_heads_, group * s, head_dim_});
    auto scores = rows.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim_));
    const auto future =
        torch::ones({s, s}, q.options().dtype(torch::kBool)).triu(1).repeat({group, 1});
    scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
    auto probabilities = scores.softmax(-1);
    if (dropout_) {
      // As [b, heads, s, s] (each key/value head's rows are its query heads' in order):
      // the masks of this shard's heads of the whole layer.
      probabilities =
          attention_dropout(probabilities.view({b, heads_, s, s}), index_, shard_.rank * heads_)
              .view(probabilities.sizes());
    }
    return probabilities.matmul(v).view({b, heads_, s, head_dim_});
  }

  torch::Tensor mlp(const torch::Tensor& x) const {
    if (gpt_) {
      const auto inner = F::gelu(column_parallel(x, {up_}, {up_bias_}, shard_)[0],
                                 F::GELUFuncOptions().approximate("tanh"));
      return row_parallel(inner, down_, down_bias_, shard_);
    }
    // SwiGLU: down(silu(gate(x)) · up(x)).
    const auto gate_up = column_parallel(x, {gate_, up_}, {}, shard_);
    const auto inner = F::silu(gate_up[0]) * gate_up[1];
    return row_parallel(inner, down_, {}, shard_);
  }

  bool gpt_;
  double norm_eps_;
  double rope_theta_;
  int index_;  // in the chain: what dropout masks are drawn for
  bool dropout_;
  model::Recompute recompute_;
  int64_t heads_;
  int64_t kv_heads_;
  int64_t head_dim_;
  int64_t hidden_;
  int64_t kv_dim_;
  int64_t ffn_;
  TensorShard shard_;
  torch::Tensor attention_norm_, attention_norm_bias_, qkv_, qkv_bias_, out_, out_bias_;
  torch::Tensor mlp_norm_, mlp_norm_bias_, up_, up_bias_, gate_, down_, down_bias_;
};

class Head final : public LayerModule {
 public:
  Head(const model::TransformerConfig& config, torch::Generator generator, uint64_t seed,
       const TensorShard& shard)
      : gpt_(config.flavour == model::Flavour::gpt),
        norm_eps_(config.norm_eps),
        vocab_(config.vocab),
        shard_(shard) {
    const int64_t h = config.hidden;
    if (config.final_norm) {
      norm_ = register_parameter("norm", torch::ones({h}));
      if (gpt_) norm_bias_ = register_parameter("norm_bias", torch::zeros({h}));
    }
    if (config.tied_embeddings) {
      // The embedding's token matrix, drawn the same way from the embedding's generator.
      auto embedding = layer_generator(seed, 0);
      weight_ = register_parameter(
          "tied_tokens",
          shard_of(normal({config.vocab, h}, kInitStd, embedding), *split("tied_tokens"), shard));
      tied_ = true;
    } else {
      weight_ = register_parameter(
          "lm_head",
          shard_of(normal({config.vocab, h}, kInitStd, generator), *split("lm_head"), shard));
    }
  }

  torch::Tensor forward(const torch::Tensor& x) override {
    auto normed = x;
    if (norm_.defined()) {
      normed = gpt_ ? F::layer_norm(x, F::LayerNormFuncOptions({x.size(-1)})
                                           .weight(norm_)
                                           .bias(norm_bias_)
                                           .eps(norm_eps_))
                    : rms_norm(x, norm_, norm_eps_);
    }
    return column_parallel(normed, {weight_}, {}, shard_)[0];
  }

  torch::Tensor tied_weight() override { return tied_ ? weight_ : torch::Tensor(); }
  std::optional<ShardSplit> split(const std::string& name) const override {
    if (name == "tied_tokens" || name == "lm_head") return rows({vocab_});
    return std::nullopt;
  }

 private:
  bool gpt_;
  double norm_eps_;
  int64_t vocab_;
  TensorShard shard_;
  bool tied_ = false;
  torch::Tensor norm_, norm_bias_, weight_;
};

}  // namespace

torch::Tensor shard_of(const torch::Tensor& whole, const ShardSplit& split,
                       const TensorShard& shard) {
  if (shard.size == 1) return whole;
  std::vector<torch::Tensor> slices;
  int64_t offset = 0;
  for (const int64_t part : split.parts) {
    const ShardRows mine = shard_rows(part, shard);
    slices.push_back(whole.narrow(split.dim, offset + mine.start, mine.length));
    offset += part;
  }
  return torch::cat(slices, split.dim);  // a tensor of its own, even of one slice
}

torch::Tensor whole_of(const torch::Tensor& mine, const ShardSplit& split,
                       const TensorShard& shard) {
  if (shard.size == 1) return mine;
  if (!shard.all_reduce || !*shard.all_reduce) {
    throw std::logic_error("whole_of: a shard without the all-reduce of its group");
  }
  // Each shard writes its slices into zeros of the whole's shape: the sum is the whole.
  auto sizes = mine.sizes().vec();
  sizes[split.dim] = 0;
  for (const int64_t part : split.parts) sizes[split.dim] += part;
  auto whole = torch::zeros(sizes, mine.options());
  int64_t offset = 0;
  int64_t at = 0;
  for (const int64_t part : split.parts) {
    const ShardRows rows = shard_rows(part, shard);
    whole.narrow(split.dim, offset + rows.start, rows.length)
        .copy_(mine.narrow(split.dim, at, rows.length));
    offset += part;
    at += rows.length;
  }
  (*shard.all_reduce)(whole);
  return whole;
}

torch::Generator layer_generator(uint64_t seed, int layer_index) {
  // SplitMix64's increment (Steele et al., 2014) spreads neighbouring layer seeds apart.
  constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
  return at::detail::createCPUGenerator(seed + kGolden * static_cast<uint64_t>(layer_index + 1));
}

std::shared_ptr<LayerModule> make_layer(const model::Layer& layer,
                                        const model::TransformerConfig& config, uint64_t seed,
                                        const TensorShard& shard, model::Recompute recompute) {
  if (shard.size < 1 || shard.rank < 0 || shard.rank >= shard.size) {
    throw std::invalid_argument(
        fmt::format("tensor-parallel shard {} of {}", shard.rank, shard.size));
  }
  if (config.embed_dim != 0 && config.embed_dim != config.hidden) {
    throw InputError("model " + config.name, "embed_dim",
                     "the runtime builds models whose embedding width equals hidden");
  }
  auto generator = layer_generator(seed, layer.index());
  switch (layer.kind()) {
    case model::LayerKind::embedding:
      return std::make_shared<Embedding>(config, generator, shard);
    case model::LayerKind::decoder_block:
      return std::make_shared<Block>(config, layer.index(), generator, shard, recompute);
    case model::LayerKind::head:
      return std::make_shared<Head>(config, generator, seed, shard);
  }
  return nullptr;
}

}  // namespace hyperpipe::runtime
