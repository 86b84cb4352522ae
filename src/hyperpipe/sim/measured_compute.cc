#include "hyperpipe/sim/measured_compute.h"

#include <algorithm>
#include <string>
#include <vector>

#include "hyperpipe/common/statistics.h"
#include "hyperpipe/schedule/op.h"

namespace hyperpipe::sim {
namespace {

std::optional<double> median_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return median(values);
}

// The pipeline and device group (its rank in the pipeline) holding `device`.
std::optional<std::pair<int, int>> holder_of(const plan::Plan& plan, int device) {
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const auto& pipeline = plan.pipeline(p);
    for (int r = 0; r < pipeline.ranks(); ++r) {
      const auto& devices = pipeline.stages[r].devices;
      if (std::find(devices.begin(), devices.end(), device) != devices.end()) {
        return std::pair{p, r};
      }
    }
  }
  return std::nullopt;
}

struct Durations {
  std::vector<double> forward, backward, backward_input, backward_weight, optimizer;
};

}  // namespace

MeasuredComputes measured_compute(const plan::Plan& plan, const trace::Timeline& measured) {
  std::map<std::pair<int, int>, Durations> durations;
  for (const auto& track : measured.tracks) {
    if (track.devices.empty()) continue;
    const auto holder = holder_of(plan, track.devices.front());
    if (!holder) continue;
    const auto [pipeline, rank] = *holder;
    double optimizer = 0;
    bool optimized = false;
    for (const auto& interval : track.compute) {
      const double seconds = interval.end - interval.start;
      if (interval.op == "optimizer") {  // the runtime times the norm and the update apart
        optimizer += seconds;
        optimized = true;
        continue;
      }
      if (interval.stage < 0) continue;
      Durations& stage = durations[{pipeline, interval.stage}];
      using schedule::letter, schedule::OpKind;
      if (interval.op == letter(OpKind::forward)) stage.forward.push_back(seconds);
      if (interval.op == letter(OpKind::backward)) stage.backward.push_back(seconds);
      if (interval.op == letter(OpKind::backward_input)) stage.backward_input.push_back(seconds);
      if (interval.op == letter(OpKind::backward_weight)) stage.backward_weight.push_back(seconds);
    }
    if (!optimized) continue;
    // The simulator adds a device group's chunks' optimizer steps; the run times them as one.
    const auto& stages = plan.pipeline(pipeline);
    for (int chunk = 0; chunk < stages.chunks; ++chunk) {
      durations[{pipeline, rank + chunk * stages.ranks()}].optimizer.push_back(
          chunk == 0 ? optimizer : 0.0);
    }
  }
  MeasuredComputes result;
  for (auto& [key, d] : durations) {
    result[key] = {median_of(d.forward), median_of(d.backward), median_of(d.backward_input),
                   median_of(d.backward_weight), median_of(d.optimizer)};
  }
  return result;
}

void apply_measured(const MeasuredCompute& measured, StageCost& cost) {
  if (measured.forward) cost.forward = *measured.forward;
  if (measured.backward_input) cost.backward_input = *measured.backward_input;
  if (measured.backward_weight) cost.backward_weight = *measured.backward_weight;
  if (measured.backward) {
    if (measured.backward_input && measured.backward_weight) {
      cost.split_extra = *measured.backward_input + *measured.backward_weight - *measured.backward;
    } else {
      // Only whole backwards ran: the simulator's BW is backward_input + backward_weight
      // − split_extra.
      cost.backward_input = *measured.backward;
      cost.backward_weight = 0;
      cost.split_extra = 0;
    }
  }
  if (measured.optimizer) cost.optimizer = *measured.optimizer;
}

}  // namespace hyperpipe::sim
