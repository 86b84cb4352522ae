#include "hyperpipe/report/timeline_comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/report/table.h"
#include "hyperpipe/schedule/op.h"
#include "hyperpipe/sim/measured_compute.h"
#include "hyperpipe/sim/plan_simulation.h"
#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"

namespace hyperpipe::report {

using nlohmann::json;

namespace {

// What one track did: compute (F, B, W, BW, optimizer), the epilogue's gradient sums
// (each chunk's all-reduce, across pipelines, the tied embedding, the global norm: both
// engines put them on the communication track by the same names), and when it ended.
struct TrackFigures {
  double compute = 0;
  double sync = 0;  // time in the sums (a bucket may overlap compute; the rest waits on others)
  double tied = 0;  // of them, the tied embedding's
  double end = 0;
};

bool is_sum(const std::string& op) {
  using schedule::OpKind, schedule::timeline_label;
  for (const OpKind kind :
       {OpKind::all_reduce, OpKind::sync_replicas, OpKind::tied_embedding, OpKind::global_norm}) {
    if (op == timeline_label(kind)) return true;
  }
  return false;
}

TrackFigures figures(const trace::Track& track) {
  TrackFigures f;
  for (const auto& i : track.compute) {
    f.compute += i.end - i.start;
    f.end = std::max(f.end, i.end);
  }
  // The time covered by sums: buckets started together overlap each other, so each
  // moment counts once.
  std::vector<std::pair<double, double>> sums;
  for (const auto& i : track.communication) {
    if (is_sum(i.op)) sums.emplace_back(i.start, i.end);
    if (i.op == schedule::timeline_label(schedule::OpKind::tied_embedding)) {
      f.tied += i.end - i.start;
    }
    f.end = std::max(f.end, i.end);
  }
  std::sort(sums.begin(), sums.end());
  double covered_until = 0;
  for (const auto& [start, end] : sums) {
    const double from = std::max(start, covered_until);
    if (end > from) f.sync += end - from;
    covered_until = std::max(covered_until, end);
  }
  return f;
}

// What one track held: weights, gradients and optimizer state; the largest activations in
// flight (the largest sample over the first, taken as the step began); the rest of the
// first sample (reserved, or the process's own); the largest sample.
struct MemoryFigures {
  double static_bytes = 0;
  double activations = 0;
  double other = 0;
  double peak = 0;
};

std::optional<MemoryFigures> memory_figures(const trace::Track& track) {
  if (track.memory.empty()) return std::nullopt;
  MemoryFigures f;
  const double first = track.memory.front().bytes;
  for (const auto& sample : track.memory) f.peak = std::max(f.peak, sample.bytes);
  f.static_bytes = track.static_bytes;
  // A prediction's samples hold the allocator's reserve on what it hands out: the
  // activations are the model's without it, as a process's heap counts them.
  f.activations = (f.peak - first) / track.allocator_ratio;
  f.other = first - track.static_bytes;
  return f;
}

// A device peak predicted at less than half the measured one: a stand-in whose process's
// own memory no profile gave (cost::stand_in_defaults), not an error of the model.
constexpr double kUnpredictedProcessError = -0.5;

double relative_error(double predicted, double measured) {
  return measured > 0 ? predicted / measured - 1 : 0.0;
}

}  // namespace

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

std::optional<std::string> plan_mismatch(const trace::Timeline& predicted,
                                         const trace::Timeline& measured) {
  std::vector<bool> matched(predicted.tracks.size(), false);
  for (const auto& track : measured.tracks) {
    const int t = matching_track(predicted, track);
    if (t < 0) {
      return fmt::format("its track '{}' runs on devices the predicted timeline has none of",
                         track.name);
    }
    matched[t] = true;
    const auto& expected = predicted.tracks[t].ops;
    if (!track.ops.empty() && !expected.empty() && track.ops != expected) {
      return fmt::format(
          "its track '{}' ran {} ops where the predicted '{}' has {}{}: another plan or "
          "schedule",
          track.name, track.ops.size(), predicted.tracks[t].name, expected.size(),
          track.ops.size() == expected.size() ? " in another order" : "");
    }
  }
  for (size_t t = 0; t < predicted.tracks.size(); ++t) {
    if (!matched[t]) {
      return fmt::format("no track of it ran on the devices of the predicted '{}'",
                         predicted.tracks[t].name);
    }
  }
  return std::nullopt;
}

json compare_timelines(const trace::Timeline& predicted, const trace::Timeline& measured) {
  json groups = json::array();
  std::vector<bool> seen(predicted.tracks.size(), false);
  // The largest device peak any process of a group measured (the group's are alike but for
  // the tied embedding's and the head's shares).
  std::vector<double> device_peaks(predicted.tracks.size(), 0.0);
  for (const auto& track : measured.tracks) {
    const int t = matching_track(predicted, track);
    if (t >= 0) device_peaks[t] = std::max(device_peaks[t], track.device_peak_bytes);
  }
  for (const auto& track : measured.tracks) {
    const int t = matching_track(predicted, track);
    if (t < 0 || seen[t]) continue;  // one row per device group: its first process
    seen[t] = true;
    const auto p = figures(predicted.tracks[t]);
    const auto m = figures(track);
    json group{{"name", predicted.tracks[t].name},
               {"predicted_compute_s", p.compute},
               {"measured_compute_s", m.compute},
               {"compute_error", relative_error(p.compute, m.compute)},
               {"predicted_sync_s", p.sync},
               {"measured_sync_s", m.sync},
               {"predicted_tied_embedding_s", p.tied},
               {"measured_tied_embedding_s", m.tied},
               {"predicted_idle_s", predicted.end_time() - p.compute},
               {"measured_idle_s", measured.end_time() - m.compute}};
    const auto p_memory = memory_figures(predicted.tracks[t]);
    const auto m_memory = memory_figures(track);
    if (p_memory && m_memory) {
      group["predicted_static_bytes"] = p_memory->static_bytes;
      group["measured_static_bytes"] = m_memory->static_bytes;
      group["predicted_activation_bytes"] = p_memory->activations;
      group["measured_activation_bytes"] = m_memory->activations;
      group["activation_error"] = relative_error(p_memory->activations, m_memory->activations);
      group["predicted_other_bytes"] = p_memory->other;
      group["measured_other_bytes"] = m_memory->other;
      group["predicted_peak_bytes"] = p_memory->peak;
      group["measured_peak_bytes"] = m_memory->peak;
      // The peak without the "other" part, which is a GPU's reserved memory in the
      // prediction and the process's own heap in a CPU run: what compares on any host.
      group["model_peak_error"] = relative_error(p_memory->static_bytes + p_memory->activations,
                                                 m_memory->static_bytes + m_memory->activations);
    }
    if (p_memory && device_peaks[t] > 0) {
      // The device-level peak (cost/device_memory.h) against what the system saw.
      group["predicted_device_peak_bytes"] = p_memory->peak;
      group["measured_device_peak_bytes"] = device_peaks[t];
      group["device_peak_error"] = relative_error(p_memory->peak, device_peaks[t]);
    }
    groups.push_back(std::move(group));
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

namespace {

// Memory per device, where both timelines have it: the static part, the largest
// activations in flight and what else the device held, predicted against measured; and
// the whole device's peak where the processes measured it.
void print_memory(const json& report, std::ostream& out) {
  bool device_peaks = false;
  for (const auto& g : report["groups"]) device_peaks |= g.contains("device_peak_error");
  std::vector<std::string> header{"Device group",
                                  ">Weights+grads+optimizer predicted",
                                  ">measured",
                                  ">Activations predicted",
                                  ">measured",
                                  ">error",
                                  ">Static+activations error"};
  if (device_peaks) header.insert(header.end(), {">Device peak predicted", ">measured", ">error"});
  Table table(header);
  bool any = false;
  bool stand_in_unmeasured = false;
  const auto bytes = [](const json& group, const char* key) {
    return format_bytes(group.value(key, 0.0));
  };
  const auto percent = [](const json& group, const char* key) {
    return fmt::format("{:+.1f}%", 100 * group.value(key, 0.0));
  };
  for (const auto& g : report["groups"]) {
    if (!g.contains("measured_activation_bytes")) continue;
    any = true;
    std::vector<std::string> row{g["name"],
                                 bytes(g, "predicted_static_bytes"),
                                 bytes(g, "measured_static_bytes"),
                                 bytes(g, "predicted_activation_bytes"),
                                 bytes(g, "measured_activation_bytes"),
                                 percent(g, "activation_error"),
                                 percent(g, "model_peak_error")};
    if (device_peaks) {
      row.insert(
          row.end(),
          {bytes(g, "predicted_device_peak_bytes"), bytes(g, "measured_device_peak_bytes"),
           g.contains("device_peak_error") ? percent(g, "device_peak_error") : std::string("-")});
      stand_in_unmeasured |= g.value("device_peak_error", 0.0) < kUnpredictedProcessError;
    }
    table.add_row(row);
  }
  if (!any) return;
  out << "\n  Memory per device, largest in the step (device peak: a GPU's allocator reserve "
         "and what lies outside it, a CPU process's resident set):\n";
  table.print(out, "  ");
  if (stand_in_unmeasured) {
    out << "  A CPU stand-in's own process (libtorch, its threads, Gloo) is predicted only from "
           "measured figures: hyperpipe profile --memory --model M --cluster C --out P, then "
           "--profiles P.\n";
  }
}

}  // namespace

void print_comparison(const json& report, std::ostream& out, bool times) {
  if (!times) {
    print_memory(report, out);
    return;
  }
  // Idle is the iteration less compute: the bubble, waits for transfers and the gradient
  // sums, which are shown on their own too (a sum also waits for the slowest member); the
  // tied embedding's sum apart where a group has one.
  bool tied = false;
  for (const auto& g : report["groups"]) {
    tied = tied || g.value("predicted_tied_embedding_s", 0.0) > 0 ||
           g.value("measured_tied_embedding_s", 0.0) > 0;
  }
  std::vector<std::string> header{"Device group",    ">Compute predicted", ">measured",
                                  ">error",          ">Idle predicted",    ">measured",
                                  ">Sums predicted", ">measured"};
  if (tied) {
    header.insert(header.end(), {">of them tied embedding, predicted", ">measured"});
  }
  Table table(header);
  const auto duration = [](const json& group, const char* key) {
    return format_duration(group.value(key, 0.0));
  };
  for (const auto& g : report["groups"]) {
    std::vector<std::string> row{g["name"],
                                 duration(g, "predicted_compute_s"),
                                 duration(g, "measured_compute_s"),
                                 fmt::format("{:+.1f}%", 100 * g["compute_error"].get<double>()),
                                 duration(g, "predicted_idle_s"),
                                 duration(g, "measured_idle_s"),
                                 duration(g, "predicted_sync_s"),
                                 duration(g, "measured_sync_s")};
    if (tied) {
      row.push_back(duration(g, "predicted_tied_embedding_s"));
      row.push_back(duration(g, "measured_tied_embedding_s"));
    }
    table.add_row(row);
  }
  table.print(out, "  ");
  print_memory(report, out);
  // The compared step's own, beside the report's median of the steps.
  out << fmt::format("\n  This step's iteration: predicted {}, measured {}, error {:+.1f}%\n",
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

namespace {

// The measured run with each process named after its device group as the prediction
// names it, and its rank ("stage 1: V100-16GB ×2 [2-3] · rank 3").
trace::Timeline named_by_group(const trace::Timeline& predicted, const trace::Timeline& measured) {
  trace::Timeline renamed = measured;
  for (auto& track : renamed.tracks) {
    const int group = matching_track(predicted, track);
    const std::string rank = track.name.substr(0, track.name.find(':'));
    track.name = fmt::format("{} · {}", predicted.tracks[group].name, rank);
  }
  return renamed;
}

// A timeline's title without the " (measured)" or " (predicted)" it ends with, for a
// chart that says so once, in its heading ("tiny-gpt on cpu-emulated: step 3 (measured)").
std::string without_word(const std::string& title, const std::string& word) {
  const std::string suffix = " (" + word + ")";
  const bool ends_so = title.size() >= suffix.size() &&
                       title.compare(title.size() - suffix.size(), suffix.size(), suffix) == 0;
  return ends_so ? title.substr(0, title.size() - suffix.size()) : title;
}

std::string headed(const std::string& word, const std::string& title) {
  return word + ": " + without_word(title, word);
}

}  // namespace

std::optional<double> replayed_iteration(const cost::CostModel& costs, const plan::Plan& plan,
                                         const trace::Timeline& measured) {
  const sim::MeasuredComputes computes = sim::measured_compute(plan, measured);
  if (computes.empty()) return std::nullopt;
  sim::SimOptions replay;
  replay.measured = &computes;
  return sim::simulate_plan(costs, plan, replay).output.iteration_time;
}

void add_replay(nlohmann::json& report, double replayed, const trace::Timeline& measured) {
  const double end = measured.end_time();
  report["replayed_iteration_s"] = replayed;
  report["replayed_error"] = end > 0 ? replayed / end - 1 : 0.0;
}

std::string both_traces(const trace::Timeline& predicted, const trace::Timeline& measured) {
  trace::Timeline first = predicted;
  first.title = headed("predicted", predicted.title);
  trace::Timeline second = named_by_group(predicted, measured);
  second.title = headed("measured", measured.title);
  return trace::chrome_trace({&first, &second}).dump();
}

std::string both_charts(const trace::Timeline& predicted, const trace::Timeline& measured) {
  const trace::Timeline renamed = named_by_group(predicted, measured);
  const double predicted_end = predicted.end_time();
  const double measured_end = measured.end_time();
  const std::string subtitle =
      fmt::format("iteration predicted {}, measured {} ({:+.1f}%)", format_duration(predicted_end),
                  format_duration(measured_end),
                  measured_end > 0 ? 100 * (predicted_end / measured_end - 1) : 0.0);
  return trace::svg_gantt(without_word(measured.title, "measured"), subtitle,
                          {{headed("predicted", predicted.title), &predicted},
                           {headed("measured", measured.title), &renamed}});
}

}  // namespace hyperpipe::report
