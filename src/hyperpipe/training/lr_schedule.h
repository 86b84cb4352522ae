// The learning rate step by step, as Megatron-LM's OptimizerParamScheduler sets it
// (--lr, --min-lr, --lr-warmup-iters, --lr-decay-iters, --lr-decay-style): a linear warm-up
// from 0, then constant, linear or cosine decay to the minimum, held after. A function of
// the steps done alone, so a resumed run continues the schedule where its checkpoint left
// it; the checkpoint records the schedule, and a resume with another one is refused.
// Plain numbers: no libtorch.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace hyperpipe::training {

enum class LrDecayStyle { constant, linear, cosine };

std::string_view to_string(LrDecayStyle style);
std::optional<LrDecayStyle> parse_lr_decay_style(std::string_view name);

struct LrSchedule {
  double max_lr = 1e-3;  // --lr
  double min_lr = 0;     // --min-lr: where decay ends
  int64_t warmup_iters = 0;
  int64_t decay_iters = 0;  // steps from the start to the end of the decay (warm-up included)
  LrDecayStyle style = LrDecayStyle::constant;

  // The learning rate of the step that follows `steps_done` steps (Megatron's get_lr at
  // num_steps = steps_done: its first step, in warm-up, has rate 0).
  double at(int64_t steps_done) const;

  // Whether the rate changes from step to step (a warm-up, or a decay).
  bool varies() const { return warmup_iters > 0 || style != LrDecayStyle::constant; }

  // InputError naming the option when the numbers do not make a schedule.
  void check() const;

  // What sets the rates: with constant decay, min_lr and decay_iters as 0.
  nlohmann::json to_json() const;
  bool operator==(const LrSchedule&) const = default;
};

// InputError (the manifest's `lr_schedule`) unless the checkpoint's recorded schedule,
// where it has one, is `schedule`.
void require_same_schedule(const LrSchedule& schedule, const nlohmann::json& manifest,
                           const std::string& manifest_path);

}  // namespace hyperpipe::training
