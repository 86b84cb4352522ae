// The decisions of an elastic run, apart from the processes and files that carry them out
// (elastic_run.h): which devices the run has and which GPU slot each keeps, whether it goes
// on after a loss and with which plan, and what a device offered gets. Driven by the events
// it is given (devices lost, a device offered, an agent gone, a hand-over at a checkpoint,
// a plan switched); no process, file or clock of its own, so every rule is testable alone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/elastic/joins.h"
#include "hyperpipe/elastic/plan_adapter.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/planner/replan.h"

namespace hyperpipe::elastic {

// torchrun's --max-restarts defaults to 0 (fail on the first loss); an elastic run is
// asked for to survive losses, and three is torchrun's documented example value.
inline constexpr int kDefaultMaxRestarts = 3;

struct SupervisorRules {
  int max_restarts = kDefaultMaxRestarts;
  int min_devices = 1;
  double join_gain = kDefaultAdaptGain;     // a plan with a device offered must gain this
  std::optional<int64_t> checkpoint_every;  // the run's cadence, for the answers' words
};

// What the run is: its first plan (model and cluster named as its later plans name them),
// the model as it computes it, its cluster and profiles.
struct SupervisedRun {
  plan::Plan plan;
  model::Model model;
  cluster::Cluster cluster;
  std::optional<cost::ProfileDb> profiles;
};

// A plan the run goes on with: the planner's answer, and the iteration predicted for the
// plan it replaces.
struct PlanChange {
  planner::Replanned replanned;
  double before = 0;
};

// A device offered: the answer for whoever offered it, and when a plan with it pays, why
// the run should hand over to it after its next checkpoint.
struct Offered {
  JoinAnswer answer;
  std::optional<std::string> hand_over;
};

class Supervisor {
 public:
  // `log`: the supervisor's lines ("[elastic] …"), as it decides.
  Supervisor(SupervisedRun run, SupervisorRules rules, std::ostream& log);

  const plan::Plan& plan() const { return plan_; }
  const cluster::Cluster& cluster() const { return run_.cluster; }
  // Devices not lost, spares offered since included; ascending.
  const std::vector<int>& available() const { return available_; }
  // Devices offered since the last plan was made.
  const std::vector<int>& joined() const { return joined_; }
  // The process slot, and so the GPU (LOCAL_RANK), a device first had: it keeps it.
  int local_rank(int device) const { return local_rank_of_.at(device); }
  int losses() const { return losses_; }

  // Across hosts: only `devices` (the leader's) are the run's at first; the others become
  // the run's as their agents offer them.
  void start_with(std::vector<int> devices);
  // The plan's devices not (yet) the run's.
  std::vector<int> missing() const;
  // The first round begins: from now an offer may hand over.
  void start() { started_ = true; }

  // `devices` were lost (`what`, for `how`; a rank that failed with `exit_code`, or a host):
  // a restart is counted and the run is planned again on the devices left. Throws
  // CommandFailed (with `exit_code`) when the restarts --max-restarts allows are used up or
  // fewer than --min-devices are left, InputError when no plan fits those left.
  PlanChange lose(const std::vector<int>& devices, const std::string& what, const std::string& how,
                  int exit_code);

  // Before the first round, the plan's devices no agent offered in `waited_seconds`: the run
  // is planned without them (or ends as lose() would).
  PlanChange go_on_without_missing(double waited_seconds);

  // A device offered (`hyperpipe join` or an agent): refused when it cannot be in the run;
  // else kept, and before the start in the run from its start. After the start it hands
  // over when a plan with it is predicted --adapt-gain faster, else stays a spare that the
  // next plan (after a loss) uses.
  Offered offer(int device);

  // An agent went with `devices`: they are no longer the run's.
  void withdraw(const std::vector<int>& devices);

  // The run handed over at a checkpoint for the devices joined: the plan of every device
  // there.
  PlanChange take_joined();

  // The run switched to `plan` (its rank 0 adapted it, train --adapt) on the same devices.
  void switch_to(plan::Plan plan);

  double predicted_iteration(const plan::Plan& plan) const;

 private:
  planner::Replanned plan_available() const;
  PlanChange adopt(planner::Replanned replanned);
  void log(const std::string& text) const;

  SupervisedRun run_;
  SupervisorRules rules_;
  std::ostream& log_;
  plan::Plan plan_;  // the plan running now
  std::map<int, int> local_rank_of_;
  std::vector<int> available_;  // ascending
  std::vector<int> joined_;
  int losses_ = 0;  // restarts after a loss (switches of plan aside)
  bool started_ = false;
};

// Why a device offered by `hyperpipe join` is not this launcher's to take, across hosts
// (`across_hosts`) where `host` has it now (kLeaderName: this one; none: no host); nothing
// when it is.
std::optional<std::string> join_route_refusal(int device, bool across_hosts,
                                              const std::optional<std::string>& host);

}  // namespace hyperpipe::elastic
