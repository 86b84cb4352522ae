// `hyperpipe train`: one process of a run (started by `hyperpipe launch`, torchrun,
// mpirun or srun; alone it is a one-process run of a one-device plan).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "hyperpipe/cli/app.h"
#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cli/train_progress.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/stop_signals.h"
#include "hyperpipe/elastic/elastic_run.h"
#include "hyperpipe/launch/parent_watch.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/report/run_summary.h"
#include "hyperpipe/report/training_report.h"
#include "hyperpipe/runtime/trainer.h"

namespace hyperpipe::cli {

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
  CLI::App* command = app.add_subcommand(
      "train", "Train with a plan: this process's device of it (see `hyperpipe launch`)");
  command->add_option("--plan", options->plan_path, "Plan file")->required();
  command
      ->add_option("--data", options->data_path,
                   "Text file to train on (bytes as tokens unless --tokenizer), JSON lines "
                   "(.jsonl/.ndjson/.json: a document per line), or a Megatron-LM indexed "
                   "dataset (PREFIX, with PREFIX.bin and PREFIX.idx: token ids)")
      ->required();
  command->add_option("--tokenizer", options->tokenizer,
                      "Tokenize text and JSON lines with: a SentencePiece .model, a "
                      "tokenizer.json, a GPT-2 vocab.json (merges.txt beside it), or a "
                      "directory holding one; each document ends with its end-of-document "
                      "token where it has one");
  command->add_option("--json-key", options->json_key, "The JSON lines' field holding the text")
      ->capture_default_str();
  command->add_option("--cluster", options->cluster, "Cluster instead of the plan's");
  command->add_option("--steps", options->steps, "Training steps")
      ->default_val(10)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--eval-interval", options->eval_interval,
                   "Every this many steps (and after the last), the validation loss and "
                   "perplexity on windows of the data held out of training (0: no validation; "
                   "Megatron-LM's --eval-interval)")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--eval-iters", options->eval_iters,
                   "Validation batches (each a global batch) per evaluation: eval-iters × "
                   "global batch windows are held out of training (Megatron-LM's --eval-iters)")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  auto& optimizer = options->optimizer;
  command
      ->add_option("--lr", optimizer.lr.max_lr, "AdamW learning rate (the peak, with a schedule)")
      ->default_val(1e-3)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--min-lr", optimizer.lr.min_lr,
                   "The learning rate a decay ends at and holds (Megatron-LM's --min-lr)")
      ->default_val(0.0)
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--lr-warmup-iters", optimizer.lr.warmup_iters,
                   "Steps of linear warm-up from 0 to --lr (Megatron-LM's; the first step's rate "
                   "is 0)")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber);
  auto decay_style = std::make_shared<std::string>("constant");
  command
      ->add_option("--lr-decay-style", *decay_style,
                   "After the warm-up: constant, linear or cosine decay to --min-lr")
      ->capture_default_str()
      ->check(CLI::IsMember({"constant", "linear", "cosine"}));
  auto decay_iters = std::make_shared<std::optional<int64_t>>();
  command
      ->add_option("--lr-decay-iters", *decay_iters,
                   "Steps from the start to the end of the decay, warm-up included (default: "
                   "--steps)")
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
  command
      ->add_option("--dtype", options->dtype,
                   "bf16 or fp16 (mixed precision: fp32 master weights, gradients and AdamW "
                   "state), fp32, or fp64 to compare runs exactly (default: the model's dtype)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32", "fp64"}));
  command->add_option("--loss-scale", options->loss_scale,
                      "Dynamic loss scaling from this initial scale (default: 65536 in fp16, "
                      "none otherwise)");
  command
      ->add_option("--loss-scale-interval", options->loss_scale_interval,
                   "Steps without inf/nan gradients before the loss scale doubles")
      ->default_val(runtime::LossScaling{}.growth_interval)
      ->check(CLI::PositiveNumber);
  auto check_only = std::make_shared<bool>(false);
  command->add_flag("--check", *check_only,
                    "Check the options, plan, model, cluster, data (token ids against the "
                    "vocabulary), checkpoint directory and dtype (that this machine's libtorch "
                    "computes it) and exit; `hyperpipe launch` does so once before it starts "
                    "any process");
  command->add_option("--threads", options->threads, "Intra-op threads per process")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--timeout", *timeout_seconds,
                   "Seconds to wait for a peer before giving up on it")
      ->default_val(60.0)
      ->check(CLI::PositiveNumber);
  command->add_option("--metrics", report->metrics_path, "Write per-step metrics (JSON lines)");
  command->add_option("--tensorboard", report->tensorboard_dir,
                      "Write the steps' scalars (loss, learning rate, grad norm, step time, "
                      "tokens/s, rank 0's device peak) as a TensorBoard event file in this "
                      "directory (`tensorboard --logdir DIR`)");
  command->add_option("--startup-record", report->startup_record_path,
                      "Write when the run joined, built its layers, loaded its checkpoint and "
                      "finished its first step (JSON, hyperpipe.startup/1; `launch --elastic` "
                      "times its recoveries with it)");
  command->add_option("--trace", report->trace_path, "Write the measured timeline (Chrome trace)");
  command->add_option("--svg", report->svg_path, "Write the measured timeline as an SVG chart");
  command->add_option("--timeline", report->timeline_path,
                      "Write the measured timeline as JSON (hyperpipe.timeline/1)");
  command->add_option("--trace-step", options->trace_step,
                      "The step drawn by --trace/--svg/--timeline and compared with the prediction "
                      "(default: the median of the last 32)");
  command
      ->add_option("--trace-steps", options->trace_steps,
                   "Steps drawn one after another by --trace and --svg: from --trace-step, "
                   "else the run's last (--timeline and the comparison keep one step)")
      ->default_val(1)
      ->check(positive_integer());
  command->add_option("--profiles", *profiles_path,
                      "Profiles for the predicted iteration printed at the end "
                      "(hyperpipe profile); without, the cost model's estimates");
  command->add_option("--checkpoint-dir", options->checkpoint_dir, "Save checkpoints here");
  command
      ->add_option("--checkpoint-every", options->checkpoint_every,
                   "Save every this many steps (and at the end)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--init-from", options->init_from,
                      "Start from a Hugging Face checkpoint's weights: its directory (config.json "
                      "and model.safetensors, or shards with their index); each process reads "
                      "only its own layers' tensors. A checkpoint --resume finds wins over it");
  command->add_option("--logits", options->logits_dir,
                      "Write the last stage's logits of the run's first step (whole vocabulary, "
                      "fp32) with the token ids they came from, one safetensors file per "
                      "data-parallel rank, into this folder: to hold the model against a "
                      "reference implementation on the same tokens");
  command->add_flag("--resume", options->resume,
                    "Continue from the last complete checkpoint in --checkpoint-dir (of the "
                    "same model, seed and data)");
  auto adapt = std::make_shared<bool>(false);
  auto adapt_settings = std::make_shared<elastic::AdaptSettings>();
  command->add_flag(
      "--adapt", *adapt,
      "Re-plan when a device stays slower or faster than its profile (needs --profiles and "
      "--checkpoint-dir): where the new plan pays for the switch, checkpoint, write "
      "it and exit 75 for `hyperpipe launch --adapt` to resume with it");
  command
      ->add_option("--adapt-threshold", adapt_settings->threshold,
                   "With --adapt: how much slower or faster than its profile a device must be")
      ->default_val(elastic::kDefaultAdaptThreshold)
      ->check(CLI::Range(0.01, 0.99));
  command
      ->add_option("--adapt-steps", adapt_settings->steps,
                   "With --adapt: for this many steps in a row")
      ->default_val(elastic::kDefaultAdaptSteps)
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--adapt-gain", adapt_settings->gain,
                   "With --adapt: the least predicted gain, as a share of the iteration, worth "
                   "a switch")
      ->default_val(elastic::kDefaultAdaptGain)
      ->check(CLI::Range(0.0, 1.0));
  auto hand_over = std::make_shared<bool>(false);
  command->add_flag("--hand-over-on-request", *hand_over,
                    "After each checkpoint, end (exit 75) if `hyperpipe launch --elastic` asks in "
                    "CHECKPOINT_DIR/elastic/handover.json (it has a plan with devices that "
                    "joined); the elastic launcher passes it");
  command
      ->add_option("--checkpoint-write-delay", options->checkpoint_write_delay,
                   "Seconds each checkpoint's writing thread waits before it writes (emulated "
                   "slow storage, for tests and benchmarks of asynchronous saves)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--stand-in-speeds", options->stand_in_speeds,
                      "A file of `DEVICE SPEED` lines, read at each step boundary when it "
                      "changes: the stand-in on that device computes at that speed from then on "
                      "(emulated throttling)");
  auto no_placement_check = std::make_shared<bool>(false);
  command->add_flag("--no-placement-check", *no_placement_check,
                    "Start even where a process's CUDA device is not of its stage's GPU type, "
                    "or the processes of one node of the cluster file run on several hosts");
  command->add_flag("--overwrite", options->overwrite,
                    "Replace the checkpoints an earlier run left in --checkpoint-dir");
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
    lr.style = *runtime::parse_lr_decay_style(*decay_style);
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
    if (*adapt && (!*profiles_path || !options->checkpoint_dir)) {
      throw InputError("--adapt", "",
                       "--profiles (the speeds the plan was made for) and --checkpoint-dir "
                       "(where the run goes on from)");
    }
    if (*hand_over && !options->checkpoint_dir) {
      throw InputError("--hand-over-on-request", "",
                       "--checkpoint-dir (the launcher asks in it, and the run goes on from it)");
    }
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
    report->tokens_per_step =
        plan.global_batch() * (plan.seq_len > 0 ? plan.seq_len : model.config().seq_len);
    report->checkpoint_dir = options->checkpoint_dir;
    report->resume = options->resume;
    report->json = *format == OutputFormat::json;
    report->on_gpus = options->device == "cuda";
    // Costed in the dtype it trains in, whatever the model's own.
    const model::Model as_run = model.in_dtype(runtime::costed_dtype(dtype));
    report->lr_varies = lr.warmup_iters > 0 || lr.style != runtime::LrDecayStyle::constant;
    report->precision = precision_text(dtype);
    report->recomputation = recomputation_text(plan);
    report->header = run_header(plan, options->plan_path, as_run, cluster.name(), dtype, *report);
    if (report->lr_varies) {
      report->header += fmt::format(
          "learning rate: {:g}{}{}\n", lr.max_lr,
          lr.warmup_iters > 0
              ? fmt::format(" after {} of warm-up from 0", counted(lr.warmup_iters, "step"))
              : "",
          lr.style == runtime::LrDecayStyle::constant
              ? ""
              : fmt::format(", {} decay to {:g} at step {}", runtime::to_string(lr.style),
                            lr.min_lr, lr.decay_iters));
    }
    TrainProgress progress(*report, report->json ? err : out);
    if (*adapt) {
      progress.adapt_with(std::make_unique<elastic::PlanAdapter>(
          elastic::AdaptInputs{
              plan, options->plan_path, as_run, cluster, options->cluster, *profiles,
              (std::filesystem::path(*options->checkpoint_dir) / elastic::kElasticDirectory)
                  .string(),
              options->steps, options->resume},
          *adapt_settings, report->json ? err : out));
    }
    if (*hand_over) {
      progress.hand_over_on_request(
          (std::filesystem::path(*options->checkpoint_dir) / elastic::kElasticDirectory).string());
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
