// `hyperpipe train`: one process of a run (started by `hyperpipe launch`, torchrun,
// mpirun or srun; alone it is a one-process run of a one-device plan).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/timeline_comparison.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/launch/parent_watch.h"
#include "hyperpipe/runtime/trainer.h"

namespace hyperpipe::cli {

void add_train_command(CLI::App& app, std::ostream& out, std::ostream& /*err*/) {
  auto options = std::make_shared<runtime::TrainOptions>();
  auto timeout_seconds = std::make_shared<double>(60.0);
  auto seed = std::make_shared<int64_t>(0);
  CLI::App* command = app.add_subcommand(
      "train", "Train with a plan: this process's device of it (see `hyperpipe launch`)");
  command->add_option("--plan", options->plan_path, "Plan file")->required();
  command->add_option("--data", options->data_path, "Text file to train on (bytes as tokens)")
      ->required();
  command->add_option("--cluster", options->cluster, "Cluster instead of the plan's");
  command->add_option("--steps", options->steps, "Training steps")
      ->default_val(10)
      ->check(CLI::PositiveNumber);
  auto& optimizer = options->executor.optimizer;
  command->add_option("--lr", optimizer.learning_rate, "AdamW learning rate")
      ->default_val(1e-3)
      ->check(CLI::PositiveNumber);
  command->add_option("--weight-decay", optimizer.weight_decay, "AdamW weight decay (matrices)")
      ->default_val(0.1)
      ->check(CLI::NonNegativeNumber);
  command->add_option("--clip", optimizer.clip_norm, "Clip gradients at this global norm (0: off)")
      ->default_val(1.0)
      ->check(CLI::NonNegativeNumber);
  command->add_option("--seed", *seed, "Seed of the initial weights and the data order")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  command->add_option("--device", options->device, "cpu or cuda")
      ->default_val("cpu")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command->add_option("--dtype", options->dtype, "fp32, or fp64 to compare runs exactly")
      ->default_val("fp32")
      ->check(CLI::IsMember({"fp32", "fp64"}));
  command->add_option("--threads", options->threads, "Intra-op threads per process")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--timeout", *timeout_seconds,
                   "Seconds to wait for a peer before giving up on it")
      ->default_val(60.0)
      ->check(CLI::PositiveNumber);
  command->add_option("--metrics", options->metrics_path, "Write per-step metrics (JSON lines)");
  command->add_option("--trace", options->trace_path, "Write the measured timeline (Chrome trace)");
  command->add_option("--svg", options->svg_path, "Write the measured timeline as an SVG chart");
  command->add_option("--timeline", options->timeline_path,
                      "Write the measured timeline as JSON (hyperpipe.timeline/1)");
  command->add_option("--trace-step", options->trace_step,
                      "The step drawn by --trace/--svg/--timeline and compared with the prediction "
                      "(default: the median of the last 32)");
  command->add_option("--profiles", options->profiles_path,
                      "Profiles for the predicted iteration printed at the end "
                      "(hyperpipe profile); without, the cost model's estimates");
  command->add_option("--checkpoint-dir", options->checkpoint_dir, "Save checkpoints here");
  command
      ->add_option("--checkpoint-every", options->checkpoint_every,
                   "Save every this many steps (and at the end)")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--resume", options->resume,
                    "Continue from the last complete checkpoint in --checkpoint-dir (of the "
                    "same model, seed and data)");
  command->add_flag("--overwrite", options->overwrite,
                    "Replace the checkpoints an earlier run left in --checkpoint-dir");
  command->footer(
      "Examples:\n"
      "  hyperpipe launch --plan examples/plans/tiny-gpt-3stage.json "
      "--data examples/data/corpus.txt --steps 20\n"
      "  torchrun --nproc-per-node 3 --no-python hyperpipe train --plan plan.json --data "
      "corpus.txt");
  command->callback([options, timeout_seconds, seed, &out] {
    options->executor.seed = static_cast<uint64_t>(*seed);
    options->data_seed = static_cast<uint64_t>(*seed);
    options->timeout = std::chrono::milliseconds(static_cast<int64_t>(*timeout_seconds * 1000.0));
    if (!launch::die_with_launcher()) {
      throw CommandFailed("the launcher that started this worker is gone; not starting",
                          kExitInternalError);
    }
    try {
      const auto summary = runtime::train(*options, out);
      if (summary.stopped_by) {
        // As a shell reports a process a signal ended: 128 + the signal.
        throw CommandFailed(fmt::format("stopped by {} after step {}",
                                        signal_name(summary.stopped_by), summary.steps_done),
                            128 + summary.stopped_by);
      }
      if (summary.measured_timeline && summary.predicted_timeline) {
        out << fmt::format(
            "\npredicted against measured in step {}, device group by device group:\n",
            summary.traced_step);
        print_comparison(compare_timelines(*summary.predicted_timeline, *summary.measured_timeline),
                         out);
      }
    } catch (const runtime::CommunicationError& error) {
      throw CommandFailed(error.what(), kExitInternalError);
    }
  });
}

}  // namespace hyperpipe::cli
