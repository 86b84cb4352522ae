#include "hyperpipe/runtime/mixed_precision.h"

#include <fmt/format.h>

#include <stdexcept>

#include "hyperpipe/common/error.h"

namespace hyperpipe::runtime {

torch::ScalarType scalar_type_of(model::DType dtype) {
  switch (dtype) {
    case model::DType::fp32:
      return torch::kFloat;
    case model::DType::fp16:
      return torch::kHalf;
    case model::DType::bf16:
      return torch::kBFloat16;
  }
  throw std::logic_error("unknown dtype");
}

bool needs_master_weights(torch::ScalarType type) {
  // fp64 (comparing runs exactly) is no model dtype: its own master, as fp32.
  for (const model::DType dtype : {model::DType::fp16, model::DType::bf16, model::DType::fp32}) {
    if (scalar_type_of(dtype) == type) return model::keeps_fp32_masters(dtype);
  }
  return false;
}

MasterWeights::MasterWeights(std::vector<torch::Tensor> parameters, torch::ScalarType type,
                             std::vector<FlatRange> kept)
    : parameters_(std::move(parameters)), kept_(std::move(kept)) {
  if (!kept_.empty() && kept_.size() != parameters_.size()) {
    throw std::invalid_argument("one kept range per parameter");
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    auto& p = parameters_[i];
    masters_.push_back(
        kept_part(p.detach(), i).to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true));
    if (masters_.back().numel() > 0 || kept_.empty()) stepped_.push_back(masters_.back());
    p.set_data(p.detach().to(type));
    main_grads_.push_back(torch::zeros_like(p, torch::kFloat));
  }
  zero_main_grads();
}

torch::Tensor MasterWeights::kept_part(const torch::Tensor& whole, size_t i) const {
  if (kept_.empty()) return whole;
  return whole.view(-1).narrow(0, kept_[i].begin, kept_[i].size());
}

const torch::Tensor& MasterWeights::master_of(const torch::Tensor& parameter) const {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (parameters_[i].is_same(parameter)) return masters_[i];
  }
  throw std::out_of_range("not a parameter with a master weight");
}

void MasterWeights::zero_main_grads() {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    main_grads_[i].zero_();
    // The fp32 buffer in the 16-bit weight's gradient slot: autograd's accumulation adds
    // into a defined gradient in place (`grad += new`), promoting to fp32.
    parameters_[i].mutable_grad() = main_grads_[i];
    masters_[i].mutable_grad() = kept_part(main_grads_[i], i);
  }
}

void MasterWeights::copy_to_model() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    kept_part(parameters_[i].detach(), i).copy_(masters_[i]);
  }
}

double MasterWeights::bytes() const {
  double bytes = 0;
  for (size_t i = 0; i < masters_.size(); ++i) {
    bytes += static_cast<double>(masters_[i].nbytes() + main_grads_[i].nbytes());
  }
  return bytes;
}

void require_kernels_for(torch::ScalarType type, const torch::Device& device,
                         const std::string& field) {
  if (!needs_master_weights(type)) return;
  const auto options = torch::TensorOptions().device(device).dtype(type);
  try {
    // One of each kind of op the layers run (layers.cc, lean_ops.cc, dropout.cc), forward
    // and backward, on a few elements.
    const auto x = torch::randn({2, 4, 8}, options).requires_grad_(true);
    const auto weight = torch::randn({8, 8}, options).requires_grad_(true);
    const auto table = torch::randn({16, 8}, options).requires_grad_(true);
    auto h = torch::nn::functional::linear(x, weight) +
             torch::embedding(
                 table, torch::randint(0, 16, {2, 4},
                                       torch::TensorOptions().device(device).dtype(torch::kLong)));
    h = torch::layer_norm(h, {8}) * h.pow(2).mean(-1, true).add(1e-6).rsqrt();
    h = torch::gelu(h) + torch::silu(h) + h.exp().sigmoid();
    const auto scores =
        torch::matmul(h, h.transpose(-1, -2))
            .masked_fill(torch::ones({4, 4}, options.dtype(torch::kBool)).triu(1), -1e4);
    h = torch::matmul(torch::softmax(scores, -1), h);
    torch::cat({h, h}, -1).to(torch::kFloat).log_softmax(-1).sum().backward();
  } catch (const c10::Error& error) {
    const std::string what = error.what_without_backtrace();
    throw InputError(field, type == torch::kHalf ? "fp16" : "bf16",
                     fmt::format("a type libtorch {} computes on {}: {}; train in another "
                                 "(--dtype bf16 or fp32)",
                                 TORCH_VERSION, device.str(), what.substr(0, what.find('\n'))));
  }
}

}  // namespace hyperpipe::runtime
