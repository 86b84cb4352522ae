#include "hyperpipe/model/model_loader.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <vector>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"
#include "hyperpipe/common/nearest_name.h"
#include "hyperpipe/common/text_excerpt.h"
#include "hyperpipe/model/catalogue.h"

namespace hyperpipe::model {
namespace {

// A model without a name takes its file's (or folder's): it goes into plans, profiles
// and JSON reports, so it must be printable UTF-8 like a name given in the file.
std::string name_from_path(const std::filesystem::path& part, const YamlField& root) {
  std::string name = part.string();
  if (!is_printable_utf8(name)) {
    throw InputError(root.source(), "name",
                     fmt::format("a `name` field: the model is named after its file, but '{}' is "
                                 "not UTF-8 text",
                                 printable_excerpt(name)));
  }
  return name;
}

DType read_dtype(const YamlField& field) {
  const auto dtype = parse_dtype(field.as_string());
  if (!dtype) field.fail("a dtype: fp32, fp16 or bf16");
  return *dtype;
}

void read_int_if_present(const YamlField& root, const char* key, int64_t& into) {
  if (auto field = root.optional(key)) into = field->as_positive_int();
}

void read_number_if_present(const YamlField& root, const char* key, double& into) {
  if (auto field = root.optional(key)) into = field->as_positive_number();
}

void read_bool_if_present(const YamlField& root, const char* key, bool& into) {
  if (auto field = root.optional(key)) into = field->as_bool();
}

// The file's keys for each field validate() names: ours, then Hugging Face's.
const std::map<std::string, std::vector<std::string>>& field_keys() {
  static const std::map<std::string, std::vector<std::string>> keys{
      {"hidden", {"hidden", "n_embd", "hidden_size"}},
      {"layers", {"layers", "n_layer", "num_hidden_layers"}},
      {"heads", {"heads", "n_head", "num_attention_heads"}},
      {"kv_heads", {"kv_heads", "num_key_value_heads"}},
      {"ffn_hidden", {"ffn_hidden", "n_inner", "ffn_dim", "intermediate_size"}},
      {"vocab", {"vocab", "vocab_size"}},
      {"seq_len", {"seq_len", "n_positions", "max_position_embeddings"}},
      {"embed_dim", {"embed_dim", "word_embed_proj_dim"}},
      {"position_offset", {"position_offset"}},
      {"norm_eps", {"norm_eps", "layer_norm_epsilon", "rms_norm_eps"}},
      {"rope_theta", {"rope_theta"}}};
  return keys;
}

TransformerConfig finish(TransformerConfig config, const YamlField& root) {
  config = complete(config);
  try {
    validate(config, root.source());
  } catch (const InputError& error) {
    // validate() knows fields, not lines: point at the line of the key that set it.
    const std::string& where = error.where();  // "field 'heads'"
    const auto open = where.find('\'');
    const std::string field =
        open == std::string::npos ? "" : where.substr(open + 1, where.size() - open - 2);
    const auto keys = field_keys().find(field);
    if (keys == field_keys().end()) throw;
    for (const auto& key : keys->second) {
      if (!root.has(key)) continue;
      throw InputError(error.source(),
                       fmt::format("line {}, field '{}'", root.required(key).line(), key),
                       error.expected());
    }
    throw;
  }
  return config;
}

// Where an architecture's config.json keeps the shape every model has.
struct HfShapeKeys {
  Flavour flavour;
  const char* hidden;
  const char* layers;
  const char* heads;
  const char* ffn_hidden;  // optional (null: the flavour's default) where `ffn_optional`
  bool ffn_optional;
  const char* positions;
};

// GPT2Config, OPTConfig, and LlamaConfig (MistralConfig's and Qwen2Config's are alike).
constexpr HfShapeKeys kGpt2Keys{Flavour::gpt, "n_embd", "n_layer",    "n_head",
                                "n_inner",    true,     "n_positions"};
constexpr HfShapeKeys kOptKeys{
    Flavour::gpt, "hidden_size", "num_hidden_layers",      "num_attention_heads",
    "ffn_dim",    false,         "max_position_embeddings"};
constexpr HfShapeKeys kLlamaKeys{Flavour::llama,           "hidden_size",       "num_hidden_layers",
                                 "num_attention_heads",    "intermediate_size", false,
                                 "max_position_embeddings"};

// LlamaConfig's, MistralConfig's and Qwen2Config's default rms_norm_eps.
constexpr double kHfRmsNormEps = 1e-6;

TransformerConfig read_hf_shape(const YamlField& root, const HfShapeKeys& keys) {
  TransformerConfig c;
  c.flavour = keys.flavour;
  c.hidden = root.required(keys.hidden).as_positive_int();
  c.layers = root.required(keys.layers).as_positive_int();
  c.heads = root.required(keys.heads).as_positive_int();
  if (keys.ffn_optional) {
    read_int_if_present(root, keys.ffn_hidden, c.ffn_hidden);
  } else {
    c.ffn_hidden = root.required(keys.ffn_hidden).as_positive_int();
  }
  c.vocab = root.required("vocab_size").as_positive_int();
  c.seq_len = root.required(keys.positions).as_positive_int();
  return c;
}

// What sets a GPT-2 or OPT model apart beyond its shape.
void read_hf_gpt2_extras(const YamlField& root, TransformerConfig& c) {
  read_number_if_present(root, "layer_norm_epsilon", c.norm_eps);
  // GPT2Config's dropouts default to 0.1; a model fine-tuned without them sets all to 0.
  c.dropout = false;
  for (const char* key : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) {
    const auto rate = root.optional(key);
    if (!rate || rate->as_number() > 0) c.dropout = true;
  }
}

void read_hf_opt_extras(const YamlField& root, TransformerConfig& c) {
  read_int_if_present(root, "word_embed_proj_dim", c.embed_dim);
  c.position_offset = 2;  // OPTLearnedPositionalEmbedding reserves two rows
  read_bool_if_present(root, "do_layer_norm_before", c.final_norm);
}

void read_hf_llama_extras(const YamlField& root, TransformerConfig& c) {
  c.dropout = false;
  c.tied_embeddings = false;
  c.dtype = DType::bf16;
  c.norm_eps = kHfRmsNormEps;
  read_number_if_present(root, "rms_norm_eps", c.norm_eps);
  read_number_if_present(root, "rope_theta", c.rope_theta);
  // transformers 5 writes the rotary base into rope_parameters (4.x: rope_theta).
  if (auto rope = root.optional("rope_parameters"); rope && rope->is_map()) {
    read_number_if_present(*rope, "rope_theta", c.rope_theta);
  }
  // Qwen2's attention always has query, key and value biases.
  c.qkv_bias = root.required("model_type").as_string() == "qwen2";
  read_int_if_present(root, "num_key_value_heads", c.kv_heads);
}

}  // namespace

TransformerConfig read_hf_config(const YamlField& root) {
  if (!root.is_map()) root.fail("a JSON object (a Hugging Face config.json)");
  const YamlField type = root.required("model_type");
  const size_t kind = type.as_choice({"gpt2", "opt", "llama", "mistral", "qwen2"});
  const HfShapeKeys& keys = kind == 0 ? kGpt2Keys : kind == 1 ? kOptKeys : kLlamaKeys;
  TransformerConfig c = read_hf_shape(root, keys);
  if (kind == 0) {
    read_hf_gpt2_extras(root, c);
  } else if (kind == 1) {
    read_hf_opt_extras(root, c);
  } else {
    read_hf_llama_extras(root, c);
  }
  read_bool_if_present(root, "tie_word_embeddings", c.tied_embeddings);
  // transformers 4.x names the weights' type torch_dtype, 5 names it dtype.
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (auto dtype = root.optional(key)) c.dtype = read_dtype(*dtype);
  }
  // Named after the model, never after its folder (the Hugging Face hub's cache keeps a
  // config.json in a folder named by a commit hash): its hub name where the file has it,
  // else its architecture and shape ("llama-32x4096": blocks × hidden).
  if (auto name = root.optional("_name_or_path"); name && !name->as_string().empty()) {
    c.name = name->as_string();
  } else {
    c.name = fmt::format("{}-{}x{}", type.as_string(), c.layers, c.hidden);
  }
  return finish(c, root);
}

TransformerConfig read_model_yaml(const YamlField& root) {
  if (!root.is_map()) root.fail("a mapping of model fields");
  root.allow_only({"name",
                   "base",
                   "flavour",
                   "hidden",
                   "layers",
                   "heads",
                   "kv_heads",
                   "ffn_hidden",
                   "vocab",
                   "seq_len",
                   "embed_dim",
                   "position_offset",
                   "tied_embeddings",
                   "final_norm",
                   "dropout",
                   "flash_attention",
                   "dtype",
                   "tf32",
                   "norm_eps",
                   "rope_theta",
                   "qkv_bias"});
  TransformerConfig c;
  const bool has_base = root.has("base");
  if (has_base) {
    const YamlField base = root.required("base");
    const auto found = find_catalogue_model(base.as_string());
    if (!found) base.fail("a catalogue model name (see `hyperpipe models`)");
    c = *found;
  } else {
    for (const char* key : {"hidden", "layers", "heads", "vocab", "seq_len"}) root.required(key);
  }
  if (auto name = root.optional("name")) c.name = name->as_string();
  if (c.name.empty()) c.name = name_from_path(std::filesystem::path(root.source()).stem(), root);
  if (auto flavour = root.optional("flavour")) {
    c.flavour = flavour->as_choice({"gpt", "llama"}) == 0 ? Flavour::gpt : Flavour::llama;
    if (!has_base && c.flavour == Flavour::llama) {
      c.dropout = false;
      c.tied_embeddings = false;
    }
  }
  read_int_if_present(root, "hidden", c.hidden);
  read_int_if_present(root, "layers", c.layers);
  read_int_if_present(root, "heads", c.heads);
  read_int_if_present(root, "kv_heads", c.kv_heads);
  read_int_if_present(root, "ffn_hidden", c.ffn_hidden);
  read_int_if_present(root, "vocab", c.vocab);
  read_int_if_present(root, "seq_len", c.seq_len);
  read_int_if_present(root, "embed_dim", c.embed_dim);
  if (auto offset = root.optional("position_offset")) {
    c.position_offset = offset->as_int();
    if (c.position_offset < 0 || c.position_offset > kMaxSize) {
      offset->fail(fmt::format("0 or a positive integer up to {}", kMaxSize));
    }
  }
  read_bool_if_present(root, "tied_embeddings", c.tied_embeddings);
  read_bool_if_present(root, "final_norm", c.final_norm);
  read_bool_if_present(root, "dropout", c.dropout);
  read_bool_if_present(root, "flash_attention", c.flash_attention);
  read_number_if_present(root, "norm_eps", c.norm_eps);
  read_number_if_present(root, "rope_theta", c.rope_theta);
  read_bool_if_present(root, "qkv_bias", c.qkv_bias);
  if (c.qkv_bias && c.flavour == Flavour::gpt) {
    root.required("qkv_bias").fail("false or absent for GPT (its blocks have every bias)");
  }
  if (auto dtype = root.optional("dtype")) c.dtype = read_dtype(*dtype);
  read_bool_if_present(root, "tf32", c.tf32);
  if (c.tf32 && c.dtype != DType::fp32) {
    root.required("tf32").fail("false or absent unless dtype is fp32 (TF32 runs fp32 products)");
  }
  return finish(c, root);
}

Model load_model(const std::string& name_or_path) {
  if (auto found = find_catalogue_model(name_or_path)) return Model(*found);
  if (!std::filesystem::exists(name_or_path)) {
    std::vector<std::string> names;
    for (const auto& entry : model_catalogue()) names.push_back(entry.config.name);
    throw InputError("--model", "'" + name_or_path + "'",
                     "not a catalogue model (see `hyperpipe models`) nor an existing file "
                     "(a model .yaml or a Hugging Face config.json)" +
                         did_you_mean(name_or_path, names));
  }
  // A Hugging Face checkpoint's directory: its config.json says what the model is.
  if (std::filesystem::is_directory(name_or_path)) {
    const auto config = std::filesystem::path(name_or_path) / kHfConfigFile;
    if (!std::filesystem::is_regular_file(config)) {
      throw InputError("--model", name_or_path,
                       fmt::format("a model directory with a {} (as Hugging Face checkpoints "
                                   "have), or a model file",
                                   kHfConfigFile));
    }
    return Model(read_hf_config(YamlField::load_file(config.string())));
  }
  const YamlField root = YamlField::load_file(name_or_path);
  if (root.is_map() && root.has("model_type")) return Model(read_hf_config(root));
  return Model(read_model_yaml(root));
}

}  // namespace hyperpipe::model
