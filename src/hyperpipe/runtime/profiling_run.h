// `hyperpipe profile` as a run of its own: what it measures on this device, what it files
// under which GPU type, merged into the profile database it is given (docs/formats.md,
// "Profiles"), and the run's "hyperpipe.profiling/1" summary. The command line parses
// the flags, shows progress and prints the tables; these decide and measure.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/cluster/profile_targets.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"
#include "hyperpipe/runtime/link_profiler.h"
#include "hyperpipe/runtime/memory_profiler.h"
#include "hyperpipe/runtime/profiler.h"

namespace hyperpipe::runtime {

inline constexpr const char* kProfilingFormat = "hyperpipe.profiling/1";

// What a `profile` run is asked to measure (the command's flags).
struct ProfilingRequest {
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
  // Only the links, across the hosts of a launcher's run (LinkLevelProfiling).
  bool links_only = false;
  // Only what the device holds besides the model (MemoryProfiling).
  bool memory_only = false;
  // A port of 127.0.0.1 free now, asked for just before a measurement that starts two
  // ranks of this host (launch::free_port; the runtime does not start processes).
  std::function<int()> free_port;
};

// (steps done, steps, what comes next), as the profilers report it.
using ProfilingProgress = std::function<void(int, int, const std::string&)>;

// The model the request names; throws InputError (naming --model) where it names none.
model::Model requested_model(const ProfilingRequest& request);

// What a run on this device starts from, checked in this order before anything is
// measured: the GPU types it files under, the database it merges into, the device.
struct DeviceProfilingBasis {
  DeviceProfilingBasis(const ProfilingRequest& request, model::Model model);
  ProfilingRequest request;
  model::Model model;
  std::vector<cluster::ProfileTarget> targets;
  cost::ProfileDb db;
  torch::Device device;
  std::string host;  // what the device is (runtime::device_description)
};

// Each layer kind of the model on this device, for each GPU type it is filed under (the
// stand-ins of --cluster each as it runs, or --as), and the links between two processes
// of this host where the cluster's stand-ins are such processes.
class LayerProfiling {
 public:
  // Checks the GPU types and reads the database to merge into before measuring anything.
  LayerProfiling(const ProfilingRequest& request, model::Model model);

  const model::Model& model() const { return basis_.model; }
  const std::string& host() const { return basis_.host; }
  const std::vector<cluster::ProfileTarget>& targets() const { return basis_.targets; }
  const std::vector<ProfiledDevice>& devices() const { return devices_; }

  // Measures every layer kind for every device and adds the entries to the database.
  std::vector<cost::ProfileEntry> measure_layers(const ProfilingProgress& progress);

  // Whether measure_links() measures anything, and each reason it does not where the
  // request asked for a cluster.
  bool measures_links() const;
  std::vector<std::string> links_not_measured() const;
  // "Gloo" or "NCCL": what two processes of this host talk over.
  std::string link_backend() const;
  // Two processes of this host, filed as the cluster's links; nothing unless measures_links().
  std::optional<LinkProfile> measure_links(const std::function<void(int, int, int64_t)>& progress);

  // Writes the merged database (atomically) and returns the run's summary.
  nlohmann::json file();
  size_t entries_in_all() const { return basis_.db.size(); }

 private:
  DeviceProfilingBasis basis_;
  std::vector<ProfiledDevice> devices_;
  cost::ProfileDb measured_;  // this run's entries alone
  bool links_measured_ = false;
};

// What the device holds besides the model's tensors while a stage of it trains, filed
// under each GPU type as its `device_memory`.
class MemoryProfiling {
 public:
  MemoryProfiling(const ProfilingRequest& request, model::Model model);

  const model::Model& model() const { return basis_.model; }
  const std::string& host() const { return basis_.host; }

  const DeviceMemoryProfile& measure(const ProfilingProgress& progress);
  // Writes the merged database (atomically) and returns the run's summary.
  nlohmann::json file();
  size_t types_filed() const { return basis_.targets.size(); }

 private:
  DeviceProfilingBasis basis_;
  DeviceMemoryProfile measured_;
};

// `profile --links` under a launcher: one process per device of the cluster on its own
// host, device 0 against one device at each distance; rank 0 files each level's table
// under the cluster.
class LinkLevelProfiling {
 public:
  // Throws InputError without --cluster or outside a launcher's run of two processes or more.
  explicit LinkLevelProfiling(const ProfilingRequest& request);

  bool files() const { return rendezvous_.rank == 0; }  // only rank 0 writes
  const cluster::Cluster& cluster() const { return cluster_; }

  // Rank 0's levels (nothing on the other ranks); throws InputError where the cluster has
  // a single device.
  const std::map<cluster::LinkLevel, LinkProfile>& measure(
      const std::function<void(int, int, int64_t)>& progress);
  // Rank 0 only: writes the merged database (atomically) and returns the run's summary.
  nlohmann::json file();

 private:
  ProfilingRequest request_;
  cluster::Cluster cluster_;
  Rendezvous rendezvous_;
  cost::ProfileDb db_;
  std::map<cluster::LinkLevel, LinkProfile> levels_;
};

}  // namespace hyperpipe::runtime
