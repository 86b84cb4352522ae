#include "hyperpipe/runtime/deferred_weight_grads.h"

#include <gtest/gtest.h>

#include "hyperpipe/runtime/stage_module.h"
#include "small_models.h"

namespace hyperpipe::runtime {
namespace {

using testing::small_model;

// Both flavours: GPT's linear layers have biases, LLaMA's do not.
const char* kModels[] = {
    "name: small-gpt\nflavour: gpt\nhidden: 32\nlayers: 2\nheads: 4\nvocab: 53\nseq_len: 8\n"
    "tied_embeddings: true\n",
    "name: small-llama\nflavour: llama\nhidden: 32\nlayers: 2\nheads: 4\nkv_heads: 2\n"
    "ffn_hidden: 48\nvocab: 53\nseq_len: 8\ntied_embeddings: false\n"};

std::vector<torch::Tensor> gradients(StageModule& stage) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : stage.parameters()) {
    grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  return grads;
}

// The whole model as one stage, in fp64, on a fixed batch: the loss's gradients with
// every weight gradient deferred to W equal autograd's in one pass.
TEST(DeferredWeightGrads, BThenWGivesAutogradsGradients) {
  for (const char* yaml : kModels) {
    const auto model = small_model(yaml);
    StageModule stage(model, 0, model.num_layers(), 3);
    stage.to(torch::kDouble);
    const auto tokens = torch::randint(0, 53, {2, 8}, torch::kLong);
    const auto targets = torch::randint(0, 53, {2, 8}, torch::kLong);

    cross_entropy_sum(stage.forward(tokens), targets).backward();
    const auto reference = gradients(stage);
    stage.zero_grad();

    const auto store = std::make_shared<WeightGradStore>();
    torch::Tensor loss;
    {
      const DeferWeightGradients defer(store);
      loss = cross_entropy_sum(stage.forward(tokens), targets);
    }
    loss.backward();  // B
    ASSERT_FALSE(store->empty());
    // B left the linear layers' weights without gradients: they are W's work.
    const auto after_b = gradients(stage);
    int untouched = 0;
    for (size_t i = 0; i < after_b.size(); ++i) {
      if (after_b[i].abs().max().item<double>() == 0) ++untouched;
    }
    EXPECT_GT(untouched, 0);
    store->apply();  // W
    EXPECT_TRUE(store->empty());
    const auto split = gradients(stage);
    ASSERT_EQ(split.size(), reference.size());
    for (size_t i = 0; i < split.size(); ++i) {
      EXPECT_TRUE(torch::allclose(split[i], reference[i], 1e-10, 1e-12)) << yaml << " #" << i;
    }
  }
}

// W adds to gradients already there, as autograd accumulates micro-batches.
TEST(DeferredWeightGrads, WAccumulatesIntoExistingGradients) {
  auto weight = torch::randn({3, 4}, torch::kDouble).requires_grad_(true);
  auto bias = torch::randn({3}, torch::kDouble).requires_grad_(true);
  const auto x = torch::randn({5, 4}, torch::kDouble).requires_grad_(true);
  runtime::linear(x, weight, bias).sum().backward();
  const auto once_w = weight.grad().clone();
  const auto once_b = bias.grad().clone();
  const auto store = std::make_shared<WeightGradStore>();
  {
    const DeferWeightGradients defer(store);
    runtime::linear(x, weight, bias).sum().backward();
  }
  EXPECT_TRUE(torch::equal(weight.grad(), once_w));  // nothing yet
  store->apply();
  EXPECT_TRUE(torch::allclose(weight.grad(), 2 * once_w));
  EXPECT_TRUE(torch::allclose(bias.grad(), 2 * once_b));
  // Closed form: ∂Σ(x·wᵀ + b)/∂w = 1ᵀx per row, ∂/∂b = rows.
  EXPECT_TRUE(torch::allclose(once_w, x.sum(0).expand({3, 4})));
  EXPECT_TRUE(torch::allclose(once_b, torch::full({3}, 5.0, torch::kDouble)));
}

// Outside a scope (or when the scope has ended) linear is autograd's.
TEST(DeferredWeightGrads, OutsideAScopeNothingIsDeferred) {
  const auto store = std::make_shared<WeightGradStore>();
  { const DeferWeightGradients defer(store); }
  auto weight = torch::randn({2, 2}).requires_grad_(true);
  runtime::linear(torch::randn({1, 2}).requires_grad_(true), weight).sum().backward();
  EXPECT_TRUE(store->empty());
  EXPECT_TRUE(weight.grad().defined());
}

}  // namespace
}  // namespace hyperpipe::runtime
