// `hyperpipe profile`: what each layer kind of a model costs on this device, measured
// with the runtime's modules, merged into a profile database the planner and the
// simulator read (docs/formats.md, "Profiles").
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cli/progress_line.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/cluster/profile_targets.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/launch/process_launcher.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/report/table.h"
#include "hyperpipe/runtime/device_name.h"
#include "hyperpipe/runtime/host_memory.h"
#include "hyperpipe/runtime/link_profiler.h"
#include "hyperpipe/runtime/memory_profiler.h"
#include "hyperpipe/runtime/profiler.h"
#include "hyperpipe/runtime/rendezvous.h"

namespace hyperpipe::cli {

using report::Table;
namespace {

struct ProfileArgs {
  // No default: profiling is long and per model, so it measures only what is asked for.
  std::optional<std::string> model;
  std::string device = "cpu";
  std::vector<int64_t> micro_batches{1, 2, 4};
  std::vector<int> tensor_parallel{1};
  int64_t seq_len = 0;
  std::optional<std::string> as;
  std::optional<std::string> cluster;
  std::string out;
  int threads = 1;
  // The cluster's links as its file gives them: its devices are not processes of this
  // host's loopback (other machines, or the network lab's namespaces).
  bool keep_cluster_links = false;
  // Only the links, across the hosts of a launcher's run (run_link_profile).
  bool links_only = false;
  // Only what the device holds besides the model (runtime/memory_profiler.h).
  bool memory_only = false;
  OutputFormat format = OutputFormat::table;
};

constexpr const char* kProfilingFormat = "hyperpipe.profiling/1";

// The GPU types entries are written for, each with 1 / its speed (cluster/profile_targets.h).
std::vector<std::pair<std::string, double>> targets(const ProfileArgs& args) {
  std::optional<cluster::Cluster> cluster;
  if (args.cluster) cluster = cluster::load_cluster(*args.cluster);
  std::vector<std::pair<std::string, double>> result;
  for (const auto& target : cluster::profile_targets(cluster ? &*cluster : nullptr,
                                                     args.cluster.value_or(""), args.as)) {
    result.emplace_back(target.type, target.factor);
  }
  return result;
}

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

// `profile --links` under a launcher: one process per device of the cluster on its own
// host (a real cluster, or the network lab), device 0 against one device at each
// distance; rank 0 files each level's table under the cluster.
nlohmann::json run_link_profile(const ProfileArgs& args, std::ostream& out) {
  if (!args.cluster) throw InputError("--links", "the cluster", "--cluster with --links");
  const auto cluster = cluster::load_cluster(*args.cluster);
  const runtime::Rendezvous rendezvous = runtime::rendezvous_from();
  if (rendezvous.world_size < 2) {
    throw InputError("--links", "the launcher",
                     "a launcher's processes, one per device of the cluster on its host "
                     "(torchrun, mpirun, srun or scripts/netlab.sh); `profile --cluster` alone "
                     "measures two processes of this host");
  }
  runtime::LinkProfileSettings settings;
  settings.device = runtime::parse_device(args.device);
  cost::ProfileDb db;
  if (rendezvous.rank == 0 && std::filesystem::exists(args.out)) {
    db = cost::ProfileDb::load(args.out);
  }
  ProgressLine progress(out, is_terminal(out));
  if (rendezvous.rank == 0) settings.progress = link_probe_progress(progress);
  const auto levels = runtime::profile_links_across(rendezvous, cluster, settings);
  progress.finish();
  if (rendezvous.rank != 0) return nullptr;
  if (levels.empty())
    throw InputError("--cluster", *args.cluster, "a cluster of two devices or more");
  cost::MeasuredLinks measured{cluster.name(),
                               levels.begin()->second.backend,
                               runtime::tabled_link(levels.begin()->second),
                               levels.begin()->second.all_reduce,
                               {}};
  for (const auto& [level, links] : levels) {
    out << fmt::format("{} (device 0 and the first device {} from it)\n", to_string(level),
                       level == cluster::LinkLevel::intra_node ? "in its node" : "that far");
    print_link_profile(links, out);
    measured.levels[level] = runtime::tabled_link(links);
  }
  db.set_links(measured);
  const nlohmann::json written = cost::to_json(db);
  write_file_atomically(args.out, written.dump(2));
  out << fmt::format("\n{} link level(s) of {} written to {}\n", levels.size(), cluster.name(),
                     args.out);
  return {{"format", kProfilingFormat}, {"out", args.out}, {"links", written["links"]}};
}

// `profile --memory`: what this device holds besides the model's tensors, filed under
// each target type (the stand-ins of a CPU host all share its process's figures).
nlohmann::json run_memory_profile(const ProfileArgs& args, const model::Model& model,
                                  std::ostream& out) {
  const auto types = targets(args);
  cost::ProfileDb db;
  if (std::filesystem::exists(args.out)) db = cost::ProfileDb::load(args.out);
  torch::set_num_threads(args.threads);
  runtime::keep_freed_memory();  // as the training processes do
  runtime::MemoryProfileSettings settings;
  settings.device = runtime::parse_device(args.device);
  settings.port = launch::free_port();
  // The largest micro-batch asked for: the allocator's mix as the biggest stage holds it.
  settings.micro_batch = *std::max_element(args.micro_batches.begin(), args.micro_batches.end());
  settings.seq_len = args.seq_len;
  const std::string host = runtime::device_description(settings.device);
  out << fmt::format("measuring what {} holds besides {}'s tensors\n", host, model.config().name)
      << std::flush;
  ProgressLine progress(out, is_terminal(out));
  settings.progress = [&](int done, int total, const std::string& what) {
    progress.update(done, total, what);
  };
  const auto measured = runtime::profile_device_memory(model, settings);
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
  nlohmann::json written_types = nlohmann::json::array();
  for (const auto& [type, factor] : types) {
    db.set_device_memory({type, measured.overheads});
    written_types.push_back(type);
  }
  db.set_host(host);
  const nlohmann::json whole = cost::to_json(db);
  write_file_atomically(args.out, whole.dump(2));
  out << fmt::format("\ndevice memory of {} written to {}\n", written_types.size(), args.out);
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& probe : measured.probes) {
    probes.push_back({{"term", probe.term},
                      {"measured", probe.measured ? nlohmann::json(*probe.measured) : nullptr},
                      {"how", probe.how}});
  }
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& entry : whole["device_memory"]) {
    if (std::find(written_types.begin(), written_types.end(), entry["device"]) !=
        written_types.end()) {
      entries.push_back(entry);
    }
  }
  return {{"format", kProfilingFormat},
          {"model", model.config().name},
          {"host", host},
          {"out", args.out},
          {"probes", probes},
          {"device_memory", entries}};
}

// Measures what `args` asks, printing to `out` as it goes; returns the run's
// "hyperpipe.profiling/1" summary (null on a --links rank other than 0).
nlohmann::json run_profile(const ProfileArgs& args, std::ostream& out) {
  if (args.links_only) return run_link_profile(args, out);
  if (!args.model) {
    throw InputError("--model", "",
                     "expected the model to profile (a catalogue name, model YAML or "
                     "config.json), e.g. "
                     "--model examples/models/tiny-gpt.yaml");
  }
  const model::Model model = model::load_model(*args.model);
  if (args.memory_only) return run_memory_profile(args, model, out);
  const auto types = targets(args);  // checked before measuring anything
  cost::ProfileDb db;
  if (std::filesystem::exists(args.out)) db = cost::ProfileDb::load(args.out);
  torch::set_num_threads(args.threads);
  runtime::keep_freed_memory();  // as the training processes do
  runtime::ProfileSettings settings;
  settings.micro_batches = args.micro_batches;
  settings.tensor_parallel = args.tensor_parallel;
  settings.seq_len = args.seq_len;
  settings.device = runtime::parse_device(args.device);
  const std::string host = runtime::device_description(settings.device);
  out << fmt::format("profiling {} on {} ({} thread{})\n", model.config().name, host, args.threads,
                     args.threads == 1 ? "" : "s")
      << std::flush;
  ProgressLine progress(out, is_terminal(out));
  settings.progress = [&](int done, int total, const std::string& what) {
    progress.update(done, total, what);
  };
  // Each stand-in is measured as it runs (after the sleeps that stretch its ops); the
  // host, or a type named by --as, as it is.
  std::vector<runtime::ProfiledDevice> devices;
  for (const auto& [type, factor] : types) devices.push_back({type, 1.0 / factor});
  const auto measured = runtime::profile_layers(model, settings, devices);
  progress.finish();
  for (const auto& device : devices) {
    out << fmt::format("{} (speed {:.2f})\n", device.name, device.speed);
    Table table(
        {"Layer", ">TP", ">Micro-batch", ">F", ">B", ">W", ">Whole backward", ">Optimizer"});
    for (const auto& entry : measured) {
      if (entry.key.device != device.name) continue;
      table.add_row({std::string(model::to_string(entry.key.layer)), std::to_string(entry.key.tp),
                     std::to_string(entry.micro_batch),
                     fmt::format("{:.3f} ms", entry.times.forward * 1e3),
                     fmt::format("{:.3f} ms", entry.times.backward_input * 1e3),
                     fmt::format("{:.3f} ms", entry.times.backward_weight * 1e3),
                     fmt::format("{:.3f} ms", *entry.times.backward * 1e3),
                     fmt::format("{:.3f} ms", *entry.times.optimizer * 1e3)});
      db.add(entry);
    }
    table.print(out, "  ");
  }
  const bool second_gpu =
      !settings.device.is_cuda() ||
      settings.device.index() + 1 < static_cast<int>(torch::cuda::device_count());
  if (args.cluster && !second_gpu) {
    out << "links not measured: NCCL needs a second GPU beside " << settings.device << '\n';
  }
  if (args.cluster && args.keep_cluster_links) {
    out << "links not measured (--no-links): the cluster file's figures stay\n";
  }
  if (args.cluster && second_gpu && !args.keep_cluster_links) {
    // The stand-ins of an emulated cluster are processes of this host: their links are
    // the runtime's backend between two of them.
    const auto cluster_name = cluster::load_cluster(*args.cluster).name();
    out << fmt::format("links between two processes ({})\n",
                       settings.device.is_cuda() ? "NCCL" : "Gloo")
        << std::flush;
    runtime::LinkProfileSettings link_settings;
    link_settings.port = launch::free_port();
    link_settings.device = settings.device;
    ProgressLine link_progress(out, is_terminal(out));
    link_settings.progress = link_probe_progress(link_progress);
    const auto links = runtime::profile_links(link_settings);
    link_progress.finish();
    print_link_profile(links, out);
    const cluster::Link point_to_point = runtime::tabled_link(links);
    cluster::Link all_reduce = links.all_reduce;
    all_reduce.table = point_to_point.table;
    db.set_links({cluster_name, links.backend, point_to_point, all_reduce, {}});
  }
  db.set_host(host);
  const nlohmann::json whole = cost::to_json(db);
  write_file_atomically(args.out, whole.dump(2));
  std::string written;
  for (const auto& [type, factor] : types) {
    written += fmt::format("{}{} (× {:.2f})", written.empty() ? "" : ", ", type, factor);
  }
  out << fmt::format("\n{} entries for {} written to {} ({} in all)\n", measured.size(), written,
                     args.out, db.size());
  cost::ProfileDb this_run;  // what this run measured, in the database's own form
  for (const auto& entry : measured) this_run.add(entry);
  nlohmann::json speeds = nlohmann::json::array();
  for (const auto& device : devices) {
    speeds.push_back({{"name", device.name}, {"speed", device.speed}});
  }
  nlohmann::json summary{{"format", kProfilingFormat},
                         {"model", model.config().name},
                         {"host", host},
                         {"out", args.out},
                         {"entries_in_all", db.size()},
                         {"types", speeds},
                         {"entries", cost::to_json(this_run)["entries"]}};
  if (whole.contains("links") && args.cluster && second_gpu && !args.keep_cluster_links) {
    summary["links"] = whole["links"];
  }
  return summary;
}

}  // namespace

void add_profile_command(CLI::App& app, std::ostream& out, std::ostream& err) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* command = app.add_subcommand(
      "profile", "Measure each layer kind of a model on this device into a profile database");
  command->add_option("--model,-m", args->model,
                      "Catalogue name, model YAML or config.json (required but with --links)");
  command->add_option("--device", args->device, "cpu, cuda or cuda:N")->default_val("cpu");
  command->add_option("--micro-batch", args->micro_batches, "Micro-batch sizes to measure")
      ->delimiter(',')
      ->default_str("1,2,4")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--tp", args->tensor_parallel,
                   "Tensor-parallel degrees: each times one rank's shard of every layer "
                   "(its compute; the cost model adds the all-reduces)")
      ->delimiter(',')
      ->default_str("1")
      ->check(CLI::PositiveNumber);
  command->add_option("--seq", args->seq_len, "Sequence length (default: the model's)")
      ->check(CLI::PositiveNumber);
  command->add_option("--as", args->as, "GPU type name to file the measurements under");
  command->add_option("--cluster", args->cluster,
                      "Measure for each of this cluster's CPU stand-in types, as the "
                      "runtime runs it (stretched to 1 / speed)");
  command->add_option("--out", args->out, "Profile database to write (merged if it exists)")
      ->required();
  CLI::Option* links =
      command->add_flag("--links", args->links_only,
                        "Only the links of --cluster, measured across its hosts: start one process "
                        "per device with a launcher (e.g. scripts/netlab.sh run --cluster C -- "
                        "hyperpipe profile --links --cluster C --out P)");
  command
      ->add_flag("--memory", args->memory_only,
                 "Only what the device holds besides the model: the context (a CPU "
                 "process's own), a communicator's buffers, cuBLAS's workspace and the "
                 "allocator's reserve while a stage of --model trains; filed under each "
                 "type as `device_memory`, which replaces the defaults")
      ->excludes(links);
  command->add_flag("--no-links", args->keep_cluster_links,
                    "With --cluster: keep its file's link figures instead of measuring two "
                    "processes of this host (its devices talk over a real or lab network)");
  command->add_option("--threads", args->threads, "Intra-op threads (as each training process)")
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
    const nlohmann::json summary = run_profile(*args, json ? err : out);
    if (json && !summary.is_null()) out << summary.dump(2) << '\n';
  });
}

}  // namespace hyperpipe::cli
