// `hyperpipe simulate`: a plan file run on the cost model, event by event.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/estimator_option.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cli/simulation_report.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/plan/checked_plan.h"
#include "hyperpipe/trace/chrome_trace.h"
#include "hyperpipe/trace/svg_gantt.h"

namespace hyperpipe::cli {
namespace {

struct SimulateArgs {
  std::string plan;
  std::optional<std::string> cluster;
  std::optional<std::string> profiles;
  cost::Estimator estimator = cost::CostOptions{}.estimator;
  std::optional<std::string> trace;
  std::optional<std::string> svg;
  bool overlap_allreduce = false;
  std::optional<std::string> p2p;      // unset: as the plan's runtime exchanges
  std::optional<std::string> runtime;  // unset: the plan's
  OutputFormat format = OutputFormat::table;
};

void run_simulate(const SimulateArgs& args, std::ostream& out) {
  auto [plan, model, cluster] = plan::load_checked_plan(args.plan, args.cluster);
  if (args.overlap_allreduce) plan.overlap_allreduce = true;
  std::optional<cost::ProfileDb> profiles;
  if (args.profiles) profiles = cost::ProfileDb::load_for(*args.profiles, model.config().name);
  cost::CostOptions cost_options;
  cost_options.estimator = args.estimator;
  const cost::CostModel costs(model, cluster, cost_options, profiles ? &*profiles : nullptr);
  if (args.runtime) {
    const auto framework = plan::parse_framework(*args.runtime);
    if (!framework) {
      throw InputError("--runtime", *args.runtime,
                       fmt::format("one of {}", fmt::join(plan::framework_names(), ", ")));
    }
    if (const auto refused = plan::refusal(plan, *framework)) {
      throw InputError("--runtime", *args.runtime,
                       fmt::format("a framework that can run {} ({}: {})", args.plan,
                                   refused->field, refused->reason));
    }
    plan.runtime = *framework;
  }
  sim::SimOptions options;
  if (args.p2p)
    options.p2p = *args.p2p == "blocking" ? sim::P2pMode::blocking : sim::P2pMode::async;
  const bool blocking =
      options.p2p ? *options.p2p == sim::P2pMode::blocking : plan::blocks_on_p2p(plan);
  sim::PlanSimulation simulation;
  try {
    simulation = sim::simulate_plan(costs, plan, options);
  } catch (const sim::SimulationStuck& stuck) {
    if (!blocking) throw;
    // Matched blocking sends deadlock on some orders (neighbours sending to each other
    // other than as a send-then-receive pair): such a framework could not run this plan.
    const bool asked = args.p2p.has_value();
    throw InputError(asked ? "--p2p" : "runtime",
                     asked ? "blocking" : std::string(plan::to_string(plan.runtime)),
                     fmt::format("a schedule whose exchanges can block without deadlock: {} "
                                 "(use --p2p async, or another schedule)",
                                 stuck.what()));
  }

  const int64_t seq = plan.seq_len > 0 ? plan.seq_len : model.config().seq_len;
  simulation.output.timeline.title =
      fmt::format("{} on {}: {}, {} micro-batches (predicted)", model.config().name, cluster.name(),
                  schedule::to_string(plan.schedule), plan.micro_batches);
  // Files first: a failure to write them must not follow a printed success.
  if (args.trace) {
    write_file_atomically(*args.trace, trace::chrome_trace(simulation.output.timeline).dump());
  }
  if (args.svg) write_file_atomically(*args.svg, trace::svg_gantt(simulation.output.timeline));
  const auto report = simulation_report(plan, simulation, model.config().name, cluster.name(), seq);
  if (args.format == OutputFormat::json) {
    out << report.dump(2) << '\n';
  } else {
    print_simulation_tables(report, out);
    if (args.trace) out << "Trace (open in ui.perfetto.dev): " << *args.trace << '\n';
    if (args.svg) out << "Timeline chart: " << *args.svg << '\n';
  }
}

}  // namespace

void add_simulate_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* command = app.add_subcommand(
      "simulate", "Simulate a plan event by event and show its predicted timeline");
  command->add_option("--plan,-p", args->plan, "Plan file (docs/formats.md)")->required();
  command->add_option("--cluster,-c", args->cluster,
                      "Cluster to run it on instead of the one the plan names");
  command->add_option("--profiles", args->profiles, "Profile database to prefer over estimates");
  add_estimator_option(*command, args->estimator);
  command->add_option("--trace", args->trace, "Write a Chrome/Perfetto trace (JSON) here");
  command->add_option("--svg", args->svg, "Write an SVG Gantt chart here");
  command->add_flag("--overlap-allreduce", args->overlap_allreduce,
                    "Start each chunk's gradient all-reduce as soon as its gradients are ready "
                    "(the plan's overlap_allreduce)");
  command
      ->add_option("--p2p", args->p2p,
                   "How stages exchange activations and gradients: async (HyperPipe's runtime: "
                   "sends overlap compute) or blocking (matched blocking send/receive pairs, as "
                   "DeepSpeed's pipeline engine and Megatron-LM's non-overlapped 1F1B); "
                   "default: as the plan's runtime does")
      ->check(CLI::IsMember({"async", "blocking"}));
  command->add_option("--runtime", args->runtime,
                      "Predict the plan as this framework runs it (hyperpipe, megatron, "
                      "deepspeed, torchtitan; default: the plan's `runtime`); exit 2 where it "
                      "cannot express the plan");
  add_format_option(*command, args->format);
  command->footer(
      "Examples:\n"
      "  hyperpipe simulate --plan examples/plans/gpt3-2.7b-4stage.json\n"
      "  hyperpipe simulate --plan plan.json --trace trace.json --svg timeline.svg\n"
      "  hyperpipe simulate --plan plan.json --profiles measured.json --format json\n"
      "  hyperpipe simulate --plan plan.json --runtime megatron   # as Megatron-LM would run it");
  command->callback([args, &out] { run_simulate(*args, out); });
}

}  // namespace hyperpipe::cli
