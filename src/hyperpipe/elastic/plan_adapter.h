// `train --adapt`: rank 0 watches each device's compute against what the plan was made
// for (the simulator's busy time per device group, from the run's profiles). When a
// device stays slower or faster than that by more than a threshold for several steps
// (throttling, a co-tenant, a replacement of another speed), it plans again with the
// measured speeds and, if the new plan's predicted gain over the rest of the run pays for
// the switch (estimated from this run's own: a save, and a start from its process's launch
// to its first step), writes it and asks the run to checkpoint and end; `launch --adapt`
// then resumes with it. Plain types: no libtorch.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/planner/replan.h"

namespace hyperpipe::elastic {

// A device 15% slower than planned is about the spread of one GPU type's parts and
// clocks (and of this host's own drift over a minute, docs/guide/performance.md): less is noise.
inline constexpr double kDefaultAdaptThreshold = 0.15;
// Steps in a row before acting: one slow step is a hiccup (a checkpoint, a page fault).
inline constexpr int kDefaultAdaptSteps = 5;
// The least predicted gain worth a switch, as a share of the iteration.
inline constexpr double kDefaultAdaptGain = 0.05;

// Where a switch is written, beside the checkpoints, for the launcher.
inline constexpr const char* kSwitchFile = "switch.json";
inline constexpr const char* kSwitchFormat = "hyperpipe.switch/1";
// The speeds the latest adapted plan was made for, so the run that resumes with it
// measures against them instead of the profiles alone.
inline constexpr const char* kPlannedSpeedsFile = "planned_speeds.json";

struct AdaptSettings {
  double threshold = kDefaultAdaptThreshold;
  int steps = kDefaultAdaptSteps;
  double gain = kDefaultAdaptGain;
};

// What a run that adapts its plan (train --adapt) or hands over when its launcher asks
// (--hand-over-on-request) needs beside: the profiles the plan was made for and a
// checkpoint directory to go on from. InputError naming the option otherwise.
void check_adapting_run(bool adapt, bool hand_over_on_request, bool has_profiles,
                        bool has_checkpoint_dir);

struct AdaptInputs {
  plan::Plan plan;
  std::string plan_path;
  model::Model model;  // as the run computes it (its dtype)
  cluster::Cluster cluster;
  std::optional<std::string> cluster_option;  // train --cluster, if given
  cost::ProfileDb profiles;
  std::string elastic_dir;  // CHECKPOINT_DIR/elastic
  int64_t steps = 0;        // of the whole run
  bool resumed = false;     // the run resumed: the speeds its plan was made for may be on file
};

// Whether a device stayed off the speed it was planned for (`planned_for`, 1: its profile)
// by more than `threshold` at each of its last `steps` speeds measured (`recent`: expected
// ÷ measured compute, newest last): slower, it should get less work; faster, more.
bool drifted(const std::deque<double>& recent, int steps, double planned_for, double threshold);

// Whether a plan predicted to take `after` an iteration, in place of `before`, is worth a
// switch that costs `switch_cost` seconds: it gains at least `min_gain` of the iteration and
// pays the switch back within the `steps_left` steps left after it.
struct SwitchVerdict {
  bool pays = false;
  double payback_steps = 0;  // steps until the gain pays the cost back (infinite: never)
  std::string why_not;       // when it does not pay
};
SwitchVerdict switch_verdict(double before, double after, double switch_cost, int64_t steps_left,
                             double min_gain);

class PlanAdapter {
 public:
  PlanAdapter(AdaptInputs inputs, AdaptSettings settings, std::ostream& out);

  // Each rank's compute in `step`, by rank; `switch_cost`: seconds a switch is expected to
  // take. True when the run should switch to the plan written to kSwitchFile.
  bool measured(int64_t step, const std::vector<double>& compute, double switch_cost);

 private:
  // Plans again at the speeds measured; true when the new plan pays and is written.
  bool consider(int64_t step, const planner::DeviceSpeeds& speeds, double switch_cost);

  AdaptInputs inputs_;
  AdaptSettings settings_;
  std::ostream& out_;
  std::vector<int> device_of_rank_;
  std::vector<double> expected_;            // compute per rank, seconds
  std::vector<std::deque<double>> recent_;  // expected ÷ measured, by rank
  planner::DeviceSpeeds accepted_;          // speeds already planned for
};

}  // namespace hyperpipe::elastic
