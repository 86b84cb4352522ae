#include "hyperpipe/training/loss_scaler.h"

#include <stdexcept>

namespace hyperpipe::training {

DynamicLossScaler::DynamicLossScaler(LossScaling settings)
    : settings_(settings), scale_(settings.initial_scale) {
  if (!(settings.initial_scale > 0) || !(settings.growth_factor > 1) ||
      !(settings.backoff_factor > 0 && settings.backoff_factor < 1) ||
      settings.growth_interval < 1) {
    throw std::invalid_argument(
        "loss scaling needs a positive scale, growth > 1, 0 < backoff < 1 and an interval ≥ 1");
  }
}

bool DynamicLossScaler::update(bool finite) {
  if (!finite) {
    scale_ *= settings_.backoff_factor;
    clean_steps_ = 0;
    return false;
  }
  if (++clean_steps_ == settings_.growth_interval) {
    scale_ *= settings_.growth_factor;
    clean_steps_ = 0;
  }
  return true;
}

void DynamicLossScaler::restore(double scale, int64_t clean_steps) {
  scale_ = scale;
  clean_steps_ = clean_steps;
}

}  // namespace hyperpipe::training
