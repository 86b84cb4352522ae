// `hyperpipe profile`: what each layer kind of a model costs on this device, measured
// with the runtime's modules, merged into a profile database the planner and the
// simulator read (docs/formats.md, "Profiles"). The run itself is runtime/profiling_run.h;
// this parses its flags and prints what it measured.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cli/progress_line.h"
#include "hyperpipe/cli/worker.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/report/table.h"
#include "hyperpipe/runtime/profiling_run.h"

namespace hyperpipe::cli {

using report::Table;
namespace {

struct ProfileArgs {
  runtime::ProfilingRequest request;
  OutputFormat format = OutputFormat::table;
};

// The measured times as a table, then their fits.
void print_link_profile(const runtime::LinkProfile& links, std::ostream& out) {
  Table table({">Bytes", ">One way", ">All-reduce (2 ranks)"});
  for (const auto& sample : links.samples) {
    table.add_row({std::to_string(sample.bytes),
                   fmt::format("{:.3f} ms", sample.point_to_point * 1e3),
                   fmt::format("{:.3f} ms", sample.all_reduce * 1e3)});
  }
  table.print(out, "  ");
  const auto describe = [](const cluster::Link& link) {
    return fmt::format("{:.1f} us + bytes / {:.3f} GB/s", link.latency * 1e6, link.bandwidth / 1e9);
  };
  out << fmt::format("  point-to-point: {}; all-reduce link: {}\n", describe(links.point_to_point),
                     describe(links.all_reduce));
}

// The link probe's sizes on a progress line ("message 64.0 KiB measured").
std::function<void(int, int, int64_t)> link_probe_progress(ProgressLine& line) {
  return [&line](int done, int total, int64_t bytes) {
    line.update(done, total,
                fmt::format("message {} measured", format_bytes(static_cast<double>(bytes))));
  };
}

runtime::ProfilingProgress progress_on(ProgressLine& line) {
  return [&line](int done, int total, const std::string& what) { line.update(done, total, what); };
}

// Each device's entries as a table of milliseconds.
void print_layer_times(const runtime::LayerProfiling& run,
                       const std::vector<cost::ProfileEntry>& measured, std::ostream& out) {
  for (const auto& device : run.devices()) {
    out << fmt::format("{} (speed {:.2f})\n", device.name, device.speed);
    Table table(
        {"Layer", ">TP", ">Micro-batch", ">F", ">B", ">W", ">Whole backward", ">Optimizer"});
    const auto ms = [](double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); };
    for (const auto& entry : measured) {
      if (entry.key.device != device.name) continue;
      table.add_row({std::string(model::to_string(entry.key.layer)), std::to_string(entry.key.tp),
                     std::to_string(entry.micro_batch), ms(entry.times.forward),
                     ms(entry.times.backward_input), ms(entry.times.backward_weight),
                     ms(*entry.times.backward), ms(*entry.times.optimizer)});
    }
    table.print(out, "  ");
  }
}

nlohmann::json run_link_profile(const runtime::ProfilingRequest& request, std::ostream& out) {
  runtime::LinkLevelProfiling run(request);
  ProgressLine progress(out, is_terminal(out));
  const auto& levels = run.measure(link_probe_progress(progress));
  progress.finish();
  if (!run.files()) return nullptr;
  for (const auto& [level, links] : levels) {
    out << fmt::format("{} (device 0 and the first device {} from it)\n", to_string(level),
                       level == cluster::LinkLevel::intra_node ? "in its node" : "that far");
    print_link_profile(links, out);
  }
  nlohmann::json summary = run.file();
  out << fmt::format("\n{} link level(s) of {} written to {}\n", levels.size(),
                     run.cluster().name(), request.out);
  return summary;
}

nlohmann::json run_memory_profile(const runtime::ProfilingRequest& request, model::Model model,
                                  std::ostream& out) {
  runtime::MemoryProfiling run(request, std::move(model));
  out << fmt::format("measuring what {} holds besides {}'s tensors\n", run.host(),
                     run.model().config().name)
      << std::flush;
  ProgressLine progress(out, is_terminal(out));
  const auto& measured = run.measure(progress_on(progress));
  progress.finish();
  Table table({"Term", ">Measured", "How"});
  for (const auto& probe : measured.probes) {
    const std::string value = !probe.measured ? "-"
                              : probe.term == "allocator_ratio"
                                  ? fmt::format("{:.3f}", *probe.measured)
                                  : format_bytes(*probe.measured);
    table.add_row({probe.term, value, probe.how});
  }
  table.print(out, "  ");
  nlohmann::json summary = run.file();
  out << fmt::format("\ndevice memory of {} written to {}\n", run.types_filed(), request.out);
  return summary;
}

// Measures what `request` asks, printing to `out` as it goes; returns the run's
// "hyperpipe.profiling/1" summary (null on a --links rank other than 0).
nlohmann::json run_profile(runtime::ProfilingRequest request, std::ostream& out) {
  if (request.links_only) return run_link_profile(request, out);
  model::Model model = runtime::requested_model(request);
  request.free_port = launch::free_port;
  if (request.memory_only) return run_memory_profile(request, std::move(model), out);
  runtime::LayerProfiling run(request, std::move(model));
  out << fmt::format("profiling {} on {} ({} thread{})\n", run.model().config().name, run.host(),
                     request.threads, request.threads == 1 ? "" : "s")
      << std::flush;
  ProgressLine progress(out, is_terminal(out));
  const auto measured = run.measure_layers(progress_on(progress));
  progress.finish();
  print_layer_times(run, measured, out);
  for (const auto& reason : run.links_not_measured()) out << reason << '\n';
  if (run.measures_links()) {
    out << fmt::format("links between two processes ({})\n", run.link_backend()) << std::flush;
    ProgressLine link_progress(out, is_terminal(out));
    const auto links = run.measure_links(link_probe_progress(link_progress));
    link_progress.finish();
    print_link_profile(*links, out);
  }
  nlohmann::json summary = run.file();
  std::string written;
  for (const auto& target : run.targets()) {
    written +=
        fmt::format("{}{} (× {:.2f})", written.empty() ? "" : ", ", target.type, target.factor);
  }
  out << fmt::format("\n{} entries for {} written to {} ({} in all)\n", measured.size(), written,
                     request.out, run.entries_in_all());
  return summary;
}

}  // namespace

void add_profile_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* command = add_worker_subcommand(app, kProfileCommand);
  command->add_option("--model,-m", args->request.model,
                      "Catalogue name, model YAML or config.json (required but with --links)");
  command->add_option("--device", args->request.device, "cpu, cuda or cuda:N")->default_val("cpu");
  command->add_option("--micro-batch", args->request.micro_batches, "Micro-batch sizes to measure")
      ->delimiter(',')
      ->default_str("1,2,4")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--tp", args->request.tensor_parallel,
                   "Tensor-parallel degrees: each times one rank's shard of every layer "
                   "(its compute; the cost model adds the all-reduces)")
      ->delimiter(',')
      ->default_str("1")
      ->check(CLI::PositiveNumber);
  command->add_option("--seq", args->request.seq_len, "Sequence length (default: the model's)")
      ->check(CLI::PositiveNumber);
  command->add_option("--as", args->request.as, "GPU type name to file the measurements under");
  command->add_option("--cluster", args->request.cluster,
                      "Measure for each of this cluster's CPU stand-in types, as the "
                      "runtime runs it (stretched to 1 / speed)");
  command->add_option("--out", args->request.out, "Profile database to write (merged if it exists)")
      ->required();
  CLI::Option* links =
      command->add_flag("--links", args->request.links_only,
                        "Only the links of --cluster, measured across its hosts: start one process "
                        "per device with a launcher (e.g. scripts/netlab.sh run --cluster C -- "
                        "hyperpipe profile --links --cluster C --out P)");
  command
      ->add_flag("--memory", args->request.memory_only,
                 "Only what the device holds besides the model: the context (a CPU "
                 "process's own), a communicator's buffers, cuBLAS's workspace and the "
                 "allocator's reserve while a stage of --model trains; filed under each "
                 "type as `device_memory`, which replaces the defaults")
      ->excludes(links);
  command->add_flag("--no-links", args->request.keep_cluster_links,
                    "With --cluster: keep its file's link figures instead of measuring two "
                    "processes of this host (its devices talk over a real or lab network)");
  command
      ->add_option("--threads", args->request.threads,
                   "Intra-op threads (as each training process)")
      ->default_val(1)
      ->check(CLI::PositiveNumber);
  add_format_option(*command, args->format);
  command->footer(
      "With --format json the tables and progress go to stderr and one JSON document "
      "(hyperpipe.profiling/1) of what was measured to stdout.\n"
      "Examples:\n"
      "  hyperpipe profile --model examples/models/tiny-gpt.yaml --cluster cpu-emulated "
      "--micro-batch 1,2,4,8 --out profiles.json\n"
      "  hyperpipe profile --model llama2-7b --device cuda --as A100-80GB --out profiles.json\n"
      "  hyperpipe profile --memory --model gpt3-1.3b --device cuda --as H100-SXM --out "
      "profiles.json");
  command->callback([args, &out, &err] {
    const bool json = args->format == OutputFormat::json;
    const nlohmann::json summary = run_profile(args->request, json ? err : out);
    if (json && !summary.is_null()) out << summary.dump(2) << '\n';
  });
}

}  // namespace hyperpipe::cli
