// `hyperpipe train`: one process of a run (started by `hyperpipe launch`, torchrun,
// mpirun or srun; alone it is a one-process run of a one-device plan).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <type_traits>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cli/train_progress.h"
#include "hyperpipe/cli/worker.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/elastic/elastic_run.h"
#include "hyperpipe/elastic/plan_adapter.h"
#include "hyperpipe/launch/parent_watch.h"
#include "hyperpipe/launch/train_flags.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/report/run_summary.h"
#include "hyperpipe/report/training_report.h"
#include "hyperpipe/runtime/trainer.h"

namespace hyperpipe::cli {
namespace {

namespace tf = launch::train_flags;  // train's options, defined once

// Whether an option read as T (train_flags.h) can be stored in a V (or an optional V).
template <typename T, typename V>
constexpr bool holds() {
  if constexpr (requires(V v) { v.has_value(); }) {
    return holds<T, typename V::value_type>();
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
    return std::is_same_v<T, V>;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return std::is_integral_v<V> && !std::is_same_v<V, bool>;
  } else {
    return std::is_floating_point_v<V>;
  }
}

// Registers train's option `flag` (its name and help) to be read into `into`.
template <typename T, typename V>
CLI::Option* add(CLI::App& command, const tf::Flag<T>& flag, V& into) {
  static_assert(holds<T, V>(), "the option's value does not fit where it is stored");
  if constexpr (std::is_same_v<T, bool>) {
    return command.add_flag(std::string(flag.name), into, std::string(flag.help));
  } else {
    return command.add_option(std::string(flag.name), into, std::string(flag.help));
  }
}

}  // namespace

using report::files_written_text;
using report::precision_text;
using report::recomputation_text;
using report::run_files;
using report::run_header;
using report::TrainReportOptions;

void add_train_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto options = std::make_shared<runtime::TrainOptions>();
  auto report = std::make_shared<TrainReportOptions>();
  auto profiles_path = std::make_shared<std::optional<std::string>>();
  auto timeout_seconds = std::make_shared<double>(60.0);
  auto seed = std::make_shared<int64_t>(0);
  auto format = std::make_shared<OutputFormat>(OutputFormat::table);
  CLI::App* command = add_worker_subcommand(app, kTrainCommand);
  add(*command, tf::kPlan, options->plan_path)->required();
  add(*command, tf::kData, options->data_path)->required();
  add(*command, tf::kTokenizer, options->tokenizer);
  add(*command, tf::kJsonKey, options->json_key)->capture_default_str();
  add(*command, tf::kCluster, options->cluster);
  add(*command, tf::kSteps, options->steps)->default_val(10)->check(CLI::PositiveNumber);
  add(*command, tf::kEvalInterval, options->eval_interval)
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  add(*command, tf::kEvalIters, options->eval_iters)->default_val(1)->check(CLI::PositiveNumber);
  auto& optimizer = options->optimizer;
  add(*command, tf::kLr, optimizer.lr.max_lr)->default_val(1e-3)->check(CLI::PositiveNumber);
  add(*command, tf::kMinLr, optimizer.lr.min_lr)->default_val(0.0)->check(CLI::NonNegativeNumber);
  add(*command, tf::kLrWarmupIters, optimizer.lr.warmup_iters)
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  auto decay_style = std::make_shared<std::string>("constant");
  add(*command, tf::kLrDecayStyle, *decay_style)
      ->capture_default_str()
      ->check(CLI::IsMember({"constant", "linear", "cosine"}));
  auto decay_iters = std::make_shared<std::optional<int64_t>>();
  add(*command, tf::kLrDecayIters, *decay_iters)->check(CLI::PositiveNumber);
  add(*command, tf::kWeightDecay, optimizer.weight_decay)
      ->default_val(0.1)
      ->check(CLI::NonNegativeNumber);
  add(*command, tf::kClip, optimizer.clip_norm)->default_val(1.0)->check(CLI::NonNegativeNumber);
  add(*command, tf::kSeed, *seed)->default_val(0)->check(CLI::NonNegativeNumber);
  add(*command, tf::kDevice, options->device)
      ->default_val("cpu")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  add(*command, tf::kDtype, options->dtype)->check(CLI::IsMember({"bf16", "fp16", "fp32", "fp64"}));
  add(*command, tf::kLossScale, options->loss_scale);
  add(*command, tf::kLossScaleInterval, options->loss_scale_interval)
      ->default_val(training::LossScaling{}.growth_interval)
      ->check(CLI::PositiveNumber);
  auto check_only = std::make_shared<bool>(false);
  add(*command, tf::kCheck, *check_only);
  add(*command, tf::kThreads, options->threads)->default_val(1)->check(CLI::PositiveNumber);
  add(*command, tf::kTimeout, *timeout_seconds)->default_val(60.0)->check(CLI::PositiveNumber);
  add(*command, tf::kMetrics, report->metrics_path);
  add(*command, tf::kTensorboard, report->tensorboard_dir);
  add(*command, tf::kStartupRecord, report->startup_record_path);
  add(*command, tf::kTrace, report->trace_path);
  add(*command, tf::kSvg, report->svg_path);
  add(*command, tf::kTimeline, report->timeline_path);
  add(*command, tf::kTraceStep, options->trace_step);
  add(*command, tf::kTraceSteps, options->trace_steps)->default_val(1)->check(positive_integer());
  add(*command, tf::kProfiles, *profiles_path);
  add(*command, tf::kCheckpointDir, options->checkpoint_dir);
  add(*command, tf::kCheckpointEvery, options->checkpoint_every)->check(CLI::NonNegativeNumber);
  add(*command, tf::kInitFrom, options->init_from);
  add(*command, tf::kLogits, options->logits_dir);
  add(*command, tf::kResume, options->resume);
  auto adapt = std::make_shared<bool>(false);
  auto adapt_settings = std::make_shared<elastic::AdaptSettings>();
  add(*command, tf::kAdapt, *adapt);
  add(*command, tf::kAdaptThreshold, adapt_settings->threshold)
      ->default_val(elastic::kDefaultAdaptThreshold)
      ->check(CLI::Range(0.01, 0.99));
  add(*command, tf::kAdaptSteps, adapt_settings->steps)
      ->default_val(elastic::kDefaultAdaptSteps)
      ->check(CLI::PositiveNumber);
  add(*command, tf::kAdaptGain, adapt_settings->gain)
      ->default_val(elastic::kDefaultAdaptGain)
      ->check(CLI::Range(0.0, 1.0));
  auto hand_over = std::make_shared<bool>(false);
  add(*command, tf::kHandOverOnRequest, *hand_over);
  add(*command, tf::kCheckpointWriteDelay, options->checkpoint_write_delay)
      ->check(CLI::NonNegativeNumber);
  add(*command, tf::kStandInSpeeds, options->stand_in_speeds);
  auto no_placement_check = std::make_shared<bool>(false);
  add(*command, tf::kNoPlacementCheck, *no_placement_check);
  add(*command, tf::kOverwrite, options->overwrite);
  add_format_option(*command, *format);
  command->footer(
      "With --format json the step lines go to stderr and rank 0 prints one JSON document "
      "(hyperpipe.training/1) at the end.\n"
      "Examples:\n"
      "  hyperpipe launch --plan examples/plans/tiny-gpt-3stage.json "
      "--data examples/data/corpus.txt --steps 20\n"
      "  torchrun --nproc-per-node 3 --no-python hyperpipe train --plan plan.json --data "
      "corpus.txt");
  command->callback([options, report, profiles_path, timeout_seconds, seed, check_only, format,
                     no_placement_check, adapt, adapt_settings, hand_over, decay_style, decay_iters,
                     &out, &err] {
    options->check_placement = !*no_placement_check;
    auto& lr = options->optimizer.lr;
    lr.style = *training::parse_lr_decay_style(*decay_style);
    lr.decay_iters = decay_iters->value_or(options->steps);
    lr.check();
    options->seed = static_cast<uint64_t>(*seed);
    options->data_seed = static_cast<uint64_t>(*seed);
    options->timeout = std::chrono::milliseconds(static_cast<int64_t>(*timeout_seconds * 1000.0));
    if (!launch::die_with_launcher()) {
      throw CommandFailed("the launcher that started this worker is gone; not starting",
                          kExitInternalError);
    }
    // The report's inputs are checked before the run, as the runtime checks its own.
    const auto [plan, model, cluster] =
        plan::load_checked_plan(options->plan_path, options->cluster);
    plan::check_runs_here(plan, options->plan_path);
    // Options that need others: refused by the launcher's pre-flight (--check) as here.
    elastic::check_adapting_run(*adapt, *hand_over, profiles_path->has_value(),
                                options->checkpoint_dir.has_value());
    std::optional<cost::ProfileDb> profiles;
    if (*profiles_path) profiles = cost::ProfileDb::load_for(**profiles_path, model.config().name);
    if (*check_only) {
      runtime::check_run(*options);
      out << fmt::format("{}: ready to train in {}\n", options->plan_path,
                         runtime::run_dtype(options->dtype, model.config().dtype));
      return;
    }
    const std::string dtype = runtime::run_dtype(options->dtype, model.config().dtype);
    report->steps = options->steps;
    report->tokens_per_step = plan.global_batch() * model.config().sequence_length(plan.seq_len);
    report->checkpoint_dir = options->checkpoint_dir;
    report->resume = options->resume;
    report->json = *format == OutputFormat::json;
    report->on_gpus = options->device == "cuda";
    // Costed in the dtype it trains in, whatever the model's own.
    const model::Model as_run = model.in_dtype(runtime::costed_dtype(dtype));
    report->lr_varies = lr.varies();
    report->precision = precision_text(dtype);
    report->recomputation = recomputation_text(plan);
    report->header = run_header(plan, options->plan_path, as_run, cluster.name(), dtype, *report) +
                     report::learning_rate_text(lr);
    TrainProgress progress(*report, report->json ? err : out);
    if (*adapt) {
      progress.adapt_with(std::make_unique<elastic::PlanAdapter>(
          elastic::AdaptInputs{plan, options->plan_path, as_run, cluster, options->cluster,
                               *profiles, elastic::elastic_directory(*options->checkpoint_dir),
                               options->steps, options->resume},
          *adapt_settings, report->json ? err : out));
    }
    if (*hand_over) {
      progress.hand_over_on_request(elastic::elastic_directory(*options->checkpoint_dir));
    }
    try {
      const auto record = runtime::train(*options, progress);
      if (record.stopped_by) {
        // As a shell reports a process a signal ended: 128 + the signal.
        throw CommandFailed(fmt::format("stopped by {} after step {}",
                                        signal_name(record.stopped_by), record.steps_done),
                            128 + record.stopped_by);
      }
      if (record.switching_plans) {
        // A planned end, not a failure: rank 0 says why, and exit 75 tells the launcher.
        if (record.reporter) {
          std::ostream& note = report->json ? err : out;
          if (progress.handed_over_for()) {
            note << fmt::format(
                "checkpointed after step {} for the launcher to go on with "
                "another plan: {}\n",
                record.steps_done, *progress.handed_over_for());
          } else {
            note << fmt::format(
                "checkpointed after step {} to go on with the adapted plan ({}/elastic/{}); "
                "`hyperpipe launch --adapt` resumes with it\n",
                record.steps_done, options->checkpoint_dir.value_or("?"), elastic::kSwitchFile);
          }
        }
        throw CommandFailed("", kExitPlanSwitch);
      }
      if (!record.reporter) return;
      progress.write_metrics();
      auto prediction = report::report_prediction(record, plan, as_run, cluster,
                                                  profiles ? &*profiles : nullptr, *report, out);
      if (report->json) {
        out << report::training_summary(record, *report, std::move(prediction)).dump(2) << '\n';
        return;
      }
      out << fmt::format("\ntrained {} in {}; recomputation: {}\n",
                         counted(record.steps_done - record.first_step, "step"), report->precision,
                         report->recomputation)
          << files_written_text(run_files(*report, record.measured_timeline.has_value()));
    } catch (const runtime::CommunicationError& error) {
      throw CommandFailed(error.what(), kExitInternalError);
    }
  });
}

}  // namespace hyperpipe::cli
