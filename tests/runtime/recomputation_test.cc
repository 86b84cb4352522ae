#include "hyperpipe/runtime/recomputation.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/runtime/deferred_weight_grads.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/memory_in_use.h"
#include "hyperpipe/runtime/stage_module.h"
#include "small_models.h"
#include "two_shards.h"

namespace hyperpipe::runtime {
namespace {

using testing::kGpt;
using testing::kLlama;
using testing::small_model;

using model::Recompute;

struct Trained {
  std::vector<double> losses;
  torch::Tensor input_grad;  // of the stage that starts from hidden states
  std::map<std::string, torch::Tensor> grads;
};

// Two stages' worth (all layers from token ids; the blocks and head from hidden states),
// dropout drawn where the model has it (the GPT),
// two micro-batches each, gradients accumulated; with `deferred`, the linear layers'
// weight gradients kept for W and applied after each backward (zero-bubble's B and W).
Trained train(const model::Model& model, Recompute recompute, bool deferred,
              const TensorShard& shard = {}) {
  // A generator of its own: the shards run on two threads, and must draw the same inputs.
  auto generator = at::detail::createCPUGenerator(5);
  const auto ids = torch::randint(0, 97, {2, 2, 16}, generator, torch::kLong);
  const auto targets = torch::randint(0, 97, {2, 2, 16}, generator, torch::kLong);
  const auto hidden = torch::randn({2, 2, 16, 64}, generator);
  Trained result;
  for (const int first : {0, 1}) {
    StageModule stage(model, first, model.num_layers(), 11, shard, recompute);
    torch::Tensor input_grad;
    for (int micro_batch = 0; micro_batch < 2; ++micro_batch) {
      auto input = first == 0 ? ids[micro_batch] : hidden[micro_batch].clone().requires_grad_(true);
      auto store = deferred ? std::make_shared<WeightGradStore>() : nullptr;
      torch::Tensor loss;
      {
        const DeferWeightGradients defer(store);
        // The GPT has dropout: a rerun must draw the masks the first run drew.
        const DropoutScope dropout_scope(DropoutPlace{5, 0, 2 * micro_batch});
        loss = stage.loss_sum(stage.forward(input), targets[micro_batch]);
      }
      loss.backward();
      if (store) {
        EXPECT_FALSE(store->empty());
        store->apply();
      }
      result.losses.push_back(loss.item<double>());
      if (first == 1) {
        input_grad = input_grad.defined() ? torch::cat({input_grad, input.grad()}) : input.grad();
      }
    }
    if (first == 1) result.input_grad = input_grad;
    for (const auto& p : stage.named_parameters()) {
      result.grads[std::to_string(first) + "/" + p.key()] = p.value().grad();
    }
  }
  return result;
}

// The rerun computes the same floats in the same order: not a bit may change.
void expect_identical(const Trained& recomputed_run, const Trained& kept, const std::string& what) {
  EXPECT_EQ(recomputed_run.losses, kept.losses) << what;
  EXPECT_TRUE(torch::equal(recomputed_run.input_grad, kept.input_grad)) << what;
  ASSERT_EQ(recomputed_run.grads.size(), kept.grads.size()) << what;
  for (const auto& [name, grad] : kept.grads) {
    ASSERT_TRUE(grad.defined()) << what << " " << name;
    ASSERT_TRUE(recomputed_run.grads.at(name).defined()) << what << " " << name;
    EXPECT_TRUE(torch::equal(recomputed_run.grads.at(name), grad)) << what << " " << name;
  }
}

TEST(Recomputation, SelectiveAndFullChangeNoBitOfTheGradients) {
  for (const char* yaml : {kGpt, kLlama}) {
    const auto model = small_model(yaml);
    for (const bool deferred : {false, true}) {
      const Trained kept = train(model, Recompute::none, deferred);
      for (const Recompute mode : {Recompute::selective, Recompute::full}) {
        expect_identical(train(model, mode, deferred), kept,
                         model.config().name + " " + std::string(model::to_string(mode)) +
                             (deferred ? " B/W apart" : ""));
      }
    }
  }
}

// Under tensor parallelism the rerun sums over the shards again, in the same order on both:
// full recomputation with B and W apart, selective with a whole backward.
TEST(Recomputation, TensorParallelShardsRecomputeAsTheyRan) {
  const auto model = small_model(kLlama);
  Trained kept_deferred[testing::kShards], full[testing::kShards];
  Trained kept_whole[testing::kShards], selective[testing::kShards];
  testing::on_two_shards([&](const TensorShard& shard) {
    kept_deferred[shard.rank] = train(model, Recompute::none, true, shard);
    full[shard.rank] = train(model, Recompute::full, true, shard);
    kept_whole[shard.rank] = train(model, Recompute::none, false, shard);
    selective[shard.rank] = train(model, Recompute::selective, false, shard);
  });
  for (int rank = 0; rank < testing::kShards; ++rank) {
    const std::string shard = ", rank " + std::to_string(rank);
    expect_identical(full[rank], kept_deferred[rank], "full" + shard);
    expect_identical(selective[rank], kept_whole[rank], "selective" + shard);
  }
}

// The piece runs once forward and once more in the backward, and what it made inside is
// freed after the forward: only its inputs are kept.
TEST(Recomputation, KeepsOnlyTheInputsAndRerunsOnce) {
  int calls = 0;
  using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  std::optional<WeakTensor> inside;
  const auto piece = [&](const std::vector<torch::Tensor>& in) {
    ++calls;
    const auto middle = in[0].sin();  // kept by the product below when autograd records
    inside.emplace(middle.getIntrusivePtr());
    return middle * middle * in[1];
  };
  const auto x = torch::randn({8}).requires_grad_(true);
  const auto w = torch::randn({8}).requires_grad_(true);

  auto plain = piece({x, w});
  EXPECT_FALSE(inside->expired()) << "autograd keeps the intermediate";
  plain.sum().backward();
  const auto x_grad = x.grad().clone();
  const auto w_grad = w.grad().clone();
  x.mutable_grad() = torch::Tensor();
  w.mutable_grad() = torch::Tensor();

  calls = 0;
  auto output = recomputed(piece, {x, w});
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(inside->expired()) << "the intermediate outlived the forward";
  EXPECT_TRUE(torch::equal(output, plain));
  output.sum().backward();
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(torch::equal(x.grad(), x_grad));
  EXPECT_TRUE(torch::equal(w.grad(), w_grad));
}

// Nothing to differentiate: the piece runs once and nothing is recorded.
TEST(Recomputation, WithoutGradientsItIsThePieceItself) {
  int calls = 0;
  const auto piece = [&](const std::vector<torch::Tensor>& in) {
    ++calls;
    return in[0] * 2;
  };
  const auto x = torch::randn({4});
  const auto y = recomputed(piece, {x});
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(y.requires_grad());
  {
    const torch::NoGradGuard no_grad;
    const auto z = recomputed(piece, {x.clone().requires_grad_(true)});
    EXPECT_FALSE(z.requires_grad());
  }
  EXPECT_EQ(calls, 2);
}

// What a block keeps from its forward to its backward, as the allocator counts it, against
// what the cost model counts for each mode: recomputation must save what the planner
// expects it to.
// The allocator's own overhead per block (chunk headers, the causal mask) is well under
// 1% at these sizes; the issue asks for 10%.
constexpr double kActivationTolerance = 0.05;

TEST(Recomputation, KeepsWhatTheCostModelCounts) {
  const char* kMeasured[] = {
      "name: measured-gpt\nflavour: gpt\nhidden: 256\nlayers: 4\nheads: 8\nvocab: 97\n"
      "seq_len: 128\ndtype: fp32\ntied_embeddings: false\ndropout: false\n",
      "name: measured-llama\nflavour: llama\nhidden: 256\nlayers: 4\nheads: 8\nkv_heads: 4\n"
      "ffn_hidden: 704\nvocab: 97\nseq_len: 128\ndtype: fp32\ntied_embeddings: false\n",
      // Dropout's masks (a byte per element) and the attention's dropped-out copy.
      "name: measured-dropout\nflavour: gpt\nhidden: 256\nlayers: 4\nheads: 8\nvocab: 97\n"
      "seq_len: 128\ndtype: fp32\ntied_embeddings: false\ndropout: true\n"};
  constexpr int64_t kMicroBatch = 4;
  // The first forward allocates buffers libtorch keeps for good (about 5 MB with PyTorch
  // 2.15's wheel, counted against the first model measured), which are no activations: a
  // forward and backward before anything is measured.
  {
    const auto model = small_model(kMeasured[0]);
    StageModule stage(model, 1, 1 + model.config().layers, 3);
    stage
        .forward(torch::randn({kMicroBatch, model.config().seq_len, model.config().hidden})
                     .requires_grad_(true))
        .sum()
        .backward();
  }
  for (const char* yaml : kMeasured) {
    const auto model = small_model(yaml);
    const int blocks = model.config().layers;
    for (const Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
      StageModule stage(model, 1, 1 + blocks, 3, {}, mode);
      const auto input = torch::randn({kMicroBatch, model.config().seq_len, model.config().hidden})
                             .requires_grad_(true);
      const DropoutScope dropout_scope(DropoutPlace{});
      const auto before = bytes_in_use(torch::kCPU);
      auto output = stage.forward(input);
      const auto after = bytes_in_use(torch::kCPU);
      ASSERT_TRUE(before && after);
      const double measured = (*after - *before) / blocks;
      const double predicted = static_cast<double>(model.layers()[1].activation_bytes(
          {kMicroBatch, model.config().seq_len, 1, false}, mode));
      EXPECT_NEAR(measured, predicted, kActivationTolerance * predicted)
          << model.config().name << " " << model::to_string(mode);
    }
  }
}

}  // namespace
}  // namespace hyperpipe::runtime
