// `hyperpipe compare`: a predicted timeline beside a measured one (the files `hyperpipe
// train --timeline` writes, NAME.json and NAME.predicted.json): per device group the
// compute, the time waiting on others and the iteration, predicted against measured, and
// one SVG with both Gantt charts on one time axis. Given the plan, also the replay: the
// plan simulated with the measured compute (sim/measured_compute.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/report/timeline_comparison.h"
#include "hyperpipe/sim/plan_simulation.h"
#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"
#include "hyperpipe/trace/timeline_json.h"

namespace hyperpipe::cli {

using report::compare_timelines;
using report::matching_track;
using report::plan_mismatch;
using report::print_comparison;
namespace {

using nlohmann::json;

struct CompareArgs {
  std::string predicted;
  std::string measured;
  std::optional<std::string> svg;
  std::optional<std::string> trace;
  std::optional<std::string> plan;      // to replay
  std::optional<std::string> profiles;  // for what the replay does not take from the run
  OutputFormat format = OutputFormat::table;
};

trace::Timeline load_timeline(const std::string& path) {
  const json doc = json::parse(
      read_input_file(path, kMaxTimelineFileBytes, "a timeline (hyperpipe train --timeline)"),
      nullptr, false);
  if (doc.is_discarded()) throw InputError(path, "", "a JSON timeline document");
  return trace::timeline_from_json(doc, path);
}

// The plan's iteration on the simulator with the compute `measured` shows in place of the
// cost model's (transfers and gradient sums stay the model's, from the profiles if given).
double replayed_iteration(const CompareArgs& args, const trace::Timeline& measured) {
  const auto [plan, model, cluster] = plan::load_checked_plan(*args.plan);
  std::optional<cost::ProfileDb> profiles;
  if (args.profiles) profiles = cost::ProfileDb::load_for(*args.profiles, model.config().name);
  const cost::CostModel costs(model, cluster, {}, profiles ? &*profiles : nullptr);
  const sim::MeasuredComputes computes = sim::measured_compute(plan, measured);
  if (computes.empty()) {
    throw InputError(args.measured, "tracks",
                     fmt::format("processes on the devices of {}", *args.plan));
  }
  sim::SimOptions replay;
  replay.measured = &computes;
  return sim::simulate_plan(costs, plan, replay).output.iteration_time;
}

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

// Both in one Chrome trace, a process each: predicted, then measured.
std::string both_traces(const trace::Timeline& predicted, const trace::Timeline& measured) {
  trace::Timeline first = predicted;
  first.title = headed("predicted", predicted.title);
  trace::Timeline second = named_by_group(predicted, measured);
  second.title = headed("measured", measured.title);
  return trace::chrome_trace({&first, &second}).dump();
}

// Both charts on one time axis, predicted above measured.
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

void run_compare(const CompareArgs& args, std::ostream& out) {
  const auto predicted = load_timeline(args.predicted);
  const auto measured = load_timeline(args.measured);
  if (const auto why = plan_mismatch(predicted, measured)) {
    throw InputError(
        args.measured, "tracks",
        fmt::format("expected a run of the plan {} predicts; {}", args.predicted, *why));
  }
  json report = compare_timelines(predicted, measured);
  if (args.plan) {
    const double replayed = replayed_iteration(args, measured);
    const double end = measured.end_time();
    report["replayed_iteration_s"] = replayed;
    report["replayed_error"] = end > 0 ? replayed / end - 1 : 0.0;
  }
  if (args.svg) write_file_atomically(*args.svg, both_charts(predicted, measured));
  if (args.trace) write_file_atomically(*args.trace, both_traces(predicted, measured));
  if (args.format == OutputFormat::json) {
    out << report.dump(2) << '\n';
    return;
  }
  print_comparison(report, out);
  if (args.svg) out << "  Both timelines: " << *args.svg << '\n';
  if (args.trace) out << "  Both as one trace: " << *args.trace << '\n';
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
  command->add_option("--trace", args->trace,
                      "Write both as one Chrome trace (Perfetto), a process each, here");
  command->add_option("--plan", args->plan,
                      "The run's plan: also replay it with the measured compute, to tell the "
                      "schedule and communication model's error from the profiles'");
  command->add_option("--profiles", args->profiles,
                      "Profiles for the replay's transfers and sums (as the run had them)");
  add_format_option(*command, args->format);
  command->footer(
      "Example:\n"
      "  hyperpipe launch --plan plan.json --data corpus.txt --steps 10 --timeline run.json\n"
      "  hyperpipe compare --predicted run.predicted.json --measured run.json --svg both.svg\n"
      "  hyperpipe compare --predicted run.predicted.json --measured run.json --plan plan.json");
  command->callback([args, &out] { run_compare(*args, out); });
}

}  // namespace hyperpipe::cli
