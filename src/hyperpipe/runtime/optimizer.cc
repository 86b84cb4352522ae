#include "hyperpipe/runtime/optimizer.h"

namespace hyperpipe::runtime {

std::unique_ptr<torch::optim::AdamW> make_optimizer(const std::vector<torch::Tensor>& parameters,
                                                    const training::OptimizerOptions& options) {
  std::vector<bool> matrices;
  for (const auto& p : parameters) matrices.push_back(p.dim() >= 2);
  return make_optimizer(parameters, matrices, options);
}

std::unique_ptr<torch::optim::AdamW> make_optimizer(const std::vector<torch::Tensor>& tensors,
                                                    const std::vector<bool>& decays,
                                                    const training::OptimizerOptions& options) {
  std::vector<torch::Tensor> decayed;
  std::vector<torch::Tensor> kept;
  for (size_t i = 0; i < tensors.size(); ++i) (decays.at(i) ? decayed : kept).push_back(tensors[i]);
  const auto adamw = [&](double decay) {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(options.lr.at(0))
                                                            .betas({options.beta1, options.beta2})
                                                            .eps(options.epsilon)
                                                            .weight_decay(decay));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed, adamw(options.weight_decay));
  groups.emplace_back(kept, adamw(0.0));
  return std::make_unique<torch::optim::AdamW>(groups,
                                               torch::optim::AdamWOptions(options.lr.at(0)));
}

void* adam_state_key(const torch::Tensor& tensor) {
  return tensor.unsafeGetTensorImpl();
}

double clip_factor(double global_norm, double clip_norm) {
  if (clip_norm <= 0) return 1.0;
  const double factor = clip_norm / (global_norm + kClipEpsilon);
  return factor < 1.0 ? factor : 1.0;
}

double gradient_squares(const std::vector<torch::Tensor>& parameters) {
  double squares = 0;
  for (const auto& p : parameters) {
    if (p.grad().defined()) squares += p.grad().pow(2).sum().item<double>();
  }
  return squares;
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double rate) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(rate);
}

void clipped_step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters,
                  double factor) {
  if (factor < 1.0) {
    for (const auto& p : parameters) {
      if (p.grad().defined()) p.grad().mul_(factor);
    }
  }
  optimizer.step();
}

}  // namespace hyperpipe::runtime
