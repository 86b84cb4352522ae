#include "hyperpipe/weights/hf_checkpoint.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::weights {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "a readable file");
  json document = json::parse(in, nullptr, false);
  if (document.is_discarded() || !document.is_object()) throw InputError(path, "", "a JSON object");
  return document;
}

bool same(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

// The settings of config.json that change what the model computes, checked against what
// the runtime computes; Hugging Face's defaults where a field is absent.
void check_computation(const json& config, HfArchitecture architecture, int64_t seq_len,
                       const HfComputation& computation, const std::string& source) {
  const auto number = [&](const char* key, double fallback) {
    const auto found = config.find(key);
    if (found == config.end() || found->is_null()) return fallback;
    if (!found->is_number()) throw InputError(source, key, "a number");
    return found->get<double>();
  };
  const auto text = [&](const char* key, const char* fallback) {
    const auto found = config.find(key);
    return found != config.end() && found->is_string() ? found->get<std::string>()
                                                       : std::string(fallback);
  };
  const auto refuse = [&](const char* key, const std::string& expected) {
    const auto found = config.find(key);
    throw InputError(source, key,
                     fmt::format("{} (all HyperPipe's runtime computes so far: these weights would "
                                 "give other logits under it); got {}",
                                 expected, found == config.end() ? "the default" : found->dump()));
  };
  if (architecture == HfArchitecture::kGpt2) {
    const std::string activation = text("activation_function", "gelu_new");
    if (activation != "gelu_new" && activation != "gelu_pytorch_tanh") {
      refuse("activation_function", "gelu_new (GELU, tanh approximation)");
    }
    // GPT2Config's default 0.1 for each; the runtime drops at one rate or not at all.
    for (const char* key : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) {
      const double rate = number(key, 0.1);
      if (rate != 0 && !same(rate, computation.dropout_rate)) {
        refuse(key, fmt::format("0 or {}", computation.dropout_rate));
      }
    }
    // GPT2Attention divides the scores by √head_dim unless told not to, and by the layer's
    // number as well if told to.
    const auto flag = [&](const char* key, bool fallback) {
      const auto found = config.find(key);
      return found != config.end() && found->is_boolean() ? found->get<bool>() : fallback;
    };
    if (!flag("scale_attn_weights", true)) refuse("scale_attn_weights", "true (scores ÷ √d)");
    if (flag("scale_attn_by_inverse_layer_idx", false)) {
      refuse("scale_attn_by_inverse_layer_idx", "false (no ÷ layer number)");
    }
    return;
  }
  if (text("hidden_act", "silu") != "silu") refuse("hidden_act", "silu");
  if (config.contains("rope_scaling") && !config["rope_scaling"].is_null()) {
    refuse("rope_scaling", "null (no scaled rotary positions)");
  }
  // transformers 5 folds rope_scaling into rope_parameters: plain rotary is "default".
  if (const auto rope = config.find("rope_parameters"); rope != config.end() && !rope->is_null()) {
    const auto type = rope->is_object() ? rope->find("rope_type") : rope->end();
    if (!rope->is_object() || (type != rope->end() && *type != "default")) {
      refuse("rope_parameters", "{\"rope_type\": \"default\", …} (no scaled rotary positions)");
    }
  }
  // A head width set apart from hidden ÷ heads (Mistral NeMo's, Qwen3's).
  if (const auto head_dim = config.find("head_dim");
      head_dim != config.end() && !head_dim->is_null() &&
      !(head_dim->is_number_integer() &&
        config.value("hidden_size", 0) ==
            head_dim->get<int64_t>() * config.value("num_attention_heads", 0))) {
    refuse("head_dim", "null or hidden_size ÷ num_attention_heads");
  }
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    if (config.contains(bias) && config[bias].is_boolean() && config[bias].get<bool>()) {
      refuse(bias, "false (no biases in LLaMA blocks)");
    }
  }
  // Qwen2 names a window it uses only with use_sliding_window (false in its releases).
  const auto use_window = config.find("use_sliding_window");
  const bool windowed =
      use_window == config.end() || !use_window->is_boolean() || use_window->get<bool>();
  if (windowed &&
      number("sliding_window", static_cast<double>(seq_len)) < static_cast<double>(seq_len)) {
    refuse("sliding_window",
           fmt::format("null or at least max_position_embeddings ({}): full causal attention",
                       seq_len));
  }
}

// A weight file name of an index: a plain name in the checkpoint's directory.
std::string checked_file_name(const json& value, const std::string& tensor,
                              const std::string& source) {
  const std::string name = value.is_string() ? value.get<std::string>() : "";
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    throw InputError(source, "weight_map." + tensor,
                     "the name of a file in the checkpoint's directory");
  }
  return name;
}

bool is_float(TensorDtype dtype) {
  return dtype == TensorDtype::kF16 || dtype == TensorDtype::kBF16 || dtype == TensorDtype::kF32 ||
         dtype == TensorDtype::kF64;
}

}  // namespace

HfCheckpoint::HfCheckpoint(const std::string& dir, const HfComputation& computation) : dir_(dir) {
  const std::string config_path = (fs::path(dir) / model::kHfConfigFile).string();
  if (!fs::is_regular_file(config_path)) {
    throw InputError(dir, "",
                     fmt::format("a Hugging Face checkpoint's directory, with {} and {} (or its "
                                 "shards and {})",
                                 model::kHfConfigFile, kHfWeightsFile, kHfWeightsIndexFile));
  }
  config_ = model::read_hf_config(YamlField::load_file(config_path));
  const json raw = read_json(config_path);
  std::string why_not;
  const auto architecture = hf_architecture(raw.value("model_type", ""), &why_not);
  if (!architecture) throw InputError(config_path, "model_type", why_not);
  architecture_ = *architecture;
  check_computation(raw, architecture_, config_.seq_len, computation, config_path);

  const std::string index_path = (fs::path(dir) / kHfWeightsIndexFile).string();
  if (fs::is_regular_file(index_path)) {
    const json index = read_json(index_path);
    if (!index.contains("weight_map") || !index["weight_map"].is_object()) {
      throw InputError(index_path, "weight_map", "an object: tensor name → file name");
    }
    for (const auto& [tensor, file_name] : index["weight_map"].items()) {
      weight_map_[tensor] = checked_file_name(file_name, tensor, index_path);
      names_.insert(tensor);
    }
    return;
  }
  const std::string single = (fs::path(dir) / kHfWeightsFile).string();
  if (!fs::is_regular_file(single)) {
    throw InputError(dir, "",
                     fmt::format("the weights: {} (or shards named by {})", kHfWeightsFile,
                                 kHfWeightsIndexFile));
  }
  for (const auto& entry : file(kHfWeightsFile).tensors()) {
    weight_map_[entry.name] = kHfWeightsFile;
    names_.insert(entry.name);
  }
}

const SafetensorsFile& HfCheckpoint::file(const std::string& name) const {
  auto& slot = open_[name];
  if (!slot) slot = std::make_unique<SafetensorsFile>((fs::path(dir_) / name).string());
  return *slot;
}

HfTensor HfCheckpoint::tensor(const HfSource& source) const {
  const auto name = find_hf_tensor(source.name, names_);
  if (!name) {
    throw InputError(dir_, source.name,
                     "a tensor of this name: config.json's model has it, the weights do not");
  }
  const SafetensorsFile& found = file(weight_map_.at(*name));
  const TensorEntry* entry = found.find(*name);
  if (!entry) {
    throw InputError(found.path(), *name,
                     fmt::format("this tensor, as {} says", kHfWeightsIndexFile));
  }
  if (!is_float(entry->dtype)) {
    throw InputError(found.path(), *name,
                     fmt::format("a floating-point tensor (F16, BF16, F32, F64); got {}",
                                 to_string(entry->dtype)));
  }
  if (entry->shape != source.shape) {
    throw InputError(found.path(), *name,
                     fmt::format("shape [{}], as config.json's model needs; got [{}]",
                                 fmt::join(source.shape, ", "), fmt::join(entry->shape, ", ")));
  }
  return {entry, found.bytes(*entry), found.path()};
}

std::optional<std::string> hf_model_mismatch(const model::TransformerConfig& planned,
                                             const model::TransformerConfig& found) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> fields[] = {
      {"flavour", {static_cast<int64_t>(planned.flavour), static_cast<int64_t>(found.flavour)}},
      {"hidden", {planned.hidden, found.hidden}},
      {"layers", {planned.layers, found.layers}},
      {"heads", {planned.heads, found.heads}},
      {"kv_heads", {planned.kv_heads, found.kv_heads}},
      {"ffn_hidden", {planned.ffn_hidden, found.ffn_hidden}},
      {"vocab", {planned.vocab, found.vocab}},
      {"seq_len", {planned.seq_len, found.seq_len}},
      {"embed_dim", {planned.embed_dim, found.embed_dim}},
      {"position_offset", {planned.position_offset, found.position_offset}},
      {"tied_embeddings", {planned.tied_embeddings, found.tied_embeddings}},
      {"final_norm", {planned.final_norm, found.final_norm}},
  };
  for (const auto& [field, values] : fields) {
    if (values.first != values.second) {
      return fmt::format("{}: the plan's model has {}, the checkpoint's {}", field, values.first,
                         values.second);
    }
  }
  if (planned.qkv_bias != found.qkv_bias) {
    return fmt::format("qkv_bias: the plan's model has {}, the checkpoint's {}", planned.qkv_bias,
                       found.qkv_bias);
  }
  const std::pair<const char*, std::pair<double, double>> numbers[] = {
      {"norm_eps", {planned.norm_eps, found.norm_eps}},
      {"rope_theta", {planned.rope_theta, found.rope_theta}},
  };
  for (const auto& [field, values] : numbers) {
    if (!same(values.first, values.second)) {
      return fmt::format("{}: the plan's model has {}, the checkpoint's {}", field, values.first,
                         values.second);
    }
  }
  return std::nullopt;
}

}  // namespace hyperpipe::weights
