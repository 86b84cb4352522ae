// `train --init-from DIR`: a small GPT-2-shaped and a small LLaMA-shaped model (grouped-
// query attention, untied head, sharded files), written by the test in Hugging Face's
// names and layouts with random weights, are loaded into 1, 2 and 3 stages with tp 1 and
// 2; the first step's loss (before any update: a function of the logits on that batch
// alone) equals that of a one-process forward pass written from Hugging Face's own
// definitions of the two models, in fp64, from the same files.
#include <gtest/gtest.h>

#include <cmath>

#include "hyperpipe/runtime/text_corpus.h"
#include "hyperpipe/weights/safetensors.h"
#include "one_process_reference.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;
namespace fs = std::filesystem;
using torch::Tensor;

// Weights far from uniform logits (the default init's 0.02 gives a loss of about ln 256
// whatever the mapping), so a tensor in the wrong place shows in the loss.
constexpr double kWeightStd = 0.3;
constexpr int64_t kSeq = 16;
constexpr int64_t kVocab = 256;  // the byte tokens of the text data

using Tensors = std::vector<std::pair<std::string, Tensor>>;

Tensor random(std::vector<int64_t> shape, torch::Generator& generator) {
  return torch::randn(shape, generator, torch::kFloat) * kWeightStd;
}

// Writes `tensors` as Hugging Face names them, in `shards` files (an index beside them
// when more than one), and config.json.
void write_checkpoint(const std::string& dir, const std::string& config, const Tensors& tensors,
                      int shards) {
  fs::create_directories(dir);
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

std::map<std::string, Tensor> as_map(const Tensors& tensors) {
  std::map<std::string, Tensor> map;
  for (const auto& [key, value] : tensors) map[key] = value.to(torch::kDouble);
  return map;
}

constexpr int64_t kGptHidden = 32;
constexpr int64_t kGptLayers = 2;
constexpr int64_t kGptHeads = 4;

// GPT2LMHeadModel's tensors (Conv1D weights [in, out]); the head tied to wte.
Tensors gpt2_tensors() {
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

const std::string kGpt2Config = fmt::format(
    R"({{"model_type": "gpt2", "_name_or_path": "tiny-hf-gpt2", "n_embd": {}, "n_layer": {},
        "n_head": {}, "n_positions": {}, "vocab_size": {}, "n_inner": null,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05,
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
        "torch_dtype": "float32"}})",
    kGptHidden, kGptLayers, kGptHeads, kSeq, kVocab);

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

constexpr int64_t kLlamaHidden = 32;
constexpr int64_t kLlamaLayers = 2;
constexpr int64_t kLlamaHeads = 4;
constexpr int64_t kLlamaKvHeads = 2;
constexpr int64_t kLlamaFfn = 48;

Tensors llama_tensors() {
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

const std::string kLlamaConfig = fmt::format(
    R"({{"model_type": "llama", "_name_or_path": "tiny-hf-llama", "hidden_size": {},
        "num_hidden_layers": {}, "num_attention_heads": {}, "num_key_value_heads": {},
        "intermediate_size": {}, "max_position_embeddings": {}, "vocab_size": {},
        "hidden_act": "silu", "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
        "rope_scaling": null, "attention_bias": false, "tie_word_embeddings": false,
        "torch_dtype": "float32"}})",
    kLlamaHidden, kLlamaLayers, kLlamaHeads, kLlamaKvHeads, kLlamaFfn, kSeq, kVocab);

// LlamaForCausalLM's forward pass, as transformers defines it (rotate_half rotary
// embedding, key/value heads repeated for their query heads): logits [b, s, vocab].
Tensor llama_logits(const std::map<std::string, Tensor>& w, const Tensor& ids) {
  const int64_t d = kLlamaHidden / kLlamaHeads;
  const auto rms = [&](const Tensor& x, const std::string& name) {
    return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-5) * w.at(name);
  };
  const int64_t s = ids.size(1);
  const auto inverse = torch::pow(10000.0, -torch::arange(0, d, 2, torch::kDouble) / d);
  const auto angles = torch::outer(torch::arange(s, torch::kDouble), inverse);
  const auto both = torch::cat({angles, angles}, -1);  // [s, d]
  const auto rotate = [&](const Tensor& x) {           // [b, heads, s, d]
    const auto halves = x.chunk(2, -1);
    return x * both.cos() + torch::cat({-halves[1], halves[0]}, -1) * both.sin();
  };
  const auto linear = [&](const Tensor& x, const std::string& name) {
    return x.matmul(w.at(name).t());
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
  fs::remove_all(dir);
  const Tensors tensors = c.llama ? llama_tensors() : gpt2_tensors();
  write_checkpoint(dir + "/hf", c.llama ? kLlamaConfig : kGpt2Config, tensors, c.llama ? 2 : 1);
  std::ofstream(dir + "/plan.json") << fmt::format(
      R"({{"format": "hyperpipe.plan/1", "model": "{}/hf", "cluster": "a100x8", {}}})", dir,
      c.plan_body);
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
        return c.llama ? llama_logits(weights, ids) : gpt2_logits(weights, ids);
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
  config.replace(config.find("10000.0"), 7, "500000.0");
  auto log = refusal(config, llama_tensors());
  EXPECT_NE(log.find("config.json: rope_theta: 10000 (all HyperPipe's runtime computes so far"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("got 500000.0"), std::string::npos) << log;

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
                              {"layers": [3, 4], "devices": [2]}])"}),
    hyperpipe::testing::NameOfCase());

}  // namespace
}  // namespace hyperpipe::runtime
