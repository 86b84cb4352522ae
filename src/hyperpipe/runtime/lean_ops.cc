#include "hyperpipe/runtime/lean_ops.h"

namespace hyperpipe::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class RmsNorm : public torch::autograd::Function<RmsNorm> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, double eps) {
    const auto scale = torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps);
    ctx->save_for_backward({x, scale, weight});
    return x * scale * weight;
  }

  // With n = x·scale and gn = g·weight: ∂/∂x = scale·(gn − n·mean(gn·n)), ∂/∂weight = Σ g·n.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& scale = saved[1];
    const auto& weight = saved[2];
    const auto& g = grads[0];
    const auto normed = x * scale;
    const auto g_normed = g * weight;
    const auto x_grad =
        scale * (g_normed - normed * (g_normed * normed).mean(-1, /*keepdim=*/true));
    const auto weight_grad = (g * normed).reshape({-1, x.size(-1)}).sum(0);
    return {x_grad, weight_grad, torch::Tensor()};  // none for eps
  }
};

// [b, heads, s, d] rotated by `direction` (1 forward, −1 back) times each pair's angle.
torch::Tensor rotate(const torch::Tensor& x, double direction, double base) {
  const int64_t seq = x.size(2);
  const int64_t half = x.size(3) / 2;
  const auto options = x.options();
  const auto inverse =
      torch::pow(base, -torch::arange(0, half, options) * 2.0 / static_cast<double>(x.size(3)));
  const auto angles = torch::outer(torch::arange(0, seq, options), inverse);  // [s, half]
  const auto cos = angles.cos();
  const auto sin = angles.sin() * direction;
  const auto pairs = x.reshape({x.size(0), x.size(1), seq, half, 2});
  const auto even = pairs.select(-1, 0);
  const auto odd = pairs.select(-1, 1);
  return torch::stack({even * cos - odd * sin, even * sin + odd * cos}, -1).reshape(x.sizes());
}

class Rotary : public torch::autograd::Function<Rotary> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, double base) {
    ctx->saved_data["base"] = base;
    return rotate(x, 1, base);
  }
  // A rotation's transpose is its inverse.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {rotate(grads[0], -1, ctx->saved_data["base"].toDouble()), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return RmsNorm::apply(x, weight, eps);
}

torch::Tensor rotary(const torch::Tensor& x, double base) {
  return Rotary::apply(x, base);
}

}  // namespace hyperpipe::runtime
