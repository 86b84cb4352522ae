// `hyperpipe compare`: a predicted timeline beside a measured one (the files `hyperpipe
// train --timeline` writes, NAME.json and NAME.predicted.json): per device group the
// compute, the time waiting on others and the iteration, predicted against measured, and
// one SVG with both Gantt charts on one time axis.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cli/table.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/trace/svg_gantt.h"
#include "hyperpipe/trace/timeline_json.h"

namespace hyperpipe::cli {
namespace {

using nlohmann::json;

struct CompareArgs {
  std::string predicted;
  std::string measured;
  std::optional<std::string> svg;
  OutputFormat format = OutputFormat::table;
};

trace::Timeline load_timeline(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "a readable timeline (hyperpipe train --timeline)");
  const json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded()) throw InputError(path, "", "a JSON timeline document");
  return trace::timeline_from_json(doc, path);
}

// What one track did: compute (F, B, W, BW, optimizer) and the rest of the iteration.
struct TrackFigures {
  double compute = 0;
  double end = 0;
};

TrackFigures figures(const trace::Track& track) {
  TrackFigures f;
  for (const auto& i : track.compute) {
    if (i.op != "allreduce") f.compute += i.end - i.start;  // a sum waits on the others
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

json compare(const trace::Timeline& predicted, const trace::Timeline& measured) {
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

void run_compare(const CompareArgs& args, std::ostream& out) {
  const auto predicted = load_timeline(args.predicted);
  const auto measured = load_timeline(args.measured);
  const json report = compare(predicted, measured);
  if (args.svg) {
    // Both charts on one time axis: the predicted rows, then the measured ones.
    trace::Timeline both;
    both.title = fmt::format("predicted (top) and measured (bottom): {}", measured.title);
    for (auto track : predicted.tracks) {
      track.name = "predicted · " + track.name;
      both.tracks.push_back(std::move(track));
    }
    for (auto track : measured.tracks) {
      track.name = "measured · " + track.name;
      both.tracks.push_back(std::move(track));
    }
    write_file_atomically(*args.svg, trace::svg_gantt(both));
  }
  if (args.format == OutputFormat::json) {
    out << report.dump(2) << '\n';
    return;
  }
  Table table({"Device group", ">Compute predicted", ">measured", ">error", ">Idle predicted",
               ">measured"});
  for (const auto& g : report["groups"]) {
    table.add_row({g["name"], format_duration(g["predicted_compute_s"].get<double>()),
                   format_duration(g["measured_compute_s"].get<double>()),
                   fmt::format("{:+.1f}%", 100 * g["compute_error"].get<double>()),
                   format_duration(g["predicted_idle_s"].get<double>()),
                   format_duration(g["measured_idle_s"].get<double>())});
  }
  table.print(out, "  ");
  out << fmt::format("\n  Iteration: predicted {}, measured {}, error {:+.1f}%\n",
                     format_duration(report["predicted_iteration_s"].get<double>()),
                     format_duration(report["measured_iteration_s"].get<double>()),
                     100 * report["iteration_error"].get<double>());
  if (args.svg) out << "  Both timelines: " << *args.svg << '\n';
}

}  // namespace

void add_compare_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* command = app.add_subcommand(
      "compare", "Put a predicted timeline beside a measured one, group by group");
  command
      ->add_option("--predicted", args->predicted,
                   "Predicted timeline (NAME.predicted.json from hyperpipe train --timeline)")
      ->required();
  command
      ->add_option("--measured", args->measured,
                   "Measured timeline (NAME.json from hyperpipe train --timeline)")
      ->required();
  command->add_option("--svg", args->svg, "Write both Gantt charts, one above the other, here");
  add_format_option(*command, args->format);
  command->footer(
      "Example:\n"
      "  hyperpipe launch --plan plan.json --data corpus.txt --steps 10 --timeline run.json\n"
      "  hyperpipe compare --predicted run.predicted.json --measured run.json --svg both.svg");
  command->callback([args, &out] { run_compare(*args, out); });
}

}  // namespace hyperpipe::cli
