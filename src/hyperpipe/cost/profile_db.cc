#include "hyperpipe/cost/profile_db.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/log.h"

namespace hyperpipe::cost {
namespace {

constexpr double kSecondsPerMillisecond = 1e-3;

double read_milliseconds(const YamlField& entry, const char* key) {
  const YamlField field = entry.required(key);
  const double value = field.as_number();
  if (value < 0) field.fail("a time in milliseconds, 0 or more");
  return value * kSecondsPerMillisecond;
}

ProfiledTimes mix(const ProfiledTimes& low, const ProfiledTimes& high, double weight) {
  const auto lerp = [weight](double a, double b) { return a + (b - a) * weight; };
  ProfiledTimes result{lerp(low.forward, high.forward),
                       lerp(low.backward_input, high.backward_input),
                       lerp(low.backward_weight, high.backward_weight),
                       std::nullopt,
                       low.optimizer ? low.optimizer : high.optimizer,
                       std::nullopt};
  if (low.backward && high.backward) result.backward = lerp(*low.backward, *high.backward);
  if (low.activation_bytes && high.activation_bytes) {
    result.activation_bytes = lerp(*low.activation_bytes, *high.activation_bytes);
  }
  return result;
}

ProfiledTimes scaled(const ProfiledTimes& times, double factor) {
  // The optimizer step does not depend on the micro-batch: it stays.
  ProfiledTimes result{times.forward * factor,
                       times.backward_input * factor,
                       times.backward_weight * factor,
                       std::nullopt,
                       times.optimizer,
                       std::nullopt};
  if (times.activation_bytes) result.activation_bytes = *times.activation_bytes * factor;
  if (times.backward) result.backward = *times.backward * factor;
  return result;
}

cluster::Link read_link(const YamlField& parent, const char* key) {
  const YamlField link = parent.required(key);
  link.allow_only({"latency_s", "bandwidth_bytes_per_s", "table"});
  const YamlField latency = link.required("latency_s");
  if (latency.as_number() < 0) latency.fail("a latency in seconds, 0 or more");
  cluster::Link result(link.required("bandwidth_bytes_per_s").as_positive_number(),
                       latency.as_number());
  if (auto table = link.optional("table")) {
    for (const auto& row : table->items(1)) {
      row.allow_only({"bytes", "one_way_s", "all_reduce_s"});
      cluster::LinkSample sample;
      sample.bytes = row.required("bytes").as_positive_number();
      sample.one_way = row.required("one_way_s").as_positive_number();
      sample.all_reduce = row.required("all_reduce_s").as_positive_number();
      if (!result.table.empty() && sample.bytes <= result.table.back().bytes) {
        row.required("bytes").fail("a size larger than the row before's");
      }
      result.table.push_back(sample);
    }
  }
  return result;
}

nlohmann::json link_json(const cluster::Link& link) {
  nlohmann::json json{{"latency_s", link.latency}, {"bandwidth_bytes_per_s", link.bandwidth}};
  if (!link.table.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& sample : link.table) {
      rows.push_back({{"bytes", sample.bytes},
                      {"one_way_s", sample.one_way},
                      {"all_reduce_s", sample.all_reduce}});
    }
    json["table"] = rows;
  }
  return json;
}

}  // namespace

void ProfileDb::set_links(const MeasuredLinks& links) {
  for (auto& existing : links_) {
    if (existing.cluster == links.cluster) {
      existing = links;
      return;
    }
  }
  links_.push_back(links);
}

const MeasuredLinks* ProfileDb::links_for(const std::string& cluster) const {
  for (const auto& links : links_) {
    if (links.cluster == cluster) return &links;
  }
  return nullptr;
}

ProfileDb ProfileDb::load_for(const std::string& path, const std::string& model) {
  ProfileDb db = load(path);
  std::set<std::string> models;
  for (const auto& entry : db.entries()) models.insert(entry.key.model);
  if (!models.empty() && !models.count(model)) {
    log().warn("{} holds profiles of {} but none of {}: every layer is estimated instead", path,
               fmt::join(models, ", "), model);
  }
  return db;
}

ProfileDb ProfileDb::load(const std::string& path) {
  return read(YamlField::load_file(path));
}

ProfileDb ProfileDb::read(const YamlField& root) {
  if (!root.is_map()) root.fail("a JSON object with \"format\" and \"entries\"");
  root.allow_only({"format", "host", "entries", "links", "device_memory"});
  const YamlField format = root.required("format");
  if (format.as_string() != kProfileFormat) format.fail(std::string("\"") + kProfileFormat + "\"");
  ProfileDb db;
  if (auto host = root.optional("host")) db.set_host(host->as_string());
  for (const auto& entry : root.required("entries").items()) {
    entry.allow_only({"model", "layer", "device", "dtype", "tp", "seq_len", "micro_batch",
                      "forward_ms", "backward_input_ms", "backward_weight_ms", "backward_ms",
                      "optimizer_ms", "activation_bytes"});
    ProfileEntry parsed;
    parsed.key.model = entry.required("model").as_string();
    const size_t layer = entry.required("layer").as_choice({"embedding", "decoder_block", "head"});
    parsed.key.layer = static_cast<model::LayerKind>(layer);
    parsed.key.device = entry.required("device").as_string();
    const YamlField dtype = entry.required("dtype");
    const auto parsed_dtype = model::parse_dtype(dtype.as_string());
    if (!parsed_dtype) dtype.fail("a dtype: fp32, fp16 or bf16");
    parsed.key.dtype = *parsed_dtype;
    parsed.key.tp = entry.required("tp").as_positive_int();
    parsed.key.seq_len = entry.required("seq_len").as_positive_int();
    parsed.micro_batch = entry.required("micro_batch").as_positive_int();
    parsed.times.forward = read_milliseconds(entry, "forward_ms");
    parsed.times.backward_input = read_milliseconds(entry, "backward_input_ms");
    parsed.times.backward_weight = read_milliseconds(entry, "backward_weight_ms");
    if (entry.optional("backward_ms")) {
      parsed.times.backward = read_milliseconds(entry, "backward_ms");
    }
    if (entry.optional("optimizer_ms")) {
      parsed.times.optimizer = read_milliseconds(entry, "optimizer_ms");
    }
    if (auto bytes = entry.optional("activation_bytes")) {
      parsed.times.activation_bytes = bytes->as_positive_number();
    }
    db.add(parsed);
  }
  if (auto links = root.optional("links")) {
    for (const auto& item : links->items()) {
      item.allow_only({"cluster", "backend", "point_to_point", "all_reduce", "levels"});
      MeasuredLinks measured{item.required("cluster").as_string(),
                             item.required("backend").as_string(),
                             read_link(item, "point_to_point"),
                             read_link(item, "all_reduce"),
                             {}};
      if (auto levels = item.optional("levels")) {
        levels->allow_only({"intra_node", "intra_island", "inter_island"});
        for (const auto level : {cluster::LinkLevel::intra_node, cluster::LinkLevel::intra_island,
                                 cluster::LinkLevel::inter_island}) {
          const std::string key(cluster::to_string(level));
          if (levels->has(key)) measured.levels[level] = read_link(*levels, key.c_str());
        }
      }
      db.set_links(measured);
    }
  }
  if (auto memory = root.optional("device_memory")) {
    for (const auto& item : memory->items()) {
      item.allow_only({"device", "context_bytes", "collective_communicator_bytes", "p2p_peer_bytes",
                       "workspace_bytes", "allocator_ratio", "source"});
      MeasuredDeviceMemory measured;
      measured.device = item.required("device").as_string();
      auto& o = measured.overheads;
      o.context = item.required("context_bytes").as_non_negative_number();
      o.collective_communicator =
          item.required("collective_communicator_bytes").as_non_negative_number();
      o.p2p_peer = item.required("p2p_peer_bytes").as_non_negative_number();
      o.workspace = item.required("workspace_bytes").as_non_negative_number();
      const YamlField ratio = item.required("allocator_ratio");
      o.allocator_ratio = ratio.as_positive_number();
      if (o.allocator_ratio < 1) ratio.fail("a ratio of reserved to allocated bytes, at least 1");
      if (auto source = item.optional("source")) o.source = source->as_string();
      db.set_device_memory(measured);
    }
  }
  return db;
}

void ProfileDb::set_device_memory(const MeasuredDeviceMemory& measured) {
  for (auto& existing : device_memory_) {
    if (cluster::gpu_name_key(existing.device) == cluster::gpu_name_key(measured.device)) {
      existing = measured;
      return;
    }
  }
  device_memory_.push_back(measured);
}

const DeviceOverheads* ProfileDb::device_memory_for(const std::string& device) const {
  for (const auto& measured : device_memory_) {
    if (cluster::gpu_name_key(measured.device) == cluster::gpu_name_key(device)) {
      return &measured.overheads;
    }
  }
  return nullptr;
}

void ProfileDb::add(const ProfileEntry& entry) {
  ProfileKey key = entry.key;
  key.device = cluster::gpu_name_key(key.device);
  series_[key][entry.micro_batch] = entry.times;
  for (auto& existing : entries_) {
    ProfileKey existing_key = existing.key;
    existing_key.device = cluster::gpu_name_key(existing_key.device);
    if (!(existing_key < key) && !(key < existing_key) &&
        existing.micro_batch == entry.micro_batch) {
      existing = entry;
      return;
    }
  }
  entries_.push_back(entry);
}

std::optional<double> ProfileDb::optimizer(const ProfileKey& key) const {
  for (const auto& entry : entries_) {
    if (entry.key.model == key.model && entry.key.layer == key.layer &&
        cluster::gpu_name_key(entry.key.device) == cluster::gpu_name_key(key.device) &&
        entry.key.dtype == key.dtype && entry.key.tp == key.tp && entry.times.optimizer) {
      return entry.times.optimizer;
    }
  }
  return std::nullopt;
}

nlohmann::json to_json(const ProfileDb& db) {
  nlohmann::json entries = nlohmann::json::array();
  constexpr double kMilliseconds = 1e3;
  for (const auto& e : db.entries()) {
    nlohmann::json entry{{"model", e.key.model},
                         {"layer", model::to_string(e.key.layer)},
                         {"device", e.key.device},
                         {"dtype", model::to_string(e.key.dtype)},
                         {"tp", e.key.tp},
                         {"seq_len", e.key.seq_len},
                         {"micro_batch", e.micro_batch},
                         {"forward_ms", e.times.forward * kMilliseconds},
                         {"backward_input_ms", e.times.backward_input * kMilliseconds},
                         {"backward_weight_ms", e.times.backward_weight * kMilliseconds}};
    if (e.times.backward) entry["backward_ms"] = *e.times.backward * kMilliseconds;
    if (e.times.optimizer) entry["optimizer_ms"] = *e.times.optimizer * kMilliseconds;
    if (e.times.activation_bytes) entry["activation_bytes"] = *e.times.activation_bytes;
    entries.push_back(entry);
  }
  nlohmann::json doc{{"format", kProfileFormat}, {"entries", entries}};
  if (!db.host().empty()) doc["host"] = db.host();
  if (!db.links().empty()) {
    nlohmann::json links = nlohmann::json::array();
    for (const auto& l : db.links()) {
      links.push_back({{"cluster", l.cluster},
                       {"backend", l.backend},
                       {"point_to_point", link_json(l.point_to_point)},
                       {"all_reduce", link_json(l.all_reduce)}});
      if (!l.levels.empty()) {
        nlohmann::json levels = nlohmann::json::object();
        for (const auto& [level, link] : l.levels) {
          levels[std::string(cluster::to_string(level))] = link_json(link);
        }
        links.back()["levels"] = levels;
      }
    }
    doc["links"] = links;
  }
  if (!db.device_memory().empty()) {
    nlohmann::json memory = nlohmann::json::array();
    for (const auto& m : db.device_memory()) {
      const auto& o = m.overheads;
      memory.push_back({{"device", m.device},
                        {"context_bytes", o.context},
                        {"collective_communicator_bytes", o.collective_communicator},
                        {"p2p_peer_bytes", o.p2p_peer},
                        {"workspace_bytes", o.workspace},
                        {"allocator_ratio", o.allocator_ratio},
                        {"source", o.source}});
    }
    doc["device_memory"] = memory;
  }
  return doc;
}

size_t ProfileDb::size() const {
  size_t count = 0;
  for (const auto& [key, points] : series_) count += points.size();
  return count;
}

std::optional<ProfileLookup> ProfileDb::find(const ProfileKey& key, int64_t micro_batch) const {
  ProfileKey wanted = key;
  wanted.device = cluster::gpu_name_key(key.device);
  const auto found = series_.find(wanted);
  if (found == series_.end() || found->second.empty()) return std::nullopt;
  const auto& points = found->second;
  const auto exact = points.find(micro_batch);
  if (exact != points.end()) return ProfileLookup{exact->second, ProfileMatch::exact};

  const auto above = points.upper_bound(micro_batch);
  if (above == points.begin() || above == points.end()) {
    const auto& nearest = above == points.begin() ? *points.begin() : *points.rbegin();
    const double factor = static_cast<double>(micro_batch) / static_cast<double>(nearest.first);
    return ProfileLookup{scaled(nearest.second, factor), ProfileMatch::extrapolated};
  }
  const auto below = std::prev(above);
  const double weight = static_cast<double>(micro_batch - below->first) /
                        static_cast<double>(above->first - below->first);
  return ProfileLookup{mix(below->second, above->second, weight), ProfileMatch::interpolated};
}

}  // namespace hyperpipe::cost
