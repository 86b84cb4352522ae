// LLaMA's RMSNorm and rotary embedding as autograd functions that keep only what their
// backward needs, as the fused kernels of Megatron-LM and Apex do: the norm its input and
// the per-token scale, the rotation nothing (its backward is the inverse rotation). Built
// from elementwise libtorch ops, autograd would keep every intermediate (the normalised
// input, the rotated halves' operands) — a quarter more activation memory per LLaMA block
// than the cost model counts (model/layer.h).
#pragma once

#include <torch/torch.h>

namespace hyperpipe::runtime {

// LLaMA's RMS normalisation epsilon (Meta's reference model.py).
inline constexpr double kRmsNormEps = 1e-5;
// LLaMA's rotary base (Su et al., RoFormer; Meta's reference model.py).
inline constexpr double kRotaryBase = 10000.0;

// x · rsqrt(mean(x², last dim) + kRmsNormEps) · weight.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight);

// Rotary position embedding on [b, heads, s, head_dim]: consecutive channel pairs rotated
// by position × kRotaryBase^(−2i/head_dim) (Su et al.; Meta's reference model.py).
torch::Tensor rotary(const torch::Tensor& x);

}  // namespace hyperpipe::runtime
