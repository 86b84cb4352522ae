#include "hyperpipe/cli/timeline_comparison.h"

#include <fmt/format.h>

#include <algorithm>

#include "hyperpipe/cli/table.h"
#include "hyperpipe/common/quantity.h"

namespace hyperpipe::cli {

using nlohmann::json;

namespace {

// What one track did: compute (F, B, W, BW, optimizer), the gradient sums, and when it
// ended.
struct TrackFigures {
  double compute = 0;
  double sync = 0;  // the "allreduce" op (part of the idle time: a sum waits on the others)
  double end = 0;
};

TrackFigures figures(const trace::Track& track) {
  TrackFigures f;
  for (const auto& i : track.compute) {
    (i.op == "allreduce" ? f.sync : f.compute) += i.end - i.start;
    f.end = std::max(f.end, i.end);
  }
  for (const auto& i : track.communication) f.end = std::max(f.end, i.end);
  return f;
}

// The predicted track of the device group a measured process belongs to: the one whose
// devices include the process's device (measured tracks name one device each).
int matching_track(const trace::Timeline& predicted, const trace::Track& measured) {
  for (size_t t = 0; t < predicted.tracks.size(); ++t) {
    for (int device : measured.devices) {
      const auto& devices = predicted.tracks[t].devices;
      if (std::find(devices.begin(), devices.end(), device) != devices.end()) {
        return static_cast<int>(t);
      }
    }
  }
  return -1;
}

}  // namespace

json compare_timelines(const trace::Timeline& predicted, const trace::Timeline& measured) {
  json groups = json::array();
  std::vector<bool> seen(predicted.tracks.size(), false);
  for (const auto& track : measured.tracks) {
    const int t = matching_track(predicted, track);
    if (t < 0 || seen[t]) continue;  // one row per device group: its first process
    seen[t] = true;
    const auto p = figures(predicted.tracks[t]);
    const auto m = figures(track);
    groups.push_back({{"name", predicted.tracks[t].name},
                      {"predicted_compute_s", p.compute},
                      {"measured_compute_s", m.compute},
                      {"compute_error", m.compute > 0 ? p.compute / m.compute - 1 : 0.0},
                      {"predicted_sync_s", p.sync},
                      {"measured_sync_s", m.sync},
                      {"predicted_idle_s", predicted.end_time() - p.compute},
                      {"measured_idle_s", measured.end_time() - m.compute}});
  }
  const double p = predicted.end_time();
  const double m = measured.end_time();
  return {{"format", "hyperpipe.comparison/1"},
          {"predicted", predicted.title},
          {"measured", measured.title},
          {"predicted_iteration_s", p},
          {"measured_iteration_s", m},
          {"iteration_error", m > 0 ? p / m - 1 : 0.0},
          {"groups", groups}};
}

void print_comparison(const json& report, std::ostream& out) {
  // Idle is the iteration less compute: the bubble, waits for transfers and the gradient
  // sums, which are shown on their own too (a sum also waits for the slowest member).
  Table table({"Device group", ">Compute predicted", ">measured", ">error", ">Idle predicted",
               ">measured", ">of it sums, predicted", ">measured"});
  for (const auto& g : report["groups"]) {
    table.add_row({g["name"], format_duration(g["predicted_compute_s"].get<double>()),
                   format_duration(g["measured_compute_s"].get<double>()),
                   fmt::format("{:+.1f}%", 100 * g["compute_error"].get<double>()),
                   format_duration(g["predicted_idle_s"].get<double>()),
                   format_duration(g["measured_idle_s"].get<double>()),
                   format_duration(g["predicted_sync_s"].get<double>()),
                   format_duration(g["measured_sync_s"].get<double>())});
  }
  table.print(out, "  ");
  out << fmt::format("\n  Iteration: predicted {}, measured {}, error {:+.1f}%\n",
                     format_duration(report["predicted_iteration_s"].get<double>()),
                     format_duration(report["measured_iteration_s"].get<double>()),
                     100 * report["iteration_error"].get<double>());
  if (report.contains("replayed_iteration_s")) {
    out << fmt::format(
        "  Replayed with the measured compute: {}, error {:+.1f}% (the schedule and "
        "communication model alone)\n",
        format_duration(report["replayed_iteration_s"].get<double>()),
        100 * report["replayed_error"].get<double>());
  }
}

}  // namespace hyperpipe::cli
