// Measured per-layer costs (docs/formats.md, "Profiles"). Where an entry exists it wins
// over the analytic estimate.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/cost/device_memory.h"
#include "hyperpipe/model/dtype.h"
#include "hyperpipe/model/layer.h"

namespace hyperpipe::cost {

inline constexpr const char* kProfileFormat = "hyperpipe.profiles/1";

// What a profile is keyed by, apart from the micro-batch size it was measured at.
struct ProfileKey {
  std::string model;  // model name (the catalogue name or the file's `name`)
  model::LayerKind layer = model::LayerKind::decoder_block;
  std::string device;  // GPU type, compared as cluster::same_gpu_name does
  model::DType dtype = model::DType::fp16;
  int64_t tp = 1;
  int64_t seq_len = 0;

  auto tie() const { return std::tie(model, layer, device, dtype, tp, seq_len); }
  bool operator<(const ProfileKey& other) const { return tie() < other.tie(); }
};

struct ProfiledTimes {
  double forward = 0;          // seconds
  double backward_input = 0;   // B, as a split backward runs it
  double backward_weight = 0;  // W, as a split backward runs it
  std::optional<double> activation_bytes;
  std::optional<double> optimizer;  // seconds: AdamW's step over the layer's parameters
  // The backward as one pass, where measured: it may cost less than B + W run apart.
  std::optional<double> backward;
};

// Point-to-point and all-reduce between two processes of this host through the runtime's
// c10d backend, as `hyperpipe profile --cluster` measures them, filed under the cluster
// whose processes all meet on this host (an emulated one): they replace its links.
struct MeasuredLinks {
  std::string cluster;
  std::string backend;           // "gloo" or "nccl"
  cluster::Link point_to_point;  // latency + bytes / bandwidth, one way
  // What a link must be for the cost model's ring all-reduce over two ranks
  // (2 · latency + bytes / bandwidth) to take the measured time.
  cluster::Link all_reduce;
  // Measured across the cluster's own hosts (`profile --links` under a launcher): each
  // level's link between two of its devices, its table holding both columns. These replace
  // only their levels; without them the two processes above stand for every level.
  std::map<cluster::LinkLevel, cluster::Link> levels;
};

// What `profile --memory` measured a device type to hold outside the model.
struct MeasuredDeviceMemory {
  std::string device;  // GPU type, compared as cluster::same_gpu_name does
  DeviceOverheads overheads;
};

struct ProfileEntry {
  ProfileKey key;
  int64_t micro_batch = 1;
  ProfiledTimes times;
};

// How a looked-up cost was obtained.
enum class ProfileMatch { exact, interpolated, extrapolated };

struct ProfileLookup {
  ProfiledTimes times;
  ProfileMatch match = ProfileMatch::exact;
};

class ProfileDb {
 public:
  ProfileDb() = default;

  // Reads a profile file; throws InputError naming the file and entry on any problem.
  static ProfileDb load(const std::string& path);
  // load(), and a warning naming both when no entry is of `model` (the file's profiles
  // would then be silently unused: every layer falls back to estimates).
  static ProfileDb load_for(const std::string& path, const std::string& model);
  static ProfileDb read(const YamlField& root);

  // Adds an entry, replacing one with the same key and micro-batch size.
  void add(const ProfileEntry& entry);
  size_t size() const;
  bool empty() const { return series_.empty(); }
  // Every entry, in the order first added (a replaced entry keeps its place).
  const std::vector<ProfileEntry>& entries() const { return entries_; }
  // Where the entries were measured (free text).
  const std::string& host() const { return host_; }
  // Replaces the links measured for the same cluster.
  void set_links(const MeasuredLinks& links);
  const std::vector<MeasuredLinks>& links() const { return links_; }
  const MeasuredLinks* links_for(const std::string& cluster) const;
  void set_host(std::string host) { host_ = std::move(host); }
  // Replaces the device memory measured for the same GPU type.
  void set_device_memory(const MeasuredDeviceMemory& measured);
  const std::vector<MeasuredDeviceMemory>& device_memory() const { return device_memory_; }
  const DeviceOverheads* device_memory_for(const std::string& device) const;

  // Times for `micro_batch`: the measured point, or linear interpolation between the two
  // measured sizes around it, or (outside the measured range) the nearest measured point
  // scaled in proportion to the micro-batch size, as compute-bound layers scale.
  std::optional<ProfileLookup> find(const ProfileKey& key, int64_t micro_batch) const;
  // The optimizer step of a layer kind on a device, from any entry of that model, layer,
  // device, dtype and tp that has one (it depends on none of the batch sizes).
  std::optional<double> optimizer(const ProfileKey& key) const;

 private:
  // Per key: measured micro-batch sizes in increasing order.
  std::map<ProfileKey, std::map<int64_t, ProfiledTimes>> series_;
  std::vector<ProfileEntry> entries_;
  std::string host_;
  std::vector<MeasuredLinks> links_;
  std::vector<MeasuredDeviceMemory> device_memory_;
};

// The database as the file format of docs/formats.md ("Profiles").
nlohmann::json to_json(const ProfileDb& db);

}  // namespace hyperpipe::cost
