#include "hyperpipe/model/layer_ops.h"

#include <gtest/gtest.h>

#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/model/model.h"

namespace hyperpipe::model {
namespace {

struct PassSums {
  double forward = 0, backward_input = 0, backward_weight = 0;
};

PassSums product_flops(const std::vector<LayerOp>& ops) {
  PassSums sums;
  for (const auto& op : ops) {
    double& into = op.pass == Pass::forward          ? sums.forward
                   : op.pass == Pass::backward_input ? sums.backward_input
                                                     : sums.backward_weight;
    into += op.flops;
  }
  return sums;
}

// The ops of every layer kind sum, pass by pass, to the FLOPs Layer counts with its own
// closed forms (Narayanan et al.'s), for both flavours, flash or not, and tp 1 and 2.
TEST(LayerOps, ProductsSumToTheLayersFlops) {
  for (const char* name : {"gpt3-1.3b", "llama3-8b", "opt-350m"}) {
    for (const bool flash : {false, true}) {
      auto config = *find_catalogue_model(name);
      config.flash_attention = flash;
      config.vocab = 50304;  // divisible by the tp degrees, as Megatron pads it
      const Model model(config);
      for (const int64_t tp : {1, 2}) {
        const Workload work{2, 512, tp, false};
        for (const auto& layer : model.layers()) {
          const PassSums sums = product_flops(layer_ops(layer, work));
          const LayerFlops expected = layer.flops(work);
          const std::string where = std::string(name) + " " + layer.name() +
                                    (flash ? " flash" : "") + " tp " + std::to_string(tp);
          EXPECT_NEAR(sums.forward, expected.forward, 1e-9 * expected.forward + 1) << where;
          EXPECT_NEAR(sums.backward_input, expected.backward_input,
                      1e-9 * expected.backward_input + 1)
              << where;
          EXPECT_NEAR(sums.backward_weight, expected.backward_weight,
                      1e-9 * expected.backward_weight + 1)
              << where;
        }
      }
    }
  }
}

// A GPT block's products after the tp split: Megatron's column-parallel qkv and mlp up,
// row-parallel attention out and mlp down.
TEST(LayerOps, ShapesAfterTheTensorParallelSplit) {
  const Model model(*find_catalogue_model("gpt3-2.7b"));  // hidden 2560, 32 heads
  const auto ops = layer_ops(model.layers()[1], Workload{4, 2048, 4, false});
  const auto find = [&](const std::string& name) {
    for (const auto& op : ops) {
      if (op.name == name) return op;
    }
    ADD_FAILURE() << "no op " << name;
    return LayerOp{};
  };
  const LayerOp qkv = find("qkv");
  EXPECT_EQ(qkv.m, 4 * 2048);
  EXPECT_EQ(qkv.n, 3 * 2560 / 4);
  EXPECT_EQ(qkv.k, 2560);
  const LayerOp out_wgrad = find("attention out wgrad");
  EXPECT_EQ(out_wgrad.pass, Pass::backward_weight);
  EXPECT_EQ(out_wgrad.m, 2560 / 4);
  EXPECT_EQ(out_wgrad.n, 2560);
  EXPECT_EQ(out_wgrad.k, 4 * 2048);  // the tokens are the reduced dimension
  const LayerOp scores = find("attention scores");
  EXPECT_EQ(scores.batch, 4 * 32 / 4);
  EXPECT_EQ(scores.m, 2048);
  EXPECT_EQ(scores.n, 2048);
  EXPECT_EQ(scores.k, 80);
  // The fused scale-mask-softmax reads and writes every score once in fp16.
  EXPECT_DOUBLE_EQ(find("softmax").bytes, 2.0 * 4 * 8 * 2048.0 * 2048 * 2);
}

// Megatron fuses scale, mask and softmax only for 16-bit scores of up to 4096 keys; fp32
// scores and longer sequences take three PyTorch kernels, each reading and writing them.
TEST(LayerOps, SoftmaxFusesOnlyWhereMegatronsKernelApplies) {
  const auto softmax_of = [](model::DType dtype, int64_t seq) {
    auto config = *find_catalogue_model("gpt3-1.3b");  // 16 heads
    config.dtype = dtype;
    config.seq_len = seq;
    const Model model(config);
    for (const auto& op : layer_ops(model.layers()[1], Workload{1, seq, 1, false})) {
      if (op.name == "softmax") return op;
    }
    return LayerOp{};
  };
  const double scores = 16.0 * 2048 * 2048;
  EXPECT_EQ(softmax_of(DType::fp16, 2048).kernels, 1);
  EXPECT_DOUBLE_EQ(softmax_of(DType::fp16, 2048).bytes, 2 * scores * 2);
  EXPECT_EQ(softmax_of(DType::fp32, 2048).kernels, 3);
  EXPECT_DOUBLE_EQ(softmax_of(DType::fp32, 2048).bytes, 3 * 2 * scores * 4);
  EXPECT_EQ(softmax_of(DType::bf16, 8192).kernels, 3);
}

TEST(LayerOps, FusedAttentionKeepsNoScoreOps) {
  auto config = *find_catalogue_model("llama3-8b");
  config.flash_attention = true;
  const Model model(config);
  int fused = 0;
  for (const auto& op : layer_ops(model.layers()[1], Workload{1, 8192, 1, false})) {
    EXPECT_NE(op.name, "softmax");
    if (op.kind == OpKind::fused_attention) {
      ++fused;
      EXPECT_TRUE(op.causal);
    }
  }
  EXPECT_EQ(fused, 2);  // forward and its backward
}

TEST(LayerOps, EmbeddingHasNoInputGradient) {
  const Model model(*find_catalogue_model("gpt3-1.3b"));
  for (const auto& op : layer_ops(model.layers()[0], Workload{1, 2048, 1, false})) {
    EXPECT_NE(op.pass, Pass::backward_input) << op.name;
  }
}

}  // namespace
}  // namespace hyperpipe::model
