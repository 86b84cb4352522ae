#include "hyperpipe/runtime/mixed_precision.h"

#include <gtest/gtest.h>

namespace hyperpipe::runtime {
namespace {

TEST(MasterWeights, KeepsTheFp32ValuesAndRoundsTheWeights) {
  auto weight = torch::randn({4, 3}, torch::kFloat).requires_grad_(true);
  const auto original = weight.detach().clone();
  MasterWeights masters({weight}, torch::kBFloat16);
  EXPECT_EQ(weight.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(masters.masters()[0], original));
  EXPECT_TRUE(torch::equal(weight.detach(), original.to(torch::kBFloat16)));
  EXPECT_TRUE(masters.master_of(weight).is_same(masters.masters()[0]));
  EXPECT_DOUBLE_EQ(masters.bytes(), 2 * 12 * 4.0);  // master and main grad, fp32 each
}

// Autograd adds each backward's 16-bit gradient into the fp32 main grad: the sum of the
// bf16 gradients taken exactly in fp32, where bf16 accumulation would round each partial
// sum to 8 bits.
TEST(MasterWeights, AccumulatesEachBackwardIntoTheFp32MainGrad) {
  auto weight = torch::ones({1}, torch::kFloat).requires_grad_(true);
  MasterWeights masters({weight}, torch::kBFloat16);
  masters.zero_main_grads();
  // 1 + 2^-9 rounds to 1 in bf16: 1 and 256 gradients of 2^-9 sum to 1.5 in fp32 (exact),
  // to 1 in bf16.
  const auto small = torch::full({1}, 1.0 / 512, torch::kBFloat16);
  (weight * torch::ones({1}, torch::kBFloat16)).sum().backward();
  for (int i = 0; i < 256; ++i) (weight * small).sum().backward();
  ASSERT_EQ(weight.grad().scalar_type(), torch::kFloat);
  EXPECT_DOUBLE_EQ(weight.grad().item<double>(), 1.0 + 256.0 / 512);
  EXPECT_TRUE(weight.grad().is_same(masters.masters()[0].grad()));  // what AdamW reads
  masters.zero_main_grads();
  EXPECT_DOUBLE_EQ(weight.grad().item<double>(), 0.0);
}

TEST(MasterWeights, CopiesTheStepIntoTheModelRounded) {
  auto weight = torch::zeros({2}, torch::kFloat).requires_grad_(true);
  MasterWeights masters({weight}, torch::kBFloat16);
  torch::NoGradGuard no_grad;
  masters.masters()[0].fill_(1.0 + 1.0 / 1024);  // below bf16's resolution at 1
  masters.copy_to_model();
  EXPECT_DOUBLE_EQ(weight[0].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(masters.masters()[0][0].item<double>(), 1.0 + 1.0 / 1024);  // kept
}

// PyTorch 2 computes both 16-bit types on the CPU: the probe runs every op kind the layers
// use, forward and backward, and must accept them (a probe op this libtorch lacks would
// refuse a run that trains, as tests/integration's fp16 run shows it does).
TEST(MixedPrecisionKernels, Bf16AndFp16RunOnThisCpu) {
  EXPECT_NO_THROW(require_kernels_for(torch::kBFloat16, torch::kCPU, "--dtype"));
  EXPECT_NO_THROW(require_kernels_for(torch::kHalf, torch::kCPU, "--dtype"));
  EXPECT_NO_THROW(require_kernels_for(torch::kFloat, torch::kCPU, "--dtype"));
}

// The runtime keeps masters exactly where the cost model counts them (model/dtype.h), and
// fp64 is its own master.
TEST(MixedPrecision, MastersWhereThePolicySays) {
  for (const model::DType dtype : {model::DType::fp16, model::DType::bf16, model::DType::fp32}) {
    EXPECT_EQ(needs_master_weights(scalar_type_of(dtype)), model::keeps_fp32_masters(dtype))
        << model::to_string(dtype);
  }
  EXPECT_FALSE(needs_master_weights(torch::kDouble));
}

}  // namespace
}  // namespace hyperpipe::runtime
