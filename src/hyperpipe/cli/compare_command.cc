// `hyperpipe compare`: a predicted timeline beside a measured one (the files `hyperpipe
// train --timeline` writes, NAME.json and NAME.predicted.json): per device group the
// compute, the time waiting on others and the iteration, predicted against measured, and
// one SVG with both Gantt charts on one time axis. Given the plan, also the replay: the
// plan simulated with the measured compute (sim/measured_compute.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/report/timeline_comparison.h"
#include "hyperpipe/trace/timeline_json.h"

namespace hyperpipe::cli {

using report::compare_timelines;
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

// The plan's iteration replayed with the measured compute (report::replayed_iteration).
double replayed_iteration(const CompareArgs& args, const trace::Timeline& measured) {
  const auto [plan, model, cluster] = plan::load_checked_plan(*args.plan);
  std::optional<cost::ProfileDb> profiles;
  if (args.profiles) profiles = cost::ProfileDb::load_for(*args.profiles, model.config().name);
  const cost::CostModel costs(model, cluster, {}, profiles ? &*profiles : nullptr);
  const auto replayed = report::replayed_iteration(costs, plan, measured);
  if (!replayed) {
    throw InputError(args.measured, "tracks",
                     fmt::format("processes on the devices of {}", *args.plan));
  }
  return *replayed;
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
  if (args.plan) report::add_replay(report, replayed_iteration(args, measured), measured);
  if (args.svg) write_file_atomically(*args.svg, report::both_charts(predicted, measured));
  if (args.trace) write_file_atomically(*args.trace, report::both_traces(predicted, measured));
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
