#include "hyperpipe/runtime/layers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/runtime/communicator.h"
#include "hyperpipe/runtime/stage_module.h"
#include "small_models.h"
#include "two_shards.h"

namespace hyperpipe::runtime {
namespace {

using testing::kGpt;
using testing::kLlama;
using testing::small_model;

using testing::kShards;
using testing::on_two_shards;

namespace F = torch::nn::functional;

int64_t parameter_count(torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& p : module.parameters()) count += p.numel();
  return count;
}

TEST(Layers, ParameterCountsMatchTheModelsFormulas) {
  for (const char* yaml : {kGpt, kLlama}) {
    for (const bool tied : {false, true}) {
      std::string text = yaml;
      if (tied) text.replace(text.find("tied_embeddings: false"), 22, "tied_embeddings: true");
      const auto model = small_model(text);
      for (const auto& layer : model.layers()) {
        const auto module = make_layer(layer, model.config(), 1);
        EXPECT_EQ(parameter_count(*module), layer.params()) << text << layer.name();
      }
    }
  }
}

TEST(Layers, EverySplitStartsFromTheSameWeights) {
  const auto model = small_model(kGpt);
  StageModule whole(model, 0, model.num_layers(), 42);
  StageModule middle(model, 2, 3, 42);
  const auto all = whole.named_parameters();
  for (const auto& p : middle.named_parameters()) {
    ASSERT_TRUE(all.contains(p.key())) << p.key();
    EXPECT_TRUE(torch::equal(all[p.key()], p.value())) << p.key();
  }
  StageModule other_seed(model, 2, 3, 43);
  EXPECT_FALSE(torch::equal(other_seed.named_parameters()["layer2.qkv"], all["layer2.qkv"]));
}

TEST(Layers, TiedHeadCopyStartsEqualToTheEmbedding) {
  std::string text = kGpt;
  text.replace(text.find("tied_embeddings: false"), 22, "tied_embeddings: true");
  const auto model = small_model(text);
  StageModule first(model, 0, 1, 5);
  StageModule last(model, model.num_layers() - 1, model.num_layers(), 5);
  ASSERT_TRUE(first.embedding_tokens().defined());
  ASSERT_TRUE(last.tied_head_tokens().defined());
  EXPECT_TRUE(torch::equal(first.embedding_tokens(), last.tied_head_tokens()));
}

TEST(Layers, GptBlockMatchesTorchMultiheadAttention) {
  // The block by torch's own nn::MultiheadAttention (which packs q, k, v the same way) and
  // functional LayerNorm/GELU, from the block's parameters.
  const auto model = small_model(kGpt);
  StageModule stage(model, 1, 2, 9);
  auto p = stage.named_parameters();
  // Non-trivial norms and biases, so a swapped parameter would show.
  torch::NoGradGuard no_grad;
  for (auto& item : p) item.value().add_(torch::randn_like(item.value()) * 0.1);
  const auto x = torch::randn({2, 16, 64});
  const int64_t s = 16;
  torch::nn::MultiheadAttention attention(torch::nn::MultiheadAttentionOptions(64, 4));
  attention->in_proj_weight.copy_(p["layer1.qkv"]);
  attention->in_proj_bias.copy_(p["layer1.qkv_bias"]);
  attention->out_proj->weight.copy_(p["layer1.out"]);
  attention->out_proj->bias.copy_(p["layer1.out_bias"]);
  const auto ln = [&](const torch::Tensor& in, const std::string& w, const std::string& b) {
    return F::layer_norm(
        in, F::LayerNormFuncOptions({64}).weight(p[w]).bias(p[b]).eps(model::kDefaultNormEps));
  };
  const auto normed = ln(x, "layer1.attention_norm", "layer1.attention_norm_bias").transpose(0, 1);
  // An additive mask: libtorch's C++ MultiheadAttention adds attn_mask to the scores.
  const auto mask = torch::full({s, s}, -std::numeric_limits<float>::infinity()).triu(1);
  const auto attended =
      std::get<0>(attention->forward(normed, normed, normed, {}, false, mask)).transpose(0, 1);
  const auto h = x + attended;
  const auto inner = F::gelu(F::linear(ln(h, "layer1.mlp_norm", "layer1.mlp_norm_bias"),
                                       p["layer1.up"], p["layer1.up_bias"]),
                             F::GELUFuncOptions().approximate("tanh"));
  const auto expected = h + F::linear(inner, p["layer1.down"], p["layer1.down_bias"]);
  EXPECT_TRUE(torch::allclose(stage.forward(x), expected, 1e-5, 1e-5));
}

TEST(Layers, LaterTokensNeverChangeEarlierLogits) {
  for (const char* yaml : {kGpt, kLlama}) {
    const auto model = small_model(yaml);
    StageModule whole(model, 0, model.num_layers(), 3);
    torch::NoGradGuard no_grad;
    auto ids = torch::randint(0, 97, {1, 16}, torch::kLong);
    const auto before = whole.forward(ids);
    EXPECT_EQ(before.sizes(), (std::vector<int64_t>{1, 16, 97}));
    ids.index_put_({0, 10}, (ids.index({0, 10}).item<int64_t>() + 1) % 97);
    const auto after = whole.forward(ids);
    EXPECT_TRUE(torch::equal(before.slice(1, 0, 10), after.slice(1, 0, 10))) << yaml;
    EXPECT_FALSE(torch::allclose(before.slice(1, 10), after.slice(1, 10))) << yaml;
  }
}

// Norms and biases set to constants per name (the same in a whole layer and its shards),
// so a bias added by every shard, or a norm left out, would show.
void set_norms_and_biases(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  double value = 0.1;
  for (auto& p : module.named_parameters()) {
    if (p.key().find("norm") != std::string::npos || p.key().find("bias") != std::string::npos) {
      p.value().fill_(value);
    }
    value += 0.1;
  }
}

std::string tied_gpt() {
  std::string tied = kGpt;
  tied.replace(tied.find("tied_embeddings: false"), 22, "tied_embeddings: true");
  return tied;
}

// Two tensor-parallel ranks, each building its shard of every layer with the partial
// sums all-reduced: the embedding and the blocks give the whole layer's output on both
// ranks, the head's two vocabulary slices of the logits put side by side give the whole
// logits.
TEST(Layers, TensorParallelShardsAddUpToTheWholeLayer) {
  for (const std::string& yaml : {std::string(kGpt), std::string(kLlama), tied_gpt()}) {
    const auto model = small_model(yaml);
    const auto ids = torch::randint(0, 97, {2, 16}, torch::kLong);
    const auto hidden = torch::randn({2, 16, 64});
    const auto input = [&](const model::Layer& layer) {
      return layer.kind() == model::LayerKind::embedding ? ids : hidden;
    };
    std::vector<torch::Tensor> whole;
    {
      torch::NoGradGuard no_grad;
      for (const auto& layer : model.layers()) {
        const auto module = make_layer(layer, model.config(), 7);
        set_norms_and_biases(*module);
        whole.push_back(module->forward(input(layer)));
      }
    }
    std::vector<torch::Tensor> sharded[kShards];
    on_two_shards([&](const TensorShard& shard) {
      torch::NoGradGuard no_grad;  // per thread
      for (const auto& layer : model.layers()) {
        const auto module = make_layer(layer, model.config(), 7, shard);
        set_norms_and_biases(*module);
        sharded[shard.rank].push_back(module->forward(input(layer)));
      }
    });
    for (const auto& layer : model.layers()) {
      const int l = layer.index();
      if (layer.kind() == model::LayerKind::head) {
        EXPECT_EQ(sharded[0][l].size(-1), 49);  // ⌈97 / 2⌉, the rest on rank 1
        EXPECT_TRUE(
            torch::allclose(torch::cat({sharded[0][l], sharded[1][l]}, -1), whole[l], 1e-5, 1e-5))
            << yaml << layer.name();
        continue;
      }
      for (int rank = 0; rank < kShards; ++rank) {
        EXPECT_TRUE(torch::allclose(sharded[rank][l], whole[l], 1e-5, 1e-5))
            << yaml << layer.name() << " rank " << rank;
      }
    }
  }
}

// Training through the shards is training the whole model: the vocabulary-parallel loss
// equals the whole cross-entropy on both ranks, the gradient of a stage's input is the
// whole one on both, a parameter every shard holds whole gets the whole gradient on each,
// and the slices of a split one get the slices of its gradient: their squares and their
// products with the (random) weights add up over the shards to the whole gradient's. A
// missing all-reduce in either direction (Megatron's f or g) breaks one of these.
TEST(Layers, TensorParallelShardsTrainAsTheWholeModel) {
  // Fixed inputs: with fresh random ones each run, the test failed once in a full ctest
  // run (2026-12-03) and passed on the rerun; fixed, a failure reproduces.
  torch::manual_seed(16);
  for (const std::string& yaml : {std::string(kGpt), std::string(kLlama), tied_gpt()}) {
    const auto model = small_model(yaml);
    const int layers = model.num_layers();
    const auto ids = torch::randint(0, 97, {2, 16}, torch::kLong);
    const auto targets = torch::randint(0, 97, {2, 16}, torch::kLong);
    const auto hidden = torch::randn({2, 16, 64});
    struct Run {
      double loss = 0;
      torch::Tensor input_grad;
      std::map<std::string, torch::Tensor> weights, grads;
      std::set<std::string> split;
    };
    // Two stages' worth: all layers from the token ids, and the blocks and head from a
    // hidden input (whose gradient a stage sends back).
    const auto run = [&](const TensorShard& shard) {
      Run result;
      for (const int first : {0, 1}) {
        StageModule stage(model, first, layers, 7, shard);
        set_norms_and_biases(stage);
        auto input = first == 0 ? ids : hidden.clone().requires_grad_(true);
        const auto loss = stage.loss_sum(stage.forward(input), targets);
        loss.backward();
        if (first == 0) {
          result.loss = loss.item<double>();
          for (const auto& p : stage.named_parameters()) {
            result.weights[p.key()] = p.value().detach();
            result.grads[p.key()] = p.value().grad();
            if (stage.split(p.key())) result.split.insert(p.key());
          }
        } else {
          result.input_grad = input.grad();
        }
      }
      return result;
    };
    const Run whole = run({});
    EXPECT_TRUE(whole.split.empty());
    Run shards[kShards];
    on_two_shards([&](const TensorShard& shard) { shards[shard.rank] = run(shard); });
    EXPECT_FALSE(shards[0].split.empty());
    for (const auto& [name, grad] : whole.grads) {
      if (shards[0].split.count(name)) {
        double squares = 0, products = 0;
        for (const auto& shard : shards) {
          squares += shard.grads.at(name).pow(2).sum().item<double>();
          products += (shard.grads.at(name) * shard.weights.at(name)).sum().item<double>();
        }
        EXPECT_NEAR(squares, grad.pow(2).sum().item<double>(),
                    1e-4 * grad.pow(2).sum().item<double>() + 1e-12)
            << yaml << name;
        EXPECT_NEAR(products, (grad * whole.weights.at(name)).sum().item<double>(),
                    1e-4 * grad.abs().sum().item<double>() + 1e-12)
            << yaml << name;
        continue;
      }
      for (const auto& shard : shards) {
        EXPECT_TRUE(torch::allclose(shard.grads.at(name), grad, 1e-4, 1e-6)) << yaml << name;
      }
    }
    for (const auto& shard : shards) {
      EXPECT_NEAR(shard.loss, whole.loss, 1e-4 * whole.loss) << yaml;
      EXPECT_TRUE(torch::allclose(shard.input_grad, whole.input_grad, 1e-4, 1e-6)) << yaml;
    }
  }
}

// Checkpoints hold whole tensors: the shards' slices join into the whole (fused query/key/
// value rows part by part, an odd vocabulary unevenly), and each shard's slice of the
// whole is what it holds.
TEST(Layers, ShardSlicesJoinIntoTheWhole) {
  const auto model = small_model(kLlama);  // 4 heads, 2 key/value heads: qkv rows 64+32+32
  const StageModule whole(model, 0, model.num_layers(), 3);
  std::map<std::string, torch::Tensor> joined[kShards];
  on_two_shards([&](const TensorShard& shard) {
    torch::NoGradGuard no_grad;
    const StageModule mine(model, 0, model.num_layers(), 3, shard);
    for (const auto& p : mine.named_parameters()) {
      const auto split = mine.split(p.key());
      if (!split) continue;
      joined[shard.rank][p.key()] = whole_of(p.value(), *split, shard);
      EXPECT_TRUE(torch::equal(shard_of(joined[shard.rank][p.key()], *split, shard), p.value()))
          << p.key();
    }
  });
  ASSERT_EQ(joined[0].size(), 1u + 5u * 2u + 1u);  // tokens, qkv out up gate down, lm_head
  EXPECT_EQ(joined[0]["layer1.qkv"].size(0), 128);
  EXPECT_EQ(joined[0]["layer3.lm_head"].size(0), 97);
  for (const auto& [name, tensor] : joined[0]) {
    for (const auto& rank : joined) {
      EXPECT_TRUE(torch::equal(rank.at(name), whole.named_parameters()[name])) << name;
    }
  }
}

TEST(Layers, ShardsMustSplitTheHeadsEvenly) {
  const auto model = small_model(kLlama);  // 4 heads, 2 key/value heads, ffn 96
  const auto& block = model.layers()[1];
  EXPECT_THROW(make_layer(block, model.config(), 1, {3, 0, {}, {}}), InputError);  // heads
  EXPECT_THROW(make_layer(block, model.config(), 1, {4, 0, {}, {}}), InputError);  // kv_heads
  EXPECT_NO_THROW(make_layer(block, model.config(), 1, {2, 1, {}, {}}));
  EXPECT_THROW(make_layer(block, model.config(), 1, {2, 2, {}, {}}), std::invalid_argument);
  // A shard holds half the attention and MLP weights and the whole norms.
  const auto half = make_layer(block, model.config(), 1, {2, 0, {}, {}});
  auto p = half->named_parameters();
  EXPECT_EQ(p["qkv"].sizes(), (std::vector<int64_t>{(64 + 2 * 32) / 2, 64}));
  EXPECT_EQ(p["out"].sizes(), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(p["down"].sizes(), (std::vector<int64_t>{64, 48}));
  EXPECT_EQ(p["mlp_norm"].numel(), 64);
}

TEST(Layers, RotaryScoresDependOnRelativePositionOnly) {
  // The same query and key vectors at every position: after rotation, the score of
  // position i against j depends on i − j alone, and at i = j equals the plain dot product.
  const auto q = torch::randn({8}, torch::kDouble);
  const auto k = torch::randn({8}, torch::kDouble);
  const auto rq = rotary(q.expand({1, 1, 12, 8}).contiguous(), model::kDefaultRopeTheta)[0][0];
  const auto rk = rotary(k.expand({1, 1, 12, 8}).contiguous(), model::kDefaultRopeTheta)[0][0];
  const auto score = [&](int i, int j) { return rq[i].dot(rk[j]).item<double>(); };
  EXPECT_NEAR(score(0, 0), q.dot(k).item<double>(), 1e-12);
  for (int i = 3; i < 11; ++i) {
    EXPECT_NEAR(score(i, i - 3), score(3, 0), 1e-12) << i;
    EXPECT_NEAR(score(i, i), score(0, 0), 1e-12) << i;
  }
  EXPECT_GT(std::abs(score(5, 2) - score(5, 4)), 1e-6);  // and it does depend on the offset
}

}  // namespace
}  // namespace hyperpipe::runtime
