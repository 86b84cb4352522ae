#include "hyperpipe/cli/train_progress.h"

#include <fmt/format.h>

#include <cmath>

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/elastic/joins.h"

namespace hyperpipe::cli {
namespace {

// Off a terminal, start-up progress prints at most one line this often.
constexpr double kQuietSeconds = 2;

}  // namespace

TrainProgress::TrainProgress(TrainReportOptions options, std::ostream& out)
    : options_(std::move(options)), out_(out), records_(options_) {}

void TrainProgress::joined(int processes, double seconds) {
  records_.mark("joined");
  out_ << options_.header
       << fmt::format("{} joined in {:.1f} s\n", counted(processes, "process", "processes"),
                      seconds)
       << std::flush;
}

void TrainProgress::layer_built(int built, int total) {
  const bool terminal = is_terminal(out_);
  if (!building_) {
    building_.emplace(out_, terminal);
    last_line_ = std::chrono::steady_clock::now();
  }
  // Off a terminal (a log, the launcher's pipe) a line at most every kQuietSeconds.
  const auto now = std::chrono::steady_clock::now();
  const bool due = std::chrono::duration<double>(now - last_line_).count() >= kQuietSeconds;
  if (terminal || due || built == total) {
    building_->update(built, total, "of this process's layers built");
    last_line_ = now;
  }
  if (built == total) {
    building_->finish();
    records_.mark("layers_built");
  }
}

void TrainProgress::started(const std::optional<std::string>& checkpoint, int64_t steps_done) {
  records_.started(checkpoint, steps_done);
  if (checkpoint) {
    out_ << fmt::format("resuming from {} ({} done)\n", *checkpoint, counted(steps_done, "step"));
  } else if (options_.resume && options_.checkpoint_dir) {
    out_ << fmt::format("no complete checkpoint in {}: starting from step 1\n",
                        *options_.checkpoint_dir);
  }
}

void TrainProgress::step_done(const runtime::StepRecord& step) {
  // Every process builds a TrainProgress; rank 0's alone hears of steps and records them.
  records_.step_done(step);
  total_seconds_ += step.seconds;
  const int64_t done = step.step + 1 - records_.first_step();
  const double mean_seconds = total_seconds_ / static_cast<double>(done);
  out_ << fmt::format(
              "step {:>{}}/{}  loss {:.4f}{}  {:.0f} tokens/s  {:.3f} s/step  ETA {}{}\n",
              step.step + 1, std::to_string(options_.steps).size(), options_.steps, step.loss,
              options_.lr_varies ? fmt::format("  lr {:.3g}", step.lr) : "",
              records_.tokens_per_s(step.seconds), step.seconds,
              format_eta(mean_seconds * static_cast<double>(options_.steps - step.step - 1)),
              step.skipped ? fmt::format("  skipped (loss scale {:g})", step.loss_scale) : "")
       << std::flush;
}

void TrainProgress::evaluated(int64_t step, double validation_loss) {
  records_.evaluated(step, validation_loss);
  out_ << fmt::format("validation after step {}: loss {:.4f}, perplexity {:.4g}\n", step + 1,
                      validation_loss, std::exp(validation_loss))
       << std::flush;
}

void TrainProgress::checkpoint_saved(int64_t /*steps_done*/, double save_seconds) {
  last_save_seconds_ = save_seconds;
  write_metrics();  // the metrics so far survive with the checkpoint
}

void TrainProgress::stopped(int signal_number, int64_t steps_done) {
  write_metrics();
  out_ << fmt::format("stopped by {} after step {}{}\n", signal_name(signal_number), steps_done,
                      options_.checkpoint_dir ? fmt::format("; checkpoint of step {} in {}",
                                                            steps_done, *options_.checkpoint_dir)
                                              : "")
       << std::flush;
}

bool TrainProgress::step_measured(int64_t step, const std::vector<double>& compute) {
  // The run's first step warms caches and allocators: not a speed.
  if (!adapter_ || step == records_.first_step()) return false;
  // What a switch costs, judged by this run's own: a save that every process waits for as
  // it ends, and a start as this one's, from rank 0's process starting to its first step
  // done (libraries loaded, processes joined, layers built, checkpoint loaded, warm-up).
  return adapter_->measured(step, compute, last_save_seconds_ + records_.startup_seconds());
}

bool TrainProgress::hand_over_after_checkpoint(int64_t steps_done) {
  if (!handover_dir_) return false;
  handed_over_for_ = elastic::handover_requested(*handover_dir_);
  if (!handed_over_for_) return false;
  out_ << fmt::format("the launcher asks for the run to end after the checkpoint of step {}: {}\n",
                      steps_done, *handed_over_for_)
       << std::flush;
  return true;
}

void TrainProgress::switching(int64_t steps_done) {
  write_metrics();
  out_ << fmt::format("switching plans after step {}; checkpoint of step {} in {}\n", steps_done,
                      steps_done, options_.checkpoint_dir.value_or("?"))
       << std::flush;
}

}  // namespace hyperpipe::cli
