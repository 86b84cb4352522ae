#include "hyperpipe/weights/hf_config.h"

namespace hyperpipe::weights {

std::optional<HfArchitecture> hf_export_architecture(const model::TransformerConfig& config,
                                                     std::string* why_not) {
  const auto refuse = [&](const char* why) -> std::optional<HfArchitecture> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (config.embed_dim != config.hidden) {
    return refuse("token embeddings narrower than hidden (OPT's projection)");
  }
  if (config.position_offset != 0) return refuse("a learned-position offset (OPT's)");
  if (!config.final_norm) return refuse("no final norm (OPT's do_layer_norm_before false)");
  return config.flavour == model::Flavour::gpt ? HfArchitecture::kGpt2 : HfArchitecture::kLlama;
}

nlohmann::ordered_json hf_config_json(const model::TransformerConfig& config,
                                      HfArchitecture architecture, const HfComputation& computation,
                                      const std::string& torch_dtype) {
  if (architecture == HfArchitecture::kGpt2) {
    const double pdrop = config.dropout ? computation.dropout_rate : 0.0;
    return {{"_name_or_path", config.name},
            {"architectures", {"GPT2LMHeadModel"}},
            {"model_type", "gpt2"},
            {"n_embd", config.hidden},
            {"n_layer", config.layers},
            {"n_head", config.heads},
            {"n_inner", config.ffn_hidden},
            {"n_positions", config.seq_len},
            {"n_ctx", config.seq_len},
            {"vocab_size", config.vocab},
            {"activation_function", "gelu_new"},
            {"layer_norm_epsilon", config.norm_eps},
            {"resid_pdrop", pdrop},
            {"embd_pdrop", pdrop},
            {"attn_pdrop", pdrop},
            {"tie_word_embeddings", config.tied_embeddings},
            {"torch_dtype", torch_dtype}};
  }
  // Query, key and value biases in a LLaMA-shaped block are Qwen2's architecture.
  const bool qwen2 = config.qkv_bias;
  nlohmann::ordered_json json = {
      {"_name_or_path", config.name},
      {"architectures", {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
      {"model_type", qwen2 ? "qwen2" : "llama"},
      {"hidden_size", config.hidden},
      {"intermediate_size", config.ffn_hidden},
      {"num_hidden_layers", config.layers},
      {"num_attention_heads", config.heads},
      {"num_key_value_heads", config.kv_heads},
      {"max_position_embeddings", config.seq_len},
      {"vocab_size", config.vocab},
      {"hidden_act", "silu"},
      {"rms_norm_eps", config.norm_eps},
      {"rope_theta", config.rope_theta},
      {"rope_scaling", nullptr},
      {"tie_word_embeddings", config.tied_embeddings},
      {"torch_dtype", torch_dtype}};
  if (qwen2) {
    json["use_sliding_window"] = false;
  } else {
    json["attention_bias"] = false;
    json["mlp_bias"] = false;
  }
  return json;
}

nlohmann::ordered_json hf_config_kept(nlohmann::ordered_json source,
                                      const std::string& torch_dtype) {
  bool named = false;
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (source.contains(key)) {
      source[key] = torch_dtype;
      named = true;
    }
  }
  if (!named) source["torch_dtype"] = torch_dtype;
  return source;
}

}  // namespace hyperpipe::weights
