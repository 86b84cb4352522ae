#include "hyperpipe/training/lr_schedule.h"

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "hyperpipe/common/error.h"

namespace hyperpipe::training {

std::string_view to_string(LrDecayStyle style) {
  switch (style) {
    case LrDecayStyle::constant:
      return "constant";
    case LrDecayStyle::linear:
      return "linear";
    case LrDecayStyle::cosine:
      return "cosine";
  }
  return "constant";
}

std::optional<LrDecayStyle> parse_lr_decay_style(std::string_view name) {
  for (const auto style : {LrDecayStyle::constant, LrDecayStyle::linear, LrDecayStyle::cosine}) {
    if (name == to_string(style)) return style;
  }
  return std::nullopt;
}

double LrSchedule::at(int64_t steps_done) const {
  const auto steps = static_cast<double>(steps_done);
  if (warmup_iters > 0 && steps_done <= warmup_iters) {
    return max_lr * steps / static_cast<double>(warmup_iters);
  }
  if (style == LrDecayStyle::constant) return max_lr;
  if (steps_done > decay_iters) return min_lr;
  const double ratio =
      (steps - static_cast<double>(warmup_iters)) / static_cast<double>(decay_iters - warmup_iters);
  const double coefficient = style == LrDecayStyle::linear
                                 ? 1.0 - ratio
                                 : 0.5 * (std::cos(std::numbers::pi * ratio) + 1.0);
  return min_lr + coefficient * (max_lr - min_lr);
}

void LrSchedule::check() const {
  if (!(max_lr > 0)) throw InputError("--lr", fmt::format("{}", max_lr), "a positive rate");
  if (!(min_lr >= 0) || min_lr > max_lr) {
    throw InputError("--min-lr", fmt::format("{}", min_lr),
                     fmt::format("a rate from 0 to --lr ({})", max_lr));
  }
  if (warmup_iters < 0) {
    throw InputError("--lr-warmup-iters", std::to_string(warmup_iters), "0 or more steps");
  }
  if (style != LrDecayStyle::constant && decay_iters <= warmup_iters) {
    throw InputError("--lr-decay-iters", std::to_string(decay_iters),
                     fmt::format("more steps than --lr-warmup-iters ({}): the decay ends that "
                                 "many steps from the start",
                                 warmup_iters));
  }
}

nlohmann::json LrSchedule::to_json() const {
  // Without decay neither its end nor its floor sets a rate: recorded as 0, so a resume
  // that runs longer (--lr-decay-iters defaults to --steps) follows the same schedule.
  const bool decays = style != LrDecayStyle::constant;
  return {{"lr", max_lr},
          {"min_lr", decays ? min_lr : 0.0},
          {"warmup_iters", warmup_iters},
          {"decay_iters", decays ? decay_iters : 0},
          {"decay_style", std::string(to_string(style))}};
}

void require_same_schedule(const LrSchedule& schedule, const nlohmann::json& manifest,
                           const std::string& manifest_path) {
  if (!manifest.contains("lr_schedule")) return;  // written before schedules were recorded
  const nlohmann::json& recorded = manifest["lr_schedule"];
  const nlohmann::json mine = schedule.to_json();
  if (recorded == mine) return;
  throw InputError(manifest_path, "lr_schedule",
                   fmt::format("the learning-rate schedule of the run that wrote this checkpoint "
                               "({}), to continue it; this run has {}. Give the same --lr, "
                               "--min-lr, --lr-warmup-iters, --lr-decay-iters and "
                               "--lr-decay-style (--lr-decay-iters defaults to --steps)",
                               recorded.dump(), mine.dump()));
}

}  // namespace hyperpipe::training
