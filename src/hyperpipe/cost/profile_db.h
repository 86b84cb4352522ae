// Measured per-layer costs (docs/formats.md, "Profiles"). Where an entry exists it wins
// over the analytic estimate.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "hyperpipe/common/yaml_reader.h"
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
  double forward = 0;  // seconds
  double backward_input = 0;
  double backward_weight = 0;
  std::optional<double> activation_bytes;
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
  static ProfileDb read(const YamlField& root);

  void add(const ProfileEntry& entry);
  size_t size() const;
  bool empty() const { return series_.empty(); }

  // Times for `micro_batch`: the measured point, or linear interpolation between the two
  // measured sizes around it, or (outside the measured range) the nearest measured point
  // scaled in proportion to the micro-batch size, as compute-bound layers scale.
  std::optional<ProfileLookup> find(const ProfileKey& key, int64_t micro_batch) const;

 private:
  // Per key: measured micro-batch sizes in increasing order.
  std::map<ProfileKey, std::map<int64_t, ProfiledTimes>> series_;
};

}  // namespace hyperpipe::cost
