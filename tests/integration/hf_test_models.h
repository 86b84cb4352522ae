// Small GPT-2- and LLaMA-shaped Hugging Face checkpoints that tests write themselves (no
// weights can be downloaded here): random weights far from uniform logits, in Hugging
// Face's names and layouts (Conv1D weights [in, out]; grouped-query attention, an untied
// head and shards for LLaMA), with their config.json.
#pragma once

#include <fmt/format.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "hyperpipe/weights/safetensors.h"

namespace hyperpipe::runtime::hf_test_models {

using torch::Tensor;

// Weights far from uniform logits (the default init's 0.02 gives a loss of about ln 256
// whatever the mapping), so a tensor in the wrong place shows in the loss.
constexpr double kWeightStd = 0.3;
constexpr int64_t kSeq = 16;
constexpr int64_t kVocab = 256;  // the byte tokens of the text data

using Tensors = std::vector<std::pair<std::string, Tensor>>;

inline Tensor random(std::vector<int64_t> shape, torch::Generator& generator) {
  return torch::randn(shape, generator, torch::kFloat) * kWeightStd;
}

// Writes `tensors` as Hugging Face names them, in `shards` files (an index beside them
// when more than one), and config.json.
inline void write_checkpoint(const std::string& dir, const std::string& config,
                             const Tensors& tensors, int shards) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << config;
  nlohmann::json weight_map;
  for (int shard = 0; shard < shards; ++shard) {
    const std::string name =
        shards == 1 ? "model.safetensors"
                    : fmt::format("model-{:05d}-of-{:05d}.safetensors", shard + 1, shards);
    std::vector<weights::TensorToWrite> part;
    for (size_t i = shard; i < tensors.size(); i += shards) {
      const auto& [key, value] = tensors[i];
      part.push_back({key,
                      weights::TensorDtype::kF32,
                      value.sizes().vec(),
                      {reinterpret_cast<const std::byte*>(value.data_ptr<float>()),
                       static_cast<size_t>(value.numel()) * sizeof(float)}});
      weight_map[key] = name;
    }
    weights::write_safetensors(dir + "/" + name, part);
  }
  if (shards > 1) {
    std::ofstream(dir + "/model.safetensors.index.json")
        << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump(2);
  }
}

constexpr int64_t kGptHidden = 32;
constexpr int64_t kGptLayers = 2;
constexpr int64_t kGptHeads = 4;

// GPT2LMHeadModel's tensors (Conv1D weights [in, out]); the head tied to wte.
inline Tensors gpt2_tensors() {
  torch::Generator generator = at::detail::createCPUGenerator(7);
  const int64_t h = kGptHidden;
  Tensors t{{"transformer.wte.weight", random({kVocab, h}, generator)},
            {"transformer.wpe.weight", random({kSeq, h}, generator)}};
  for (int64_t i = 0; i < kGptLayers; ++i) {
    const std::string p = fmt::format("transformer.h.{}.", i);
    for (const char* norm : {"ln_1", "ln_2"}) {
      t.push_back({p + norm + ".weight", 1 + random({h}, generator)});
      t.push_back({p + norm + ".bias", random({h}, generator)});
    }
    t.push_back({p + "attn.c_attn.weight", random({h, 3 * h}, generator)});
    t.push_back({p + "attn.c_attn.bias", random({3 * h}, generator)});
    t.push_back({p + "attn.c_proj.weight", random({h, h}, generator)});
    t.push_back({p + "attn.c_proj.bias", random({h}, generator)});
    t.push_back({p + "mlp.c_fc.weight", random({h, 4 * h}, generator)});
    t.push_back({p + "mlp.c_fc.bias", random({4 * h}, generator)});
    t.push_back({p + "mlp.c_proj.weight", random({4 * h, h}, generator)});
    t.push_back({p + "mlp.c_proj.bias", random({h}, generator)});
  }
  t.push_back({"transformer.ln_f.weight", 1 + random({h}, generator)});
  t.push_back({"transformer.ln_f.bias", random({h}, generator)});
  return t;
}

inline const std::string kGpt2Config = fmt::format(
    R"({{"model_type": "gpt2", "_name_or_path": "tiny-hf-gpt2", "n_embd": {}, "n_layer": {},
        "n_head": {}, "n_positions": {}, "vocab_size": {}, "n_inner": null,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05,
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
        "torch_dtype": "float32"}})",
    kGptHidden, kGptLayers, kGptHeads, kSeq, kVocab);

constexpr int64_t kLlamaHidden = 32;
constexpr int64_t kLlamaLayers = 2;
constexpr int64_t kLlamaHeads = 4;
constexpr int64_t kLlamaKvHeads = 2;
constexpr int64_t kLlamaFfn = 48;

// What sets the LLaMA-shaped models apart: Llama 1 and 2's constants by default;
// Llama 3's rotary base; Qwen2's epsilon, base and q/k/v biases.
struct LlamaVariant {
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-5;
  bool qwen2 = false;
};

inline const LlamaVariant kLlama3{500000.0, 1e-5, false};
inline const LlamaVariant kQwen2{1000000.0, 1e-6, true};

inline Tensors llama_tensors(const LlamaVariant& variant = {}) {
  torch::Generator generator = at::detail::createCPUGenerator(11);
  const int64_t h = kLlamaHidden;
  const int64_t kv = kLlamaKvHeads * (h / kLlamaHeads);
  Tensors t{{"model.embed_tokens.weight", random({kVocab, h}, generator)}};
  for (int64_t i = 0; i < kLlamaLayers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    t.push_back({p + "input_layernorm.weight", 1 + random({h}, generator)});
    t.push_back({p + "self_attn.q_proj.weight", random({h, h}, generator)});
    t.push_back({p + "self_attn.k_proj.weight", random({kv, h}, generator)});
    t.push_back({p + "self_attn.v_proj.weight", random({kv, h}, generator)});
    if (variant.qwen2) {
      t.push_back({p + "self_attn.q_proj.bias", random({h}, generator)});
      t.push_back({p + "self_attn.k_proj.bias", random({kv}, generator)});
      t.push_back({p + "self_attn.v_proj.bias", random({kv}, generator)});
    }
    t.push_back({p + "self_attn.o_proj.weight", random({h, h}, generator)});
    t.push_back({p + "post_attention_layernorm.weight", 1 + random({h}, generator)});
    t.push_back({p + "mlp.gate_proj.weight", random({kLlamaFfn, h}, generator)});
    t.push_back({p + "mlp.up_proj.weight", random({kLlamaFfn, h}, generator)});
    t.push_back({p + "mlp.down_proj.weight", random({h, kLlamaFfn}, generator)});
  }
  t.push_back({"model.norm.weight", 1 + random({h}, generator)});
  t.push_back({"lm_head.weight", random({kVocab, h}, generator)});
  return t;
}

// Qwen2's config.json names a sliding window it does not use.
inline std::string llama_config(const LlamaVariant& variant = {}) {
  return fmt::format(
      R"({{"model_type": "{}", "_name_or_path": "tiny-hf-{}", "hidden_size": {},
        "num_hidden_layers": {}, "num_attention_heads": {}, "num_key_value_heads": {},
        "intermediate_size": {}, "max_position_embeddings": {}, "vocab_size": {},
        "hidden_act": "silu", "rms_norm_eps": {}, "rope_theta": {},
        "rope_scaling": null, {} "tie_word_embeddings": false,
        "torch_dtype": "float32"}})",
      variant.qwen2 ? "qwen2" : "llama", variant.qwen2 ? "qwen2" : "llama", kLlamaHidden,
      kLlamaLayers, kLlamaHeads, kLlamaKvHeads, kLlamaFfn, kSeq, kVocab, variant.rms_norm_eps,
      variant.rope_theta,
      variant.qwen2 ? R"("use_sliding_window": false, "sliding_window": 4,)"
                    : R"("attention_bias": false,)");
}

inline const std::string kLlamaConfig = llama_config();

// A fresh `dir` holding the GPT-2 (one file) or LLaMA (two shards) checkpoint as `dir`/hf
// and `dir`/plan.json of it with `plan_body`; returns the checkpoint's tensors.
inline Tensors write_model_and_plan(const std::string& dir, bool llama,
                                    const std::string& plan_body,
                                    const LlamaVariant& variant = {}) {
  std::filesystem::remove_all(dir);
  Tensors tensors = llama ? llama_tensors(variant) : gpt2_tensors();
  write_checkpoint(dir + "/hf", llama ? llama_config(variant) : kGpt2Config, tensors,
                   llama ? 2 : 1);
  std::ofstream(dir + "/plan.json") << fmt::format(
      R"({{"format": "hyperpipe.plan/1", "model": "{}/hf", "cluster": "a100x8", {}}})", dir,
      plan_body);
  return tensors;
}

}  // namespace hyperpipe::runtime::hf_test_models
