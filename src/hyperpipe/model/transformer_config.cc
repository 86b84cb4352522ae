#include "hyperpipe/model/transformer_config.h"

#include <fmt/format.h>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"

namespace hyperpipe::model {
namespace {

// LLaMA's SwiGLU keeps the MLP's parameter count near that of a 4h GELU MLP by using
// 2/3 of 4h, rounded up to this multiple (Meta's llama/model.py, `multiple_of`).
constexpr int64_t kLlamaFfnMultiple = 256;
constexpr int64_t kGptFfnRatio = 4;

}  // namespace

std::string_view to_string(Flavour flavour) {
  return flavour == Flavour::gpt ? "gpt" : "llama";
}

TransformerConfig complete(TransformerConfig config) {
  if (config.kv_heads == 0) config.kv_heads = config.heads;
  if (config.embed_dim == 0) config.embed_dim = config.hidden;
  if (config.ffn_hidden == 0) {
    if (config.flavour == Flavour::gpt) {
      config.ffn_hidden = kGptFfnRatio * config.hidden;
    } else {
      const int64_t two_thirds = 2 * kGptFfnRatio * config.hidden / 3;
      config.ffn_hidden =
          (two_thirds + kLlamaFfnMultiple - 1) / kLlamaFfnMultiple * kLlamaFfnMultiple;
    }
  }
  return config;
}

void validate(const TransformerConfig& config, const std::string& source) {
  const auto positive = [&](int64_t value, const char* field) {
    if (value <= 0) {
      throw InputError(source, fmt::format("field '{}'", field),
                       fmt::format("expected a positive integer, got {}", value));
    }
  };
  positive(config.hidden, "hidden");
  positive(config.layers, "layers");
  positive(config.heads, "heads");
  positive(config.kv_heads, "kv_heads");
  positive(config.ffn_hidden, "ffn_hidden");
  positive(config.vocab, "vocab");
  positive(config.seq_len, "seq_len");
  positive(config.embed_dim, "embed_dim");
  // NaN fails both comparisons.
  if (!(config.norm_eps > 0 && config.norm_eps < 1)) {
    throw InputError(source, "field 'norm_eps'",
                     fmt::format("expected a number between 0 and 1, got {}", config.norm_eps));
  }
  if (!(config.rope_theta > 1 && config.rope_theta < 1e12)) {
    throw InputError(
        source, "field 'rope_theta'",
        fmt::format("expected a number above 1 and below 1e12, got {}", config.rope_theta));
  }
  const auto at_most = [&](int64_t value, int64_t max, const char* field) {
    if (value > max) {
      throw InputError(source, fmt::format("field '{}'", field),
                       fmt::format("expected at most {}, got {}", max, value));
    }
  };
  at_most(config.layers, kMaxLayers, "layers");
  at_most(config.hidden, kMaxWidth, "hidden");
  at_most(config.ffn_hidden, kMaxWidth, "ffn_hidden");
  at_most(config.embed_dim, kMaxWidth, "embed_dim");
  at_most(config.vocab, kMaxSize, "vocab");
  at_most(config.seq_len, kMaxSize, "seq_len");
  at_most(config.position_offset, kMaxSize, "position_offset");
  if (config.position_offset < 0) {
    throw InputError(source, "field 'position_offset'",
                     fmt::format("expected 0 or more, got {}", config.position_offset));
  }
  if (config.hidden % config.heads != 0) {
    throw InputError(
        source, "field 'heads'",
        fmt::format("expected a divisor of hidden = {}, got {}", config.hidden, config.heads));
  }
  if (config.heads % config.kv_heads != 0) {
    throw InputError(
        source, "field 'kv_heads'",
        fmt::format("expected a divisor of heads = {}, got {}", config.heads, config.kv_heads));
  }
}

}  // namespace hyperpipe::model
