// `hyperpipe schedule`: a schedule generator's per-stage op order, validated.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <stdexcept>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"
#include "hyperpipe/report/schedule_report.h"
#include "hyperpipe/schedule/generators.h"
#include "hyperpipe/schedule/passes.h"

namespace hyperpipe::cli {
namespace {

struct ScheduleArgs {
  std::string kind = "1f1b";
  int stages = 4;
  int micro_batches = 8;
  int chunks = 1;
  std::vector<int> warmup;
  bool communication = false;
  OutputFormat format = OutputFormat::table;
};

void run_schedule(const ScheduleArgs& args, std::ostream& out) {
  const int64_t ops = int64_t{3} * args.stages * args.micro_batches * args.chunks;
  if (ops > kMaxScheduleOps) {
    throw InputError(
        "schedule", "--stages × --micro-batches × --chunks",
        fmt::format("expected at most {} ops in all, got about {}", kMaxScheduleOps, ops));
  }
  schedule::Schedule s;
  try {
    s = schedule::make_schedule(*schedule::parse_schedule_kind(args.kind), args.stages,
                                args.micro_batches, args.chunks, args.warmup);
  } catch (const std::invalid_argument& error) {
    throw InputError("schedule", "--kind " + args.kind, error.what());
  }
  if (args.communication) s = schedule::insert_communication(s);
  const auto problem = schedule::validate(s);
  if (problem) throw std::logic_error("generated schedule is invalid: " + *problem);
  if (args.format == OutputFormat::json) {
    out << report::schedule_document(s).dump(2) << '\n';
  } else {
    report::print_schedule(s, args.communication, out);
  }
}

}  // namespace

void add_schedule_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<ScheduleArgs>();
  CLI::App* command =
      app.add_subcommand("schedule", "Print a pipeline schedule: each stage's order of ops");
  command->add_option("--kind,-k", args->kind, "The schedule")
      ->check(CLI::IsMember(schedule::schedule_kind_names()))
      ->default_str("1f1b");
  command->add_option("--stages,-s", args->stages, "Pipeline stages (device groups)")
      ->check(positive_integer())
      ->default_str("4");
  command->add_option("--micro-batches", args->micro_batches, "Micro-batches per iteration")
      ->check(positive_integer())
      ->default_str("8");
  command->add_option("--chunks,-v", args->chunks, "Model chunks per stage (interleaved)")
      ->check(positive_integer())
      ->default_str("1");
  command
      ->add_option("--warmup", args->warmup,
                   "hetero-1f1b: forwards before each stage's first backward, e.g. 6,4,2,1")
      ->delimiter(',');
  command->add_flag("--comm", args->communication, "Show the sends (SF, SB) and receives");
  add_format_option(*command, args->format);
  command->footer(
      "Ops: F forward, B backward (input), W backward (weights), BW both; SF/SB send an\n"
      "activation/gradient (>rank), RF/RB receive one (<rank).\n"
      "Examples:\n"
      "  hyperpipe schedule --kind 1f1b --stages 4 --micro-batches 8\n"
      "  hyperpipe schedule --kind interleaved --stages 2 --micro-batches 4 --chunks 2\n"
      "  hyperpipe schedule --kind hetero-1f1b --stages 4 --micro-batches 8 --warmup 6,4,2,1\n"
      "  hyperpipe schedule --kind zb-h1 --stages 3 --micro-batches 6 --comm --format json");
  command->callback([args, &out] { run_schedule(*args, out); });
}

}  // namespace hyperpipe::cli
