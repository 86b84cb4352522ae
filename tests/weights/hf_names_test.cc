#include "hyperpipe/weights/hf_names.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "hyperpipe/model/model.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::weights {
namespace {

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

model::TransformerConfig config_of(const std::string& file) {
  return model::load_model(std::string(HYPERPIPE_TEST_DATA) + "/" + file).config();
}

// Every layer's parameters, as the table builds them from Hugging Face's tensors, hold
// exactly as many numbers as the cost model counts for that layer (an independent
// reckoning), and each parameter's sources stack to its shape.
void expect_table_matches_the_model(const std::string& file, HfArchitecture architecture) {
  const model::Model model(config_of(file));
  for (const auto& layer : model.layers()) {
    const auto parameters =
        hf_parameters(model.config(), architecture, layer.index(), layer.index() + 1);
    int64_t total = 0;
    for (const auto& parameter : parameters) {
      EXPECT_EQ(parameter.name.rfind("layer" + std::to_string(layer.index()) + ".", 0), 0u)
          << parameter.name;
      total += numel(parameter.shape);
      int64_t rows = 0;
      for (const auto& source : parameter.sources) {
        EXPECT_EQ(numel(source.shape) % (parameter.shape.size() > 1 ? parameter.shape[1] : 1), 0);
        rows += source.transform == HfTransform::kTranspose ? source.shape.back()
                                                            : source.shape.front();
      }
      EXPECT_EQ(rows, parameter.shape.front()) << parameter.name;
    }
    EXPECT_EQ(total, layer.params()) << file << ", layer " << layer.index();
  }
}

TEST(HfNames, Gpt2sTableHoldsEveryParameterTheModelCounts) {
  expect_table_matches_the_model("gpt2-config.json", HfArchitecture::kGpt2);
}

TEST(HfNames, LlamasTableHoldsEveryParameterTheModelCountsWithGroupedQueries) {
  const auto config = config_of("llama-3-8b-config.json");
  ASSERT_LT(config.kv_heads, config.heads);
  expect_table_matches_the_model("llama-3-8b-config.json", HfArchitecture::kLlama);
}

// Qwen2-0.5B (its config.json as Qwen ship it): the q, k and v biases join the table, and
// the model's count is the published 494,032,768.
TEST(HfNames, Qwen2sTableHoldsItsBiasesInRotaryOrder) {
  const auto config = config_of("qwen2-0.5b-config.json");
  ASSERT_TRUE(config.qkv_bias);
  expect_table_matches_the_model("qwen2-0.5b-config.json", HfArchitecture::kLlama);
  EXPECT_EQ(model::Model(config).total_params(), 494'032'768);
  const auto block = hf_parameters(config, HfArchitecture::kLlama, 1, 2);
  const auto bias = std::find_if(block.begin(), block.end(),
                                 [](const HfParameter& p) { return p.name == "layer1.qkv_bias"; });
  ASSERT_NE(bias, block.end());
  ASSERT_EQ(bias->sources.size(), 3u);
  EXPECT_EQ(bias->sources[0].name, "model.layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(bias->sources[0].transform, HfTransform::kRotaryPairs);
  EXPECT_EQ(bias->sources[1].transform, HfTransform::kRotaryPairs);
  EXPECT_EQ(bias->sources[2].transform, HfTransform::kAsIs);
}

TEST(HfNames, TheFusedQkvStacksQueriesKeysAndValuesInThatOrder) {
  const auto config = config_of("llama-3-8b-config.json");
  const auto block = hf_parameters(config, HfArchitecture::kLlama, 3, 4);
  const auto qkv = std::find_if(block.begin(), block.end(),
                                [](const HfParameter& p) { return p.name == "layer3.qkv"; });
  ASSERT_NE(qkv, block.end());
  ASSERT_EQ(qkv->sources.size(), 3u);
  EXPECT_EQ(qkv->sources[0].name, "model.layers.2.self_attn.q_proj.weight");
  EXPECT_EQ(qkv->sources[0].heads, 32);
  EXPECT_EQ(qkv->sources[1].name, "model.layers.2.self_attn.k_proj.weight");
  EXPECT_EQ(qkv->sources[1].heads, 8);
  EXPECT_EQ(qkv->sources[1].transform, HfTransform::kRotaryPairs);
  EXPECT_EQ(qkv->sources[2].name, "model.layers.2.self_attn.v_proj.weight");
  EXPECT_EQ(qkv->sources[2].transform, HfTransform::kAsIs);  // values are not rotated
  // GPT-2's Conv1D weights are stored [in, out].
  const auto gpt2 = hf_parameters(config_of("gpt2-config.json"), HfArchitecture::kGpt2, 1, 2);
  const auto up = std::find_if(gpt2.begin(), gpt2.end(),
                               [](const HfParameter& p) { return p.name == "layer1.up"; });
  ASSERT_NE(up, gpt2.end());
  EXPECT_EQ(up->sources[0].name, "transformer.h.0.mlp.c_fc.weight");
  EXPECT_EQ(up->sources[0].transform, HfTransform::kTranspose);
  EXPECT_EQ(up->sources[0].shape, (std::vector<int64_t>{768, 3072}));
  EXPECT_EQ(up->shape, (std::vector<int64_t>{3072, 768}));
}

TEST(HfNames, TiedEmbeddingsReadTheTokenMatrixAgainForTheHead) {
  const auto config = config_of("gpt2-config.json");
  ASSERT_TRUE(config.tied_embeddings);
  const auto head = hf_parameters(config, HfArchitecture::kGpt2, config.layers + 1,
                                  static_cast<int>(config.layers) + 2);
  ASSERT_EQ(head.back().name, "layer13.tied_tokens");
  EXPECT_EQ(head.back().sources[0].name, "transformer.wte.weight");
  const auto llama = config_of("llama-3-8b-config.json");
  const auto untied = hf_parameters(llama, HfArchitecture::kLlama, llama.layers + 1,
                                    static_cast<int>(llama.layers) + 2);
  EXPECT_EQ(untied.back().name, "layer33.lm_head");
  EXPECT_EQ(untied.back().sources[0].name, "lm_head.weight");
}

// Rotates one head's vector at position `position` as Hugging Face does (rotate_half:
// dimension j pairs with j + d/2) or as HyperPipe does (2j with 2j + 1).
std::vector<double> rotate(const std::vector<double>& x, int position, bool halves) {
  const size_t d = x.size();
  std::vector<double> out(d);
  for (size_t j = 0; j < d / 2; ++j) {
    const double angle = position * std::pow(10000.0, -2.0 * static_cast<double>(j) / d);
    const size_t a = halves ? j : 2 * j;
    const size_t b = halves ? j + d / 2 : 2 * j + 1;
    out[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
    out[b] = x[a] * std::sin(angle) + x[b] * std::cos(angle);
  }
  return out;
}

// Rows taken in rotary_pair_rows' order, rotated HyperPipe's way, equal Hugging Face's
// rotation of the rows in its own order, taken in the same order: attention scores match.
TEST(HfNames, RotaryPairRowsTurnHuggingFacesRotationIntoHyperPipes) {
  EXPECT_EQ(rotary_pair_rows(1, 4), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(rotary_pair_rows(2, 4), (std::vector<int64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  constexpr int64_t kHeadDim = 8;
  const auto order = rotary_pair_rows(1, kHeadDim);
  std::vector<double> hf(kHeadDim);
  for (int64_t i = 0; i < kHeadDim; ++i) hf[i] = 0.3 * static_cast<double>(i) - 1.1;
  std::vector<double> ours(kHeadDim);
  for (int64_t i = 0; i < kHeadDim; ++i) ours[i] = hf[order[i]];
  for (int position : {0, 1, 7, 100}) {
    const auto hf_rotated = rotate(hf, position, /*halves=*/true);
    const auto ours_rotated = rotate(ours, position, /*halves=*/false);
    for (int64_t i = 0; i < kHeadDim; ++i) {
      EXPECT_NEAR(ours_rotated[i], hf_rotated[order[i]], 1e-12) << "position " << position;
    }
  }
}

TEST(HfNames, ArchitecturesAndTheNamesAFileMayUse) {
  EXPECT_EQ(hf_architecture("gpt2"), HfArchitecture::kGpt2);
  EXPECT_EQ(hf_architecture("mistral"), HfArchitecture::kLlama);
  std::string why;
  EXPECT_EQ(hf_architecture("qwen2"), HfArchitecture::kLlama);  // with qkv_bias in its config
  EXPECT_FALSE(hf_architecture("opt", &why));
  EXPECT_NE(why.find("ReLU"), std::string::npos) << why;
  // The hub's gpt2 file names tensors without its model class's "transformer.".
  EXPECT_EQ(find_hf_tensor("transformer.h.0.ln_1.weight", {"h.0.ln_1.weight"}), "h.0.ln_1.weight");
  EXPECT_EQ(find_hf_tensor("transformer.h.0.ln_1.weight", {"transformer.h.0.ln_1.weight"}),
            "transformer.h.0.ln_1.weight");
  EXPECT_FALSE(find_hf_tensor("model.norm.weight", {"norm.weight"}));
}

}  // namespace
}  // namespace hyperpipe::weights
