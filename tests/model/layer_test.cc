#include "hyperpipe/model/layer.h"

#include <gtest/gtest.h>

#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/model/model.h"

namespace hyperpipe::model {
namespace {

Layer block_of(const std::string& name) {
  return Layer(LayerKind::decoder_block, 1, *find_catalogue_model(name));
}

// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
// Models"), eqs. 1-4, for 16-bit activations with dropout (GPT).
TEST(LayerActivations, MatchKorthikantiWithoutParallelism) {
  const auto config = *find_catalogue_model("gpt3-175b");
  const Layer block(LayerKind::decoder_block, 1, config);
  const double s = 2048, b = 1, h = config.hidden, a = config.heads;
  const Workload work{1, 2048, 1, false};
  EXPECT_DOUBLE_EQ(static_cast<double>(block.activation_bytes(work, Recompute::none)),
                   s * b * h * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(static_cast<double>(block.activation_bytes(work, Recompute::selective)),
                   s * b * h * 34);
  EXPECT_DOUBLE_EQ(static_cast<double>(block.activation_bytes(work, Recompute::full)),
                   2 * s * b * h);
}

TEST(LayerActivations, MatchKorthikantiWithTensorAndSequenceParallelism) {
  const auto config = *find_catalogue_model("gpt3-175b");
  const Layer block(LayerKind::decoder_block, 1, config);
  const double s = 2048, b = 2, h = config.hidden, a = config.heads, t = 8;
  const Workload tensor_only{2, 2048, 8, false};
  EXPECT_DOUBLE_EQ(static_cast<double>(block.activation_bytes(tensor_only, Recompute::none)),
                   s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
  const Workload with_sequence{2, 2048, 8, true};
  EXPECT_DOUBLE_EQ(static_cast<double>(block.activation_bytes(with_sequence, Recompute::none)),
                   s * b * h / t * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(static_cast<double>(block.activation_bytes(with_sequence, Recompute::selective)),
                   s * b * h * 34 / t);
}

TEST(LayerActivations, FlashAttentionDropsTheScoreMatrix) {
  auto config = *find_catalogue_model("gpt3-2.7b");
  const Workload work{1, 2048, 1, false};
  const int64_t plain =
      Layer(LayerKind::decoder_block, 1, config).activation_bytes(work, Recompute::none);
  config.flash_attention = true;
  const int64_t fused =
      Layer(LayerKind::decoder_block, 1, config).activation_bytes(work, Recompute::none);
  const int64_t s = 2048, a = config.heads;
  EXPECT_EQ(plain - fused, s * (5 * a * s) - s * 4 * a);  // scores out, log-sum-exp in
}

// torchtitan's per-op policy on a LLaMA block (wq, wk, wv, wo, w1, w3, w2 in forward order):
// the block's input, the 1st, 3rd, 5th and 7th products' outputs (wq, wv, w1, w2), and the
// fused attention's output and fp32 log-sum-exp per head.
TEST(LayerActivations, TorchtitansPerOpPolicyKeepsEveryOtherProduct) {
  auto config = *find_catalogue_model("llama3-8b");
  config.flash_attention = true;
  const Layer block(LayerKind::decoder_block, 1, config);
  const double tokens = 2.0 * 8192, h = 4096, kv = 1024, f = 14336, a = 32, e = 2;
  const Workload work{2, 8192, 1, false};
  const auto rule = SelectiveRule::alternate_products;
  EXPECT_DOUBLE_EQ(static_cast<double>(block.activation_bytes(work, Recompute::selective, rule)),
                   tokens * (e * (h + h + kv + f + h + h) + 4 * a));
  // What it reruns: the other products, wk, wo and w3; the attention is kept.
  EXPECT_DOUBLE_EQ(block.recompute_flops(work, Recompute::selective, rule),
                   2 * tokens * (h * kv + h * h + h * f));
  // Biased products are aten.addmm, which the policy neither keeps nor counts: with
  // biases on q, k and v the count starts at wo, so wo and w3 are kept.
  config.qkv_bias = true;
  const Layer biased(LayerKind::decoder_block, 1, config);
  EXPECT_DOUBLE_EQ(static_cast<double>(biased.activation_bytes(work, Recompute::selective, rule)),
                   tokens * (e * (h + h + f + h) + 4 * a));
  // Without a fused kernel the attention is rerun and nothing of it kept.
  config.qkv_bias = false;
  config.flash_attention = false;
  const Layer unfused(LayerKind::decoder_block, 1, config);
  EXPECT_DOUBLE_EQ(static_cast<double>(unfused.activation_bytes(work, Recompute::selective, rule)),
                   tokens * e * (h + h + kv + f + h));
  // Full and none do not depend on the rule.
  EXPECT_EQ(block.activation_bytes(work, Recompute::full, rule),
            block.activation_bytes(work, Recompute::full));
  EXPECT_EQ(block.activation_bytes(work, Recompute::none, rule),
            block.activation_bytes(work, Recompute::none));
}

TEST(LayerActivations, WeightGradientKeepsTheProductInputs) {
  // GPT block in fp16: inputs of QKV (h), output projection (h), fc1 (h) and fc2 (4h),
  // 2 bytes each: 14·s·b·h of the 34·s·b·h + scores the block keeps.
  const auto config = *find_catalogue_model("gpt3-2.7b");
  const Layer block(LayerKind::decoder_block, 1, config);
  const int64_t s = 2048, b = 2, h = config.hidden;
  EXPECT_EQ(block.weight_gradient_bytes({b, s, 1, false}), 14 * s * b * h);
  // Tensor parallelism splits the split inputs; sequence parallelism the rest too.
  EXPECT_EQ(block.weight_gradient_bytes({b, s, 4, false}), s * b * 2 * (2 * h + 5 * h / 4));
  EXPECT_EQ(block.weight_gradient_bytes({b, s, 4, true}), 14 * s * b * h / 4);
}

TEST(LayerFlops, BlockMatchesNarayananPerLayerForward) {
  // SC'21 eq. (3): a GPT layer's forward is 24·B·s·h²·(1 + s/(6h)) FLOPs.
  const auto config = *find_catalogue_model("gpt3-13b");
  const Layer block(LayerKind::decoder_block, 1, config);
  const double B = 4, s = 2048, h = config.hidden;
  const LayerFlops f = block.flops({4, 2048, 1, false});
  EXPECT_NEAR(f.forward / (24 * B * s * h * h * (1 + s / (6 * h))), 1.0, 1e-12);
  EXPECT_NEAR(f.backward() / (2 * f.forward), 1.0, 1e-12);
  // The weight gradient is the weight products once more: 24·B·s·h² without attention.
  EXPECT_NEAR(f.backward_weight / (24 * B * s * h * h), 1.0, 1e-12);
}

TEST(LayerFlops, TensorParallelismDividesWork) {
  const Layer block = block_of("llama2-7b");
  const LayerFlops one = block.flops({2, 4096, 1, true});
  const LayerFlops four = block.flops({2, 4096, 4, true});
  EXPECT_DOUBLE_EQ(one.forward, 4 * four.forward);
  EXPECT_DOUBLE_EQ(one.backward_weight, 4 * four.backward_weight);
}

TEST(LayerFlops, RecomputationRerunsTheRightPart) {
  const Layer block = block_of("gpt3-2.7b");
  const Workload work{1, 2048, 1, false};
  const LayerFlops f = block.flops(work);
  EXPECT_EQ(block.recompute_flops(work, Recompute::none), 0);
  EXPECT_DOUBLE_EQ(block.recompute_flops(work, Recompute::full), f.forward);
  // Selective reruns the attention core: 4·b·s²·h.
  const double s = 2048, h = 2560;
  EXPECT_DOUBLE_EQ(block.recompute_flops(work, Recompute::selective), 4 * s * s * h);
  const Layer head(LayerKind::head, 33, *find_catalogue_model("gpt3-2.7b"));
  EXPECT_EQ(head.recompute_flops(work, Recompute::full), 0);
}

TEST(LayerParams, GroupedQueryAttentionShrinksKeyAndValue) {
  const Layer block = block_of("llama3-8b");  // 32 heads, 8 key/value heads
  const int64_t h = 4096, kv = 1024, f = 14336;
  EXPECT_EQ(block.params(), h * (h + 2 * kv) + h * h + 3 * h * f + 2 * h);
}

TEST(LayerParams, TiedHeadKeepsACopyButCountsOnce) {
  const auto config = *find_catalogue_model("gpt2");
  const Layer head(LayerKind::head, 13, config);
  EXPECT_EQ(head.unique_params(), 2 * 768);  // the final LayerNorm only
  EXPECT_EQ(head.params(), 2 * 768 + 50257 * 768);
}

TEST(LayerOutput, BytesCrossingACut) {
  const auto config = *find_catalogue_model("gpt3-2.7b");  // fp16
  const Layer block(LayerKind::decoder_block, 1, config);
  EXPECT_EQ(block.output_bytes({4, 2048, 1, true}), 4 * 2048 * 2560 * 2);
  EXPECT_EQ(block.output_bytes({4, 2048, 2, true}), 4 * 2048 * 2560 * 2 / 2);
}

}  // namespace
}  // namespace hyperpipe::model
