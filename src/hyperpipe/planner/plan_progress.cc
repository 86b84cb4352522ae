#include "hyperpipe/planner/plan_progress.h"

#include <algorithm>
#include <utility>

namespace hyperpipe::planner {
namespace {

// Each phase's usual share of make_plan's time: the mean over issue 40's five rows
// (`hyperpipe plan … --format json`, "phases": gpt3-2.7b on a100-v100-t4 at 64 and 512,
// llama2-70b on h100-a100-islands and three-islands at 1024, llama2-7b on three-islands
// at 4096), measured on the 2-core development machine on 2026-12-06. The shares vary
// from row to row by a factor of two or more, so the time left they give is a guide.
// The peers' spaces (--explain): their mean share with the five phases at 1.
struct PhaseShare {
  const char* name;
  double share;
};
constexpr PhaseShare kPhaseShares[] = {
    {"search", 0.15},   {"first pass", 0.22}, {"schedules and refinement", 0.25},
    {"replicas", 0.28}, {"baselines", 0.10},  {"peers' spaces", 0.65},
};

double share_of(const std::string& phase) {
  for (const auto& [name, share] : kPhaseShares) {
    if (phase == name) return share;
  }
  return 0;
}

}  // namespace

PhaseClock::PhaseClock(std::vector<PlanPhase>& phases, std::vector<std::string> planned,
                       PlanProgressCallback report, const PlanSpace& space)
    : phases_(phases),
      planned_(std::move(planned)),
      report_(std::move(report)),
      space_(space),
      start_(std::chrono::steady_clock::now()),
      tally_(simulation_tally()),
      first_tally_(tally_) {}

void PhaseClock::step(int done, int total) {
  report(done, total);
}

void PhaseClock::offer(const ScoredPlan& scored) {
  if (!scored.fits || !within(scored.plan, space_)) return;
  if (best_ == 0 || scored.iteration_time() < best_) best_ = scored.iteration_time();
}

void PhaseClock::close(const std::string& name) {
  const auto now = std::chrono::steady_clock::now();
  const SimulationTally& tally = simulation_tally();
  phases_.push_back({name, std::chrono::duration<double>(now - start_).count(),
                     tally.simulations - tally_.simulations,
                     tally.simulated_ops - tally_.simulated_ops});
  start_ = now;
  tally_ = tally;
  report(0, 0);
}

void PhaseClock::finish() {
  if (!report_) return;
  report_({"done", 0, 0, 1.0, best_, simulation_tally().simulations - first_tally_.simulations});
}

void PhaseClock::report(int done, int total) {
  if (!report_ || planned_.empty()) return;
  double whole = 0;
  double behind = 0;
  for (size_t p = 0; p < planned_.size(); ++p) {
    whole += share_of(planned_[p]);
    if (p < phases_.size()) behind += share_of(planned_[p]);
  }
  const size_t current = std::min(phases_.size(), planned_.size() - 1);
  if (total > 0) behind += share_of(planned_[current]) * done / total;
  PlanProgress progress;
  progress.phase = planned_[current];
  progress.step = done;
  progress.steps = total;
  progress.fraction = whole > 0 ? std::min(1.0, behind / whole) : 0;
  progress.best_iteration = best_;
  progress.simulations = simulation_tally().simulations - first_tally_.simulations;
  report_(progress);
}

}  // namespace hyperpipe::planner
