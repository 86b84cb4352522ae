#include "hyperpipe/runtime/profiling_run.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/host_memory.h"
#include "hyperpipe/common/output_file.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/runtime/device_name.h"

namespace hyperpipe::runtime {
namespace {

// The GPU types the request files under, checked before anything is measured.
std::vector<cluster::ProfileTarget> targets_of(const ProfilingRequest& request) {
  std::optional<cluster::Cluster> cluster;
  if (request.cluster) cluster = cluster::load_cluster(*request.cluster);
  return cluster::profile_targets(cluster ? &*cluster : nullptr, request.cluster.value_or(""),
                                  request.as);
}

// The database at `path` to merge into, or an empty one where there is none yet.
cost::ProfileDb existing_database(const std::string& path) {
  return std::filesystem::exists(path) ? cost::ProfileDb::load(path) : cost::ProfileDb{};
}

// The process as the training processes run: their intra-op threads and heap.
void run_as_training_does(int threads) {
  torch::set_num_threads(threads);
  keep_freed_memory();
}

int port_for_two_ranks(const ProfilingRequest& request) {
  if (!request.free_port) throw std::invalid_argument("ProfilingRequest: no free_port given");
  return request.free_port();
}

nlohmann::json write_database(const cost::ProfileDb& db, const std::string& path) {
  nlohmann::json whole = cost::to_json(db);
  write_file_atomically(path, whole.dump(2));
  return whole;
}

}  // namespace

model::Model requested_model(const ProfilingRequest& request) {
  if (!request.model) {
    throw InputError("--model", "",
                     "expected the model to profile (a catalogue name, model YAML or "
                     "config.json), e.g. "
                     "--model examples/models/tiny-gpt.yaml");
  }
  return model::load_model(*request.model);
}

DeviceProfilingBasis::DeviceProfilingBasis(const ProfilingRequest& request, model::Model model)
    : request(request),
      model(std::move(model)),
      targets(targets_of(request)),
      db(existing_database(request.out)),
      device(parse_device(request.device)) {
  run_as_training_does(request.threads);
  host = device_description(device);
}

LayerProfiling::LayerProfiling(const ProfilingRequest& request, model::Model model)
    : basis_(request, std::move(model)) {
  // Each stand-in is measured as it runs (after the sleeps that stretch its ops); the
  // host, or a type named by --as, as it is.
  for (const auto& target : basis_.targets) {
    devices_.push_back({target.type, 1.0 / target.factor});
  }
}

std::vector<cost::ProfileEntry> LayerProfiling::measure_layers(const ProfilingProgress& progress) {
  ProfileSettings settings;
  settings.micro_batches = basis_.request.micro_batches;
  settings.tensor_parallel = basis_.request.tensor_parallel;
  settings.seq_len = basis_.request.seq_len;
  settings.device = basis_.device;
  settings.progress = progress;
  auto measured = profile_layers(basis_.model, settings, devices_);
  for (const auto& entry : measured) {
    basis_.db.add(entry);
    measured_.add(entry);
  }
  return measured;
}

// NCCL between two processes needs a second GPU beside the one measured.
static bool has_second_device(const torch::Device& device) {
  return !device.is_cuda() || device.index() + 1 < static_cast<int>(torch::cuda::device_count());
}

bool LayerProfiling::measures_links() const {
  return basis_.request.cluster && has_second_device(basis_.device) &&
         !basis_.request.keep_cluster_links;
}

std::vector<std::string> LayerProfiling::links_not_measured() const {
  std::vector<std::string> reasons;
  if (!basis_.request.cluster) return reasons;
  if (!has_second_device(basis_.device)) {
    reasons.push_back("links not measured: NCCL needs a second GPU beside " + basis_.device.str());
  }
  if (basis_.request.keep_cluster_links) {
    reasons.emplace_back("links not measured (--no-links): the cluster file's figures stay");
  }
  return reasons;
}

std::string LayerProfiling::link_backend() const {
  return basis_.device.is_cuda() ? "NCCL" : "Gloo";
}

std::optional<LinkProfile> LayerProfiling::measure_links(
    const std::function<void(int, int, int64_t)>& progress) {
  if (!measures_links()) return std::nullopt;
  // The stand-ins of an emulated cluster are processes of this host: their links are the
  // runtime's backend between two of them.
  LinkProfileSettings settings;
  settings.port = port_for_two_ranks(basis_.request);
  settings.device = basis_.device;
  settings.progress = progress;
  LinkProfile links = profile_links(settings);
  const cluster::Link point_to_point = tabled_link(links);
  cluster::Link all_reduce = links.all_reduce;
  all_reduce.table = point_to_point.table;
  basis_.db.set_links({cluster::load_cluster(*basis_.request.cluster).name(),
                       links.backend,
                       point_to_point,
                       all_reduce,
                       {}});
  links_measured_ = true;
  return links;
}

nlohmann::json LayerProfiling::file() {
  basis_.db.set_host(basis_.host);
  const nlohmann::json whole = write_database(basis_.db, basis_.request.out);
  nlohmann::json speeds = nlohmann::json::array();
  for (const auto& device : devices_) {
    speeds.push_back({{"name", device.name}, {"speed", device.speed}});
  }
  nlohmann::json summary{{"format", kProfilingFormat},
                         {"model", basis_.model.config().name},
                         {"host", basis_.host},
                         {"out", basis_.request.out},
                         {"entries_in_all", basis_.db.size()},
                         {"types", speeds},
                         {"entries", cost::to_json(measured_)["entries"]}};
  if (links_measured_ && whole.contains("links")) summary["links"] = whole["links"];
  return summary;
}

MemoryProfiling::MemoryProfiling(const ProfilingRequest& request, model::Model model)
    : basis_(request, std::move(model)) {}

const DeviceMemoryProfile& MemoryProfiling::measure(const ProfilingProgress& progress) {
  MemoryProfileSettings settings;
  settings.device = basis_.device;
  settings.port = port_for_two_ranks(basis_.request);
  // The largest micro-batch asked for: the allocator's mix as the biggest stage holds it.
  const auto& micro_batches = basis_.request.micro_batches;
  settings.micro_batch = *std::max_element(micro_batches.begin(), micro_batches.end());
  settings.seq_len = basis_.request.seq_len;
  settings.progress = progress;
  measured_ = profile_device_memory(basis_.model, settings);
  // The stand-ins of a CPU host all share its process's figures.
  for (const auto& target : basis_.targets) {
    basis_.db.set_device_memory({target.type, measured_.overheads});
  }
  return measured_;
}

nlohmann::json MemoryProfiling::file() {
  basis_.db.set_host(basis_.host);
  const nlohmann::json whole = write_database(basis_.db, basis_.request.out);
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& probe : measured_.probes) {
    probes.push_back({{"term", probe.term},
                      {"measured", probe.measured ? nlohmann::json(*probe.measured) : nullptr},
                      {"how", probe.how}});
  }
  const auto filed_here = [&](const nlohmann::json& entry) {
    return std::any_of(basis_.targets.begin(), basis_.targets.end(),
                       [&](const auto& target) { return entry["device"] == target.type; });
  };
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& entry : whole["device_memory"]) {
    if (filed_here(entry)) entries.push_back(entry);
  }
  nlohmann::json summary{{"format", kProfilingFormat}, {"model", basis_.model.config().name}};
  summary["host"] = basis_.host;
  summary["out"] = basis_.request.out;
  summary["probes"] = probes;
  summary["device_memory"] = entries;
  return summary;
}

static cluster::Cluster cluster_for_links(const ProfilingRequest& request) {
  if (!request.cluster) throw InputError("--links", "the cluster", "--cluster with --links");
  return cluster::load_cluster(*request.cluster);
}

LinkLevelProfiling::LinkLevelProfiling(const ProfilingRequest& request)
    : request_(request), cluster_(cluster_for_links(request)), rendezvous_(rendezvous_from()) {
  if (rendezvous_.world_size < 2) {
    throw InputError("--links", "the launcher",
                     "a launcher's processes, one per device of the cluster on its host "
                     "(torchrun, mpirun, srun or scripts/netlab.sh); `profile --cluster` alone "
                     "measures two processes of this host");
  }
  if (files()) db_ = existing_database(request.out);
}

const std::map<cluster::LinkLevel, LinkProfile>& LinkLevelProfiling::measure(
    const std::function<void(int, int, int64_t)>& progress) {
  LinkProfileSettings settings;
  settings.device = parse_device(request_.device);
  if (files()) settings.progress = progress;
  levels_ = profile_links_across(rendezvous_, cluster_, settings);
  if (files() && levels_.empty()) {
    throw InputError("--cluster", *request_.cluster, "a cluster of two devices or more");
  }
  return levels_;
}

nlohmann::json LinkLevelProfiling::file() {
  const LinkProfile& nearest = levels_.begin()->second;
  cost::MeasuredLinks measured{
      cluster_.name(), nearest.backend, tabled_link(nearest), nearest.all_reduce, {}};
  for (const auto& [level, links] : levels_) measured.levels[level] = tabled_link(links);
  db_.set_links(measured);
  const nlohmann::json written = write_database(db_, request_.out);
  return {{"format", kProfilingFormat}, {"out", request_.out}, {"links", written["links"]}};
}

}  // namespace hyperpipe::runtime
