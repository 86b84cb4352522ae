// LLaMA's RMSNorm and rotary embedding as autograd functions that keep only what their
// backward needs, as the fused kernels of Megatron-LM and Apex do: the norm its input and
// the per-token scale, the rotation nothing (its backward is the inverse rotation). Built
// from elementwise libtorch ops, autograd would keep every intermediate (the normalised
// input, the rotated halves' operands) — a quarter more activation memory per LLaMA block
// than the cost model counts (model/layer.h).
#pragma once

#include <torch/torch.h>

namespace hyperpipe::runtime {

// x · rsqrt(mean(x², last dim) + eps) · weight (the model's norm_eps).
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// Rotary position embedding on [b, heads, s, head_dim]: consecutive channel pairs rotated
// by position × base^(−2i/head_dim) (Su et al.; Meta's reference model.py; the model's
// rope_theta).
torch::Tensor rotary(const torch::Tensor& x, double base);

}  // namespace hyperpipe::runtime
