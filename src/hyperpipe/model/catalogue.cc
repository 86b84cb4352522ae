#include "hyperpipe/model/catalogue.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace hyperpipe::model {
namespace {

constexpr int64_t kGpt2Vocab = 50257;  // GPT-2 BPE, also used by GPT-3
constexpr int64_t kGpt2Context = 1024;
constexpr int64_t kGpt3Context = 2048;
constexpr int64_t kLlama2Vocab = 32000;
constexpr int64_t kLlama2Context = 4096;
constexpr int64_t kLlama3Vocab = 128256;
constexpr int64_t kLlama3Context = 8192;
constexpr double kLlama3RopeTheta = 500000.0;  // Meta-Llama-3's config.json

TransformerConfig gpt(const char* name, int64_t layers, int64_t hidden, int64_t heads,
                      int64_t seq_len) {
  TransformerConfig c;
  c.name = name;
  c.flavour = Flavour::gpt;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.vocab = kGpt2Vocab;
  c.seq_len = seq_len;
  c.tied_embeddings = true;
  c.dropout = true;
  c.dtype = DType::fp16;
  return complete(c);
}

TransformerConfig llama(const char* name, int64_t layers, int64_t hidden, int64_t heads,
                        int64_t kv_heads, int64_t ffn, int64_t vocab, int64_t seq_len,
                        double rope_theta = kDefaultRopeTheta) {
  TransformerConfig c;
  c.name = name;
  c.flavour = Flavour::llama;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.ffn_hidden = ffn;
  c.vocab = vocab;
  c.seq_len = seq_len;
  c.tied_embeddings = false;
  c.dropout = false;
  c.dtype = DType::bf16;
  c.rope_theta = rope_theta;
  return complete(c);
}

TransformerConfig opt_350m() {
  TransformerConfig c = gpt("opt-350m", 24, 1024, 16, kGpt3Context);
  c.vocab = 50272;
  c.embed_dim = 512;      // word_embed_proj_dim
  c.position_offset = 2;  // OPTLearnedPositionalEmbedding's offset
  c.final_norm = false;   // post-LayerNorm: do_layer_norm_before = false
  return c;
}

std::vector<CatalogueEntry> build() {
  // Radford et al. 2019 give 117M/345M/762M/1542M, which miscount the embeddings; the
  // published checkpoints hold the counts below.
  const std::string gpt2_card = "Radford et al. 2019; Hugging Face gpt2 checkpoints";
  // Brown et al. 2020, Table 2.1. The table gives 1.3B 24 heads and 13B d_model 5140,
  // neither of which divides into its 128-wide heads; like Megatron-LM we use 16 heads
  // and d_model 5120.
  const std::string gpt3_paper = "Brown et al. 2020, Table 2.1";
  const std::string llama2_card = "Touvron et al. 2023; meta-llama/Llama-2 config.json";
  const std::string llama3_card = "Meta 2024; meta-llama/Meta-Llama-3 config.json";
  return {
      {gpt("gpt2-124m", 12, 768, 12, kGpt2Context), "gpt2", 124.4e6, gpt2_card},
      {gpt("gpt2-355m", 24, 1024, 16, kGpt2Context), "gpt2-medium", 354.8e6, gpt2_card},
      {gpt("gpt2-774m", 36, 1280, 20, kGpt2Context), "gpt2-large", 774.0e6, gpt2_card},
      {gpt("gpt2-1.5b", 48, 1600, 25, kGpt2Context), "gpt2-xl", 1.558e9, gpt2_card},
      {gpt("gpt3-125m", 12, 768, 12, kGpt3Context), "", 125e6, gpt3_paper},
      {gpt("gpt3-350m", 24, 1024, 16, kGpt3Context), "", 350e6, gpt3_paper},
      {gpt("gpt3-760m", 24, 1536, 16, kGpt3Context), "", 760e6, gpt3_paper},
      {gpt("gpt3-1.3b", 24, 2048, 16, kGpt3Context), "", 1.3e9, gpt3_paper},
      {gpt("gpt3-2.7b", 32, 2560, 32, kGpt3Context), "", 2.7e9, gpt3_paper},
      {gpt("gpt3-6.7b", 32, 4096, 32, kGpt3Context), "", 6.7e9, gpt3_paper},
      {gpt("gpt3-13b", 40, 5120, 40, kGpt3Context), "", 13.0e9, gpt3_paper},
      {gpt("gpt3-175b", 96, 12288, 96, kGpt3Context), "", 174.6e9, gpt3_paper},
      {opt_350m(), "", 331e6, "Zhang et al. 2022; facebook/opt-350m config.json"},
      {llama("llama2-7b", 32, 4096, 32, 32, 11008, kLlama2Vocab, kLlama2Context), "", 6.74e9,
       llama2_card},
      {llama("llama2-13b", 40, 5120, 40, 40, 13824, kLlama2Vocab, kLlama2Context), "", 13.02e9,
       llama2_card},
      {llama("llama2-70b", 80, 8192, 64, 8, 28672, kLlama2Vocab, kLlama2Context), "", 68.98e9,
       llama2_card},
      {llama("llama3-8b", 32, 4096, 32, 8, 14336, kLlama3Vocab, kLlama3Context, kLlama3RopeTheta),
       "", 8.03e9, llama3_card},
      {llama("llama3-70b", 80, 8192, 64, 8, 28672, kLlama3Vocab, kLlama3Context, kLlama3RopeTheta),
       "", 70.55e9, llama3_card},
  };
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return text;
}

}  // namespace

const std::vector<CatalogueEntry>& model_catalogue() {
  static const std::vector<CatalogueEntry> catalogue = build();
  return catalogue;
}

std::optional<TransformerConfig> find_catalogue_model(const std::string& name) {
  const std::string wanted = lower(name);
  for (const auto& entry : model_catalogue()) {
    if (entry.config.name == wanted) return entry.config;
    std::stringstream aliases(entry.aliases);
    std::string alias;
    while (std::getline(aliases, alias, ',')) {
      if (alias == wanted) return entry.config;
    }
  }
  return std::nullopt;
}

}  // namespace hyperpipe::model
