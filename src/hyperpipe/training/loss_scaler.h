// Dynamic loss scaling for fp16 training (Micikevicius et al., 2018), with the defaults
// of PyTorch's torch.cuda.amp.GradScaler: the loss is multiplied by the scale before the
// backward so small gradients survive fp16's narrow range, the gradients divided by it
// again before clipping. A step whose gradients hold an inf or nan is skipped and the
// scale backs off; after `growth_interval` clean steps in a row it grows.
// Plain numbers (no libtorch): every rank runs the same scaler on the same global norm.
#pragma once

#include <cstdint>

namespace hyperpipe::training {

struct LossScaling {
  double initial_scale = 65536.0;  // 2^16, GradScaler's init_scale
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // clean steps before the scale grows
};

class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(LossScaling settings);

  double scale() const { return scale_; }
  // After a step's gradients are known: whether they were finite (the step is taken).
  // A non-finite step backs the scale off and restarts the count; the growth_interval-th
  // finite step in a row grows it.
  bool update(bool finite);
  // Where a resumed run left off.
  int64_t clean_steps() const { return clean_steps_; }
  void restore(double scale, int64_t clean_steps);

 private:
  LossScaling settings_;
  double scale_;
  int64_t clean_steps_ = 0;
};

}  // namespace hyperpipe::training
