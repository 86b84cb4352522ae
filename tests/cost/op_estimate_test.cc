#include "hyperpipe/cost/op_estimate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/cost/cost_options.h"
#include "hyperpipe/model/catalogue.h"

namespace hyperpipe::cost {
namespace {

constexpr double kMemoryEfficiency = kDefaultMemoryEfficiency;

model::LayerOp product(int64_t batch, int64_t m, int64_t n, int64_t k) {
  model::LayerOp op{"p", model::Pass::forward, model::OpKind::product, batch, m, n, k};
  op.flops = 2.0 * batch * m * n * k;
  op.bytes = 0;  // compute bound by construction
  return op;
}

model::TransformerConfig config_in(model::DType dtype, bool tf32 = false) {
  auto config = *model::find_catalogue_model("gpt3-2.7b");
  config.dtype = dtype;
  config.tf32 = tf32;
  return config;
}

// One wave of 128×128 tiles over A100's 108 multiprocessors: the whole grid at the
// generation's share of the fp16 peak.
TEST(OpEstimate, AProductFillingOneWaveRunsAtTheGenerationsShare) {
  const auto a100 = *cluster::find_gpu_type("A100-40GB");
  const auto op = product(1, 12 * kProductTile, 9 * kProductTile, 4096);  // 108 tiles
  const OpTime time = op_time(op, a100, config_in(model::DType::fp16), kMemoryEfficiency);
  const double share = product_efficiency(Generation::ampere_ada, ProductPath::tensor16);
  EXPECT_NEAR(time.seconds, op.flops / (312e12 * share), 1e-15);
  EXPECT_EQ(time.bound, OpBound::compute);
  EXPECT_DOUBLE_EQ(time.efficiency, share);
}

// One tile more than the multiprocessors costs a second whole wave (NVIDIA's guide, §3.2),
// and a partial tile a whole one (§3.1).
TEST(OpEstimate, WaveAndTileQuantization) {
  const auto a100 = *cluster::find_gpu_type("A100-40GB");
  const auto config = config_in(model::DType::bf16);
  const auto full = product(108, kProductTile, kProductTile, 1024);
  const auto one_more = product(109, kProductTile, kProductTile, 1024);
  const auto ragged = product(108, kProductTile - 8, kProductTile + 1, 1024);
  const double wave = op_time(full, a100, config, kMemoryEfficiency).seconds;
  EXPECT_NEAR(op_time(one_more, a100, config, kMemoryEfficiency).seconds, 2 * wave, 1e-15);
  // 108 × 2 tiles: two waves.
  EXPECT_NEAR(op_time(ragged, a100, config, kMemoryEfficiency).seconds, 2 * wave, 1e-15);
}

TEST(OpEstimate, Tf32AndTheCatalogueOverride) {
  auto a100 = *cluster::find_gpu_type("A100-80GB");
  const auto op = product(1, 8192, 8192, 8192);  // 64 × 64 tiles: 38 waves, 4104 slots
  const double quantized = 38.0 * 108 * 2 * kProductTile * kProductTile * 8192;
  const double fp32 =
      op_time(op, a100, config_in(model::DType::fp32, false), kMemoryEfficiency).seconds;
  const double tf32 =
      op_time(op, a100, config_in(model::DType::fp32, true), kMemoryEfficiency).seconds;
  EXPECT_NEAR(
      fp32,
      quantized / (19.5e12 * product_efficiency(Generation::ampere_ada, ProductPath::cuda_cores)),
      1e-12);
  EXPECT_NEAR(tf32,
              quantized / (156e12 * product_efficiency(Generation::ampere_ada, ProductPath::tf32)),
              1e-12);
  a100.matmul_efficiency = 0.25;  // a cluster file's figure wins
  EXPECT_NEAR(op_time(op, a100, config_in(model::DType::fp32, true), kMemoryEfficiency).seconds,
              quantized / (156e12 * 0.25), 1e-12);
}

TEST(OpEstimate, MemoryOpsStreamAndEveryKernelCostsALaunch) {
  const auto v100 = *cluster::find_gpu_type("V100-16GB");
  const auto config = config_in(model::DType::fp16);
  model::LayerOp big{"softmax", model::Pass::forward, model::OpKind::memory};
  big.bytes = 1e9;
  const OpTime streamed = op_time(big, v100, config, kMemoryEfficiency);
  EXPECT_NEAR(streamed.seconds, 1e9 / (900e9 * kMemoryEfficiency), 1e-15);
  EXPECT_EQ(streamed.bound, OpBound::memory);
  model::LayerOp tiny = big;
  tiny.bytes = 1000;
  tiny.kernels = 3;
  const OpTime launched = op_time(tiny, v100, config, kMemoryEfficiency);
  EXPECT_DOUBLE_EQ(launched.seconds, 3 * kKernelLaunchSeconds);
  EXPECT_EQ(launched.bound, OpBound::launch);
}

TEST(OpEstimate, GenerationsFromComputeCapability) {
  EXPECT_EQ(generation_of(*cluster::find_gpu_type("V100-16GB")), Generation::volta_turing);
  EXPECT_EQ(generation_of(*cluster::find_gpu_type("RTX2080Ti")), Generation::volta_turing);
  EXPECT_EQ(generation_of(*cluster::find_gpu_type("A100-40GB")), Generation::ampere_ada);
  EXPECT_EQ(generation_of(*cluster::find_gpu_type("GH200-96GB")), Generation::hopper);
  EXPECT_EQ(generation_of(*cluster::find_gpu_type("MI250X")), Generation::unknown);
  // A type without a generation gets the cost model's default share.
  EXPECT_DOUBLE_EQ(product_efficiency(Generation::unknown, ProductPath::tensor16),
                   kDefaultMatmulEfficiency);
}

// V100 has no bf16 tensor cores and Turing no TF32: those products take the CUDA cores'
// share, at the fp32 peak.
TEST(OpEstimate, FormatsWithoutTensorCoresRunOnCudaCores) {
  const auto v100 = *cluster::find_gpu_type("V100-16GB");
  EXPECT_EQ(product_path(v100, model::DType::bf16, false), ProductPath::cuda_cores);
  EXPECT_EQ(product_path(v100, model::DType::fp16, false), ProductPath::tensor16);
  EXPECT_EQ(product_path(*cluster::find_gpu_type("TitanRTX"), model::DType::fp32, true),
            ProductPath::cuda_cores);
  EXPECT_EQ(product_path(*cluster::find_gpu_type("A100-40GB"), model::DType::fp32, true),
            ProductPath::tf32);
  const auto op = product(1, 10 * kProductTile, 8 * kProductTile, 4096);  // V100's 80 SMs
  EXPECT_NEAR(
      op_time(op, v100, config_in(model::DType::bf16), kMemoryEfficiency).seconds,
      op.flops / (15.7e12 * product_efficiency(Generation::volta_turing, ProductPath::cuda_cores)),
      1e-15);
}

// Fused causal attention computes half the scores; its backward reruns Q·Kᵀ.
TEST(OpEstimate, FusedAttentionCausalHalfAndBackwardRerun) {
  const auto h100 = *cluster::find_gpu_type("H100-SXM");
  const auto config = config_in(model::DType::bf16);
  model::LayerOp forward{"attention", model::Pass::forward, model::OpKind::fused_attention};
  forward.flops = 1e13;
  forward.causal = true;
  model::LayerOp backward = forward;
  backward.pass = model::Pass::backward_input;
  backward.flops = 2e13;
  const OpTime f = op_time(forward, h100, config, kMemoryEfficiency);
  const OpTime b = op_time(backward, h100, config, kMemoryEfficiency);
  EXPECT_NEAR(f.seconds, 0.5e13 / (989.4e12 * f.efficiency), 1e-12);
  EXPECT_NEAR(b.seconds, 0.5 * 2e13 * 1.25 / (989.4e12 * b.efficiency), 1e-12);
}

}  // namespace
}  // namespace hyperpipe::cost
