// What a training run tells its caller, as plain data (no libtorch): each step's figures
// as it ends, and at the end the record of the run. Rank 0 reports; the CLI prints
// progress, keeps the metrics file and puts the simulator's prediction beside it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/trace/timeline.h"

namespace hyperpipe::runtime {

struct StepRecord {
  int64_t step = 0;              // counted from 0
  double loss = 0;               // mean cross-entropy over the global batch
  double grad_norm = 0;          // before clipping
  double seconds = 0;            // rank 0's iteration
  double loss_scale = 0;         // under loss scaling: the step's scale (0 without)
  bool skipped = false;          // under loss scaling: gradients not finite, no update
  double lr = 0;                 // the learning rate the step's update used
  double device_peak_bytes = 0;  // this process's device at its peak in the step (0: unknown)
};

// The validation loss after a step (TrainOptions::eval_interval).
struct ValidationRecord {
  int64_t step = 0;  // counted from 0: after this step's update
  double loss = 0;   // mean cross-entropy over the validation batches
};

struct TrainRecord {
  bool reporter = false;          // rank 0: the one whose record holds the timeline
  int64_t first_step = 0;         // 0, or the step after a resumed checkpoint
  std::vector<StepRecord> steps;  // the steps this run ran, in order
  std::vector<ValidationRecord> validations;
  int64_t steps_done = 0;  // counted from the run's start, resumed steps included
  // SIGINT, SIGTERM or SIGHUP when a stop signal ended the run early (after steps_done,
  // checkpointed when a checkpoint directory was given); 0 when it ran every step.
  int stopped_by = 0;
  // Rank 0's observer asked for another plan (TrainObserver::step_measured): every process
  // checkpointed after steps_done and ended, for the run to go on with it.
  bool switching_plans = false;
  // Rank 0, when the traced step ran: what every process did in it, one track per rank.
  std::optional<trace::Timeline> measured_timeline;
  int64_t traced_step = -1;  // counted from 0
  // Rank 0, with trace_steps > 1: those steps one after another, each process's steps on
  // its own clock (from when the first of them began).
  std::optional<trace::Timeline> measured_steps;
  int64_t first_traced_step = -1;
};

// Called on rank 0 only, at the moments named; every default does nothing.
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  // Start-up, in this order. Every process has joined, after `seconds` of waiting.
  virtual void joined(int /*processes*/, double /*seconds*/) {}
  // Rank 0's own layers as they are built: `built` of `total`.
  virtual void layer_built(int /*built*/, int /*total*/) {}
  // Before the first step: the checkpoint resumed from (and its steps), if any.
  virtual void started(const std::optional<std::string>& /*checkpoint*/, int64_t /*steps_done*/) {}
  virtual void step_done(const StepRecord& /*step*/) {}
  // After step `step` (from 0): the mean loss of the validation batches.
  virtual void evaluated(int64_t /*step*/, double /*validation_loss*/) {}
  // After the checkpoint of `steps_done` steps is whole on disk; rank 0's part of it took
  // `save_seconds` to copy and write (in the background, while steps ran).
  virtual void checkpoint_saved(int64_t /*steps_done*/, double /*save_seconds*/) {}
  // A stop signal ended the run after `steps_done` steps (checkpointed if it had a
  // directory).
  virtual void stopped(int /*signal_number*/, int64_t /*steps_done*/) {}
  // Each rank's compute (F, B, W, BW: seconds) in the step, by rank, after every step but
  // the last. Returning true asks every process to checkpoint at the next step boundary
  // and end, so the run can go on with another plan.
  virtual bool step_measured(int64_t /*step*/, const std::vector<double>& /*compute*/) {
    return false;
  }
  // Rank 0, once the checkpoint of `steps_done` steps (not the last) is begun: true asks every
  // process to end at this step boundary, so the run can go on with another plan from it.
  virtual bool hand_over_after_checkpoint(int64_t /*steps_done*/) { return false; }
  // The run ended after the checkpoint of `steps_done` steps, for another plan.
  virtual void switching(int64_t /*steps_done*/) {}
};

}  // namespace hyperpipe::runtime
