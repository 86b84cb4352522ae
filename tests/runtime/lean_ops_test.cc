#include "hyperpipe/runtime/lean_ops.h"

#include <gtest/gtest.h>

#include "hyperpipe/model/transformer_config.h"

namespace hyperpipe::runtime {
namespace {

constexpr double kFp64Tolerance = 1e-12;
// Qwen2's and Llama 1's RMSNorm epsilon; Llama 3's rotary base.
constexpr double kEps = 1e-6;
constexpr double kLlama3Base = 500000.0;

// Forward and both gradients of the lean RMSNorm against autograd through the formula, in
// fp64.
TEST(LeanOps, RmsNormMatchesAutogradThroughTheFormula) {
  torch::manual_seed(3);
  const auto options = torch::TensorOptions().dtype(torch::kDouble);
  const auto x = torch::randn({2, 5, 16}, options).requires_grad_(true);
  const auto weight = torch::randn({16}, options).requires_grad_(true);
  const auto g = torch::randn({2, 5, 16}, options);

  const auto reference = x * torch::rsqrt(x.pow(2).mean(-1, true) + kEps) * weight;
  const auto expected = torch::autograd::grad({reference}, {x, weight}, {g});
  const auto lean = rms_norm(x, weight, kEps);
  const auto got = torch::autograd::grad({lean}, {x, weight}, {g});

  EXPECT_TRUE(torch::allclose(lean, reference, kFp64Tolerance, kFp64Tolerance));
  EXPECT_TRUE(torch::allclose(got[0], expected[0], kFp64Tolerance, kFp64Tolerance));
  EXPECT_TRUE(torch::allclose(got[1], expected[1], kFp64Tolerance, kFp64Tolerance));
}

// Meta's reference rotates each channel pair as a complex number times e^{i·position·θ_k}
// (model.py: torch.polar, view_as_complex); the lean rotation and its gradient agree.
TEST(LeanOps, RotaryIsTheComplexRotationOfMetasReference) {
  torch::manual_seed(4);
  const auto options = torch::TensorOptions().dtype(torch::kDouble);
  const int64_t seq = 6, dim = 8;
  const auto x = torch::randn({2, 3, seq, dim}, options).requires_grad_(true);
  const auto g = torch::randn({2, 3, seq, dim}, options);

  for (const double base : {model::kDefaultRopeTheta, kLlama3Base}) {
    const auto theta = torch::pow(base, -torch::arange(0, dim, 2, options) / double(dim));
    const auto angles = torch::outer(torch::arange(0, seq, options), theta);
    const auto turn = torch::polar(torch::ones_like(angles), angles);  // [s, d/2]
    const auto pairs = torch::view_as_complex(x.reshape({2, 3, seq, dim / 2, 2}));
    const auto reference = torch::view_as_real(pairs * turn).reshape(x.sizes());
    const auto expected = torch::autograd::grad({reference}, {x}, {g});

    const auto lean = rotary(x, base);
    const auto got = torch::autograd::grad({lean}, {x}, {g});
    EXPECT_TRUE(torch::allclose(lean, reference, kFp64Tolerance, kFp64Tolerance)) << base;
    EXPECT_TRUE(torch::allclose(got[0], expected[0], kFp64Tolerance, kFp64Tolerance)) << base;
  }
  // The bases rotate differently (else the loop above would not tell them apart).
  EXPECT_FALSE(torch::allclose(rotary(x, model::kDefaultRopeTheta), rotary(x, kLlama3Base)));
}

}  // namespace
}  // namespace hyperpipe::runtime
