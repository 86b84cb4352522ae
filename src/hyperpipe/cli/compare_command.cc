// `hyperpipe compare`: a predicted timeline beside a measured one (the files `hyperpipe
// train --timeline` writes, NAME.json and NAME.predicted.json): per device group the
// compute, the time waiting on others and the iteration, predicted against measured, and
// one SVG with both Gantt charts on one time axis. Given the plan, also the replay: the
// plan simulated with the measured compute (sim/measured_compute.h).
#include <CLI/CLI.hpp>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/report/comparison_run.h"
#include "hyperpipe/report/timeline_comparison.h"

namespace hyperpipe::cli {

namespace {

struct CompareArgs {
  report::ComparisonRequest request;
  std::optional<std::string> svg;
  std::optional<std::string> trace;
  OutputFormat format = OutputFormat::table;
};

void run_compare(const CompareArgs& args, std::ostream& out) {
  const report::Comparison comparison = report::compare_files(args.request);
  const auto& [predicted, measured, document] = comparison;
  if (args.svg) write_file_atomically(*args.svg, report::both_charts(predicted, measured));
  if (args.trace) write_file_atomically(*args.trace, report::both_traces(predicted, measured));
  if (args.format == OutputFormat::json) {
    out << document.dump(2) << '\n';
    return;
  }
  report::print_comparison(document, out);
  if (args.svg) out << "  Both timelines: " << *args.svg << '\n';
  if (args.trace) out << "  Both as one trace: " << *args.trace << '\n';
}

}  // namespace

void add_compare_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* command = app.add_subcommand(
      "compare", "Put a predicted timeline beside a measured one, group by group");
  command
      ->add_option("--predicted", args->request.predicted,
                   "Predicted timeline (NAME.predicted.json from hyperpipe train --timeline)")
      ->required();
  command
      ->add_option("--measured", args->request.measured,
                   "Measured timeline (NAME.json from hyperpipe train --timeline)")
      ->required();
  command->add_option("--svg", args->svg, "Write both Gantt charts, one above the other, here");
  command->add_option("--trace", args->trace,
                      "Write both as one Chrome trace (Perfetto), a process each, here");
  command->add_option("--plan", args->request.plan,
                      "The run's plan: also replay it with the measured compute, to tell the "
                      "schedule and communication model's error from the profiles'");
  command->add_option("--profiles", args->request.profiles,
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
