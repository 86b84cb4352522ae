// `train --init-from DIR`: a small GPT-2-shaped and a small LLaMA-shaped model (grouped-
// query attention, untied head, sharded files), written by the test in Hugging Face's
// names and layouts with random weights, are loaded into 1, 2 and 3 stages with tp 1 and
// 2; the first step's loss (before any update: a function of the logits on that batch
// alone) equals that of a one-process forward pass written from Hugging Face's own
// definitions of the two models, in fp64, from the same files.
#include <gtest/gtest.h>

#include <cmath>

#include "hf_test_models.h"
#include "hyperpipe/runtime/text_corpus.h"
#include "hyperpipe/weights/safetensors.h"
#include "one_process_reference.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;
namespace fs = std::filesystem;
using torch::Tensor;
using namespace hf_test_models;

std::map<std::string, Tensor> as_map(const Tensors& tensors) {
  std::map<std::string, Tensor> map;
  for (const auto& [key, value] : tensors) map[key] = value.to(torch::kDouble);
  return map;
}

// Causal attention of [b, heads, s, d] queries against [b, heads, s, d] keys and values.
Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t s = q.size(2);
  auto scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  const auto future = torch::ones({s, s}, torch::kBool).triu(1);
  return scores.masked_fill(future, -INFINITY).softmax(-1).matmul(v);
}

Tensor split_heads(const Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}

Tensor merge_heads(const Tensor& x) {
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), -1});
}

// GPT2LMHeadModel's forward pass, as transformers defines it: logits [b, s, vocab].
Tensor gpt2_logits(const std::map<std::string, Tensor>& w, const Tensor& ids) {
  namespace F = torch::nn::functional;
  const auto norm = [&](const Tensor& x, const std::string& name) {
    return F::layer_norm(x, F::LayerNormFuncOptions({kGptHidden})
                                .weight(w.at(name + ".weight"))
                                .bias(w.at(name + ".bias"))
                                .eps(1e-5));
  };
  const auto conv1d = [&](const Tensor& x, const std::string& name) {
    return x.matmul(w.at(name + ".weight")) + w.at(name + ".bias");
  };
  auto x = w.at("transformer.wte.weight").index({ids}) +
           w.at("transformer.wpe.weight").slice(0, 0, ids.size(1));
  for (int64_t i = 0; i < kGptLayers; ++i) {
    const std::string p = fmt::format("transformer.h.{}.", i);
    const auto qkv = conv1d(norm(x, p + "ln_1"), p + "attn.c_attn").split(kGptHidden, -1);
    const auto attended =
        causal_attention(split_heads(qkv[0], kGptHeads), split_heads(qkv[1], kGptHeads),
                         split_heads(qkv[2], kGptHeads));
    x = x + conv1d(merge_heads(attended), p + "attn.c_proj");
    const auto inner = F::gelu(conv1d(norm(x, p + "ln_2"), p + "mlp.c_fc"),
                               F::GELUFuncOptions().approximate("tanh"));
    x = x + conv1d(inner, p + "mlp.c_proj");
  }
  return norm(x, "transformer.ln_f").matmul(w.at("transformer.wte.weight").t());
}

// LlamaForCausalLM's forward pass, as transformers defines it (rotate_half rotary
// embedding, key/value heads repeated for their query heads): logits [b, s, vocab].
Tensor llama_logits(const std::map<std::string, Tensor>& w, const Tensor& ids,
                    const LlamaVariant& variant) {
  const int64_t d = kLlamaHidden / kLlamaHeads;
  const auto rms = [&](const Tensor& x, const std::string& name) {
    return x * torch::rsqrt(x.pow(2).mean(-1, true) + variant.rms_norm_eps) * w.at(name);
  };
  const int64_t s = ids.size(1);
  const auto inverse = torch::pow(variant.rope_theta, -torch::arange(0, d, 2, torch::kDouble) / d);
  const auto angles = torch::outer(torch::arange(s, torch::kDouble), inverse);
  const auto both = torch::cat({angles, angles}, -1);  // [s, d]
  const auto rotate = [&](const Tensor& x) {           // [b, heads, s, d]
    const auto halves = x.chunk(2, -1);
    return x * both.cos() + torch::cat({-halves[1], halves[0]}, -1) * both.sin();
  };
  // Qwen2Attention's q, k and v projections add their biases.
  const auto linear = [&](const Tensor& x, const std::string& name) {
    const auto bias = name.substr(0, name.size() - 6) + "bias";  // "…weight" → "…bias"
    const auto product = x.matmul(w.at(name).t());
    return w.count(bias) ? product + w.at(bias) : product;
  };
  auto x = w.at("model.embed_tokens.weight").index({ids});
  for (int64_t i = 0; i < kLlamaLayers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    const auto a = rms(x, p + "input_layernorm.weight");
    const auto q = rotate(split_heads(linear(a, p + "self_attn.q_proj.weight"), kLlamaHeads));
    const auto group = kLlamaHeads / kLlamaKvHeads;
    const auto k = rotate(split_heads(linear(a, p + "self_attn.k_proj.weight"), kLlamaKvHeads))
                       .repeat_interleave(group, 1);
    const auto v = split_heads(linear(a, p + "self_attn.v_proj.weight"), kLlamaKvHeads)
                       .repeat_interleave(group, 1);
    x = x + linear(merge_heads(causal_attention(q, k, v)), p + "self_attn.o_proj.weight");
    const auto m = rms(x, p + "post_attention_layernorm.weight");
    const auto inner =
        torch::silu(linear(m, p + "mlp.gate_proj.weight")) * linear(m, p + "mlp.up_proj.weight");
    x = x + linear(inner, p + "mlp.down_proj.weight");
  }
  return linear(rms(x, "model.norm.weight"), "lm_head.weight");
}

struct Loading {
  const char* name;
  bool llama;
  const char* plan_body;  // 4 layers in all: the embedding, two blocks, the head
  LlamaVariant variant = {};
};

// The first step's loss of `reference_logits` on step 0's global batch, in fp64.
double reference_first_loss(const std::function<Tensor(const Tensor&)>& logits_of,
                            int64_t global_batch) {
  const TextCorpus data = TextCorpus::load(kCorpus, kSeq, 0);
  const auto [inputs, targets] = micro_batch_of(data, 0, global_batch, 0, global_batch);
  const auto logits = logits_of(inputs);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, kVocab}), targets.reshape(-1))
      .item<double>();
}

class HfWeights : public ::testing::TestWithParam<Loading> {};

TEST_P(HfWeights, LoadIntoAnySplitAsTheirOwnModelComputesThem) {
  const auto& c = GetParam();
  const std::string dir = hyperpipe::testing::temp_path(std::string("hf-weights-") + c.name);
  const Tensors tensors = write_model_and_plan(dir, c.llama, c.plan_body, c.variant);
  const std::string log = dir + "/log.txt";
  ASSERT_EQ(run_command(fmt::format("{} launch --plan {}/plan.json --data {} --steps 2 --seed 0 "
                                    "--init-from {}/hf --metrics {}/metrics.jsonl {} > {} 2>&1",
                                    kBinary, dir, kCorpus, dir, dir, device_options(), log)),
            0)
      << slurp(log);
  const auto plan = nlohmann::json::parse(slurp(dir + "/plan.json"));
  const int64_t global_batch =
      plan["micro_batch_size"].get<int64_t>() * plan["micro_batches"].get<int64_t>();
  torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  const auto weights = as_map(tensors);
  const double expected = reference_first_loss(
      [&](const Tensor& ids) {
        return c.llama ? llama_logits(weights, ids, c.variant) : gpt2_logits(weights, ids);
      },
      global_batch);
  torch::set_default_dtype(caffe2::TypeMeta::Make<float>());
  const double measured = metric_losses(dir).at(0);
  EXPECT_GT(std::abs(expected - std::log(static_cast<double>(kVocab))), 0.5)
      << "the weights leave the logits near uniform: the comparison would be weak";
  EXPECT_NEAR(measured, expected, 1e-5 * expected) << slurp(log);
}

// Weights that would not compute what their config says, or that the config does not
// describe, stop the run before its first step with exit 2, naming the file and the field
// or tensor.
TEST(HfWeightsRefused, SettingsTheRuntimeDoesNotComputeAndShapesTheConfigDoesNotHave) {
  const std::string dir = hyperpipe::testing::temp_path("hf-weights-refused");
  fs::remove_all(dir);
  std::ofstream(dir + "-plan.json") << fmt::format(
      R"({{"format": "hyperpipe.plan/1", "model": "{}/hf", "cluster": "a100x8",
          "micro_batch_size": 2, "micro_batches": 1, "schedule": "1f1b",
          "stages": [{{"layers": [0, 4], "devices": [0]}}]}})",
      dir);
  const auto refusal = [&](const std::string& config, const Tensors& tensors) {
    fs::remove_all(dir);
    write_checkpoint(dir + "/hf", config, tensors, 1);
    const std::string log = dir + "-log.txt";
    const int code =
        run_command(fmt::format("{} launch --plan {}-plan.json --data {} --steps 1 "
                                "--init-from {}/hf {} > {} 2>&1",
                                kBinary, dir, kCorpus, dir, device_options(), log));
    EXPECT_EQ(code, 2) << slurp(log);
    return slurp(log);
  };
  std::string config = kLlamaConfig;
  config.replace(config.find("\"rope_scaling\": null"), 20,
                 R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})");
  auto log = refusal(config, llama_tensors());
  EXPECT_NE(log.find("config.json: rope_scaling: null (no scaled rotary positions) (all "
                     "HyperPipe's runtime computes so far"),
            std::string::npos)
      << log;

  // A header whose shape is not the config's: the second block's up projection cut short.
  Tensors tensors = llama_tensors();
  for (auto& [key, value] : tensors) {
    if (key == "model.layers.1.mlp.up_proj.weight") value = value.slice(0, 0, kLlamaFfn - 8);
  }
  log = refusal(kLlamaConfig, tensors);
  EXPECT_NE(log.find("model.safetensors: model.layers.1.mlp.up_proj.weight: shape [48, 32], as "
                     "config.json's model needs; got [40, 32]"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("joined"), std::string::npos) << "refused only after the processes met";
}

INSTANTIATE_TEST_SUITE_P(
    Splits, HfWeights,
    ::testing::Values(Loading{"gpt2-one-stage", false,
                              R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 4], "devices": [0]}])"},
                      Loading{"gpt2-three-stages", false,
                              R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 3], "devices": [1]},
                              {"layers": [3, 4], "devices": [2]}])"},
                      Loading{"gpt2-two-stages-tp-two", false,
                              R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 2], "devices": [0, 1], "tp": 2},
                              {"layers": [2, 4], "devices": [2, 3], "tp": 2}])"},
                      Loading{"llama-one-stage", true,
                              R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 4], "devices": [0]}])"},
                      Loading{"llama-two-stages-tp-two", true,
                              R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 2], "devices": [0, 1], "tp": 2},
                              {"layers": [2, 4], "devices": [2, 3], "tp": 2}])"},
                      Loading{"llama-three-stages", true,
                              R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 3], "devices": [1]},
                              {"layers": [3, 4], "devices": [2]}])"},
                      // Llama 3's rotary base; Qwen2's epsilon, base and q/k/v biases, tp 2.
                      Loading{"llama3-two-stages", true,
                              R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 2], "devices": [0]}, {"layers": [2, 4], "devices": [1]}])",
                              kLlama3},
                      Loading{"qwen2-two-stages-tp-two", true,
                              R"("micro_batch_size": 2, "micro_batches": 2, "schedule": "1f1b",
                   "stages": [{"layers": [0, 2], "devices": [0, 1], "tp": 2},
                              {"layers": [2, 4], "devices": [2, 3], "tp": 2}])",
                              kQwen2}),
    hyperpipe::testing::NameOfCase());

}  // namespace
}  // namespace hyperpipe::runtime
