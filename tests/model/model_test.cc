#include "hyperpipe/model/model.h"

#include <gtest/gtest.h>

#include "hyperpipe/model/catalogue.h"

namespace hyperpipe::model {
namespace {

// Narayanan et al., SC'21, §5.1: FLOPs per iteration of a GPT model with batch B,
// sequence s, l layers, hidden h, vocabulary V.
double narayanan_full_recompute(double B, double s, double l, double h, double V) {
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}
double narayanan_no_recompute(double B, double s, double l, double h, double V) {
  return 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V;
}

class IterationFlops : public ::testing::TestWithParam<std::string> {};

TEST_P(IterationFlops, MatchNarayananFormulas) {
  const Model model(*find_catalogue_model(GetParam()));
  const auto& c = model.config();
  const double B = 512, s = static_cast<double>(c.seq_len), l = static_cast<double>(c.layers),
               h = static_cast<double>(c.hidden), V = static_cast<double>(c.vocab);
  EXPECT_NEAR(model.iteration_flops(512, c.seq_len, Recompute::full) /
                  narayanan_full_recompute(B, s, l, h, V),
              1.0, 1e-12);
  EXPECT_NEAR(model.iteration_flops(512, c.seq_len, Recompute::none) /
                  narayanan_no_recompute(B, s, l, h, V),
              1.0, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Gpt, IterationFlops,
                         ::testing::Values("gpt3-1.3b", "gpt3-13b", "gpt3-175b", "gpt2-1.5b"));

// A plan's or a run's precision in place of the file's: the same chain, each layer's
// weights in the new type's bytes, nothing else changed.
TEST(Model, InAnotherDtypeOnlyTheBytesPerElementChange) {
  const Model bf16(*find_catalogue_model("llama2-7b"));
  ASSERT_EQ(bf16.config().dtype, DType::bf16);
  const Model fp32 = bf16.in_dtype(DType::fp32);
  EXPECT_EQ(fp32.config().dtype, DType::fp32);
  ASSERT_EQ(fp32.num_layers(), bf16.num_layers());
  for (int l = 0; l < bf16.num_layers(); ++l) {
    EXPECT_EQ(fp32.layers()[l].params(), bf16.layers()[l].params()) << l;
  }
  EXPECT_EQ(fp32.config().name, bf16.config().name);
  EXPECT_EQ(bf16.in_dtype(DType::bf16).config().dtype, DType::bf16);
}

// A run or a setting of sequence length 0 takes the model's; any other is its own.
TEST(Model, ASequenceLengthOfZeroIsTheModels) {
  const TransformerConfig config = *find_catalogue_model("gpt3-2.7b");
  EXPECT_EQ(config.sequence_length(0), config.seq_len);
  EXPECT_EQ(config.sequence_length(512), 512);
  EXPECT_NE(config.seq_len, 512);
}

TEST(Model, ChainIsEmbeddingBlocksHead) {
  const Model model(*find_catalogue_model("llama2-7b"));
  ASSERT_EQ(model.num_layers(), 34);
  EXPECT_EQ(model.layers().front().kind(), LayerKind::embedding);
  EXPECT_EQ(model.layers()[1].kind(), LayerKind::decoder_block);
  EXPECT_EQ(model.layers()[32].kind(), LayerKind::decoder_block);
  EXPECT_EQ(model.layers().back().kind(), LayerKind::head);
  EXPECT_EQ(model.layers()[5].name(), "block 4");
}

TEST(Model, SelectiveRecomputationCostsLessThanFull) {
  const Model model(*find_catalogue_model("gpt3-2.7b"));
  const double none = model.iteration_flops(8, 2048, Recompute::none);
  const double selective = model.iteration_flops(8, 2048, Recompute::selective);
  const double full = model.iteration_flops(8, 2048, Recompute::full);
  EXPECT_LT(none, selective);
  EXPECT_LT(selective, full);
}

// The precision policy: 16-bit weights train with fp32 masters; a run in fp64 is costed as
// fp32; a name that is no dtype is none.
TEST(DtypePolicy, SixteenBitTypesKeepMastersAndFp64IsCostedAsFp32) {
  EXPECT_TRUE(keeps_fp32_masters(DType::fp16));
  EXPECT_TRUE(keeps_fp32_masters(DType::bf16));
  EXPECT_FALSE(keeps_fp32_masters(DType::fp32));
  EXPECT_EQ(costed_dtype("fp64"), DType::fp32);
  EXPECT_EQ(costed_dtype("bf16"), DType::bf16);
  EXPECT_EQ(costed_dtype("float16"), DType::fp16);
  EXPECT_FALSE(costed_dtype("int3"));
}

}  // namespace
}  // namespace hyperpipe::model
