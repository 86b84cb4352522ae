// The optimizer's settings, as plain numbers (no libtorch), so the CLI can hold them.
#pragma once

#include "hyperpipe/training/lr_schedule.h"

namespace hyperpipe::training {

// GPT-3's settings (Brown et al., 2020, appendix B): β = (0.9, 0.95), ε = 1e-8, weight
// decay 0.1, gradients clipped at global norm 1.0.
struct OptimizerOptions {
  LrSchedule lr;  // the rate of each step: constant 1e-3 unless told otherwise
  double beta1 = 0.9;
  double beta2 = 0.95;
  double epsilon = 1e-8;
  double weight_decay = 0.1;
  double clip_norm = 1.0;  // 0: no clipping
};

}  // namespace hyperpipe::training
