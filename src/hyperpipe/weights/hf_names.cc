#include "hyperpipe/weights/hf_names.h"

#include <fmt/format.h>

namespace hyperpipe::weights {
namespace {

// GPT2LMHeadModel's tensors sit under this; a bare GPT2Model's (and the hub's gpt2 files)
// do not.
constexpr const char* kGpt2Prefix = "transformer.";

std::string layer_name(int layer, const char* parameter) {
  return fmt::format("layer{}.{}", layer, parameter);
}

HfSource as_is(std::string name, std::vector<int64_t> shape) {
  return {std::move(name), HfTransform::kAsIs, 0, std::move(shape)};
}

HfSource transposed(std::string name, int64_t rows, int64_t columns) {
  return {std::move(name), HfTransform::kTranspose, 0, {columns, rows}};
}

void add_gpt2_layer(const model::TransformerConfig& c, int layer, std::vector<HfParameter>& out) {
  const int64_t h = c.hidden;
  const int64_t ffn = c.ffn_hidden;
  const auto add = [&](const char* parameter, std::vector<int64_t> shape, HfSource source) {
    out.push_back({layer_name(layer, parameter), std::move(shape), {std::move(source)}});
  };
  if (layer == 0) {
    add("tokens", {c.vocab, h}, as_is("transformer.wte.weight", {c.vocab, h}));
    add("positions", {c.seq_len, h}, as_is("transformer.wpe.weight", {c.seq_len, h}));
    return;
  }
  if (layer == c.layers + 1) {
    add("norm", {h}, as_is("transformer.ln_f.weight", {h}));
    add("norm_bias", {h}, as_is("transformer.ln_f.bias", {h}));
    if (c.tied_embeddings) {
      add("tied_tokens", {c.vocab, h}, as_is("transformer.wte.weight", {c.vocab, h}));
    } else {
      add("lm_head", {c.vocab, h}, as_is("lm_head.weight", {c.vocab, h}));
    }
    return;
  }
  const std::string block = fmt::format("transformer.h.{}.", layer - 1);
  add("attention_norm", {h}, as_is(block + "ln_1.weight", {h}));
  add("attention_norm_bias", {h}, as_is(block + "ln_1.bias", {h}));
  add("qkv", {3 * h, h}, transposed(block + "attn.c_attn.weight", 3 * h, h));
  add("qkv_bias", {3 * h}, as_is(block + "attn.c_attn.bias", {3 * h}));
  add("out", {h, h}, transposed(block + "attn.c_proj.weight", h, h));
  add("out_bias", {h}, as_is(block + "attn.c_proj.bias", {h}));
  add("mlp_norm", {h}, as_is(block + "ln_2.weight", {h}));
  add("mlp_norm_bias", {h}, as_is(block + "ln_2.bias", {h}));
  add("up", {ffn, h}, transposed(block + "mlp.c_fc.weight", ffn, h));
  add("up_bias", {ffn}, as_is(block + "mlp.c_fc.bias", {ffn}));
  add("down", {h, ffn}, transposed(block + "mlp.c_proj.weight", h, ffn));
  add("down_bias", {h}, as_is(block + "mlp.c_proj.bias", {h}));
}

void add_llama_layer(const model::TransformerConfig& c, int layer, std::vector<HfParameter>& out) {
  const int64_t h = c.hidden;
  const int64_t kv = c.kv_dim();
  const int64_t ffn = c.ffn_hidden;
  const auto add = [&](const char* parameter, std::vector<int64_t> shape,
                       std::vector<HfSource> sources) {
    out.push_back({layer_name(layer, parameter), std::move(shape), std::move(sources)});
  };
  if (layer == 0) {
    add("tokens", {c.vocab, h}, {as_is("model.embed_tokens.weight", {c.vocab, h})});
    return;
  }
  if (layer == c.layers + 1) {
    add("norm", {h}, {as_is("model.norm.weight", {h})});
    if (c.tied_embeddings) {
      add("tied_tokens", {c.vocab, h}, {as_is("model.embed_tokens.weight", {c.vocab, h})});
    } else {
      add("lm_head", {c.vocab, h}, {as_is("lm_head.weight", {c.vocab, h})});
    }
    return;
  }
  const std::string block = fmt::format("model.layers.{}.", layer - 1);
  add("attention_norm", {h}, {as_is(block + "input_layernorm.weight", {h})});
  add("qkv", {h + 2 * kv, h},
      {{block + "self_attn.q_proj.weight", HfTransform::kRotaryPairs, c.heads, {h, h}},
       {block + "self_attn.k_proj.weight", HfTransform::kRotaryPairs, c.kv_heads, {kv, h}},
       as_is(block + "self_attn.v_proj.weight", {kv, h})});
  if (c.qkv_bias) {  // Qwen2's: each bias's rows follow its weight's
    add("qkv_bias", {h + 2 * kv},
        {{block + "self_attn.q_proj.bias", HfTransform::kRotaryPairs, c.heads, {h}},
         {block + "self_attn.k_proj.bias", HfTransform::kRotaryPairs, c.kv_heads, {kv}},
         as_is(block + "self_attn.v_proj.bias", {kv})});
  }
  add("out", {h, h}, {as_is(block + "self_attn.o_proj.weight", {h, h})});
  add("mlp_norm", {h}, {as_is(block + "post_attention_layernorm.weight", {h})});
  add("up", {ffn, h}, {as_is(block + "mlp.up_proj.weight", {ffn, h})});
  add("gate", {ffn, h}, {as_is(block + "mlp.gate_proj.weight", {ffn, h})});
  add("down", {h, ffn}, {as_is(block + "mlp.down_proj.weight", {h, ffn})});
}

}  // namespace

std::optional<HfArchitecture> hf_architecture(const std::string& model_type, std::string* why_not) {
  if (model_type == "gpt2") return HfArchitecture::kGpt2;
  if (model_type == "llama" || model_type == "mistral" || model_type == "qwen2") {
    return HfArchitecture::kLlama;
  }
  if (why_not) {
    if (model_type == "opt") {
      *why_not = "OPT's ReLU MLP and its projected embeddings: HyperPipe's GPT blocks use GELU";
    } else {
      *why_not = fmt::format("model_type gpt2, llama, mistral or qwen2; got {}", model_type);
    }
  }
  return std::nullopt;
}

std::vector<HfParameter> hf_parameters(const model::TransformerConfig& config,
                                       HfArchitecture architecture, int first, int end) {
  std::vector<HfParameter> parameters;
  for (int layer = first; layer < end; ++layer) {
    if (architecture == HfArchitecture::kGpt2) {
      add_gpt2_layer(config, layer, parameters);
    } else {
      add_llama_layer(config, layer, parameters);
    }
  }
  return parameters;
}

std::vector<int64_t> rotary_pair_rows(int64_t heads, int64_t head_dim) {
  // Within a head, HyperPipe's row 2j + t (pair j, member t) is Hugging Face's row
  // t · head_dim / 2 + j.
  const int64_t half = head_dim / 2;
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(heads * head_dim));
  for (int64_t head = 0; head < heads; ++head) {
    for (int64_t pair = 0; pair < half; ++pair) {
      for (int64_t member = 0; member < 2; ++member) {
        rows.push_back(head * head_dim + member * half + pair);
      }
    }
  }
  return rows;
}

std::optional<std::string> find_hf_tensor(const std::string& wanted,
                                          const std::set<std::string>& names) {
  if (names.count(wanted)) return wanted;
  const std::string prefix = kGpt2Prefix;
  if (wanted.rfind(prefix, 0) == 0) {
    const std::string bare = wanted.substr(prefix.size());
    if (names.count(bare)) return bare;
  } else if (names.count(prefix + wanted)) {
    return prefix + wanted;
  }
  return std::nullopt;
}

}  // namespace hyperpipe::weights
