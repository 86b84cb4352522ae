#include "hyperpipe/cluster/cluster_loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <optional>

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"
#include "hyperpipe/common/nearest_name.h"

namespace hyperpipe::cluster {
namespace {

double read_fraction(const YamlField& field) {
  const double value = field.as_positive_number();
  if (value > 1.0) field.fail("a fraction in (0, 1]");
  return value;
}

// A `gpu_types` entry: a new type (all figures required) or changes to a known one.
GpuType read_gpu_type(const YamlField& entry, const std::vector<GpuType>& known) {
  entry.allow_only({"name", "memory", "memory_bandwidth", "peak", "matmul_efficiency",
                    "memory_efficiency", "reserved_memory", "speed", "compute_capability",
                    "multiprocessors"});
  const std::string name = entry.required("name").as_string();
  std::optional<GpuType> type;
  for (const auto& candidate : known) {
    if (same_gpu_name(candidate.name, name)) type = candidate;
  }
  const bool is_new = !type;
  if (is_new) {
    type = GpuType{};
    type->name = name;
    type->source = entry.source();
    for (const char* key : {"memory", "memory_bandwidth", "peak"}) entry.required(key);
  }
  if (auto memory = entry.optional("memory")) type->memory_bytes = memory->as_bytes();
  if (auto bandwidth = entry.optional("memory_bandwidth")) {
    type->memory_bandwidth = bandwidth->as_bandwidth();
  }
  if (auto peak = entry.optional("peak")) {
    peak->allow_only({"fp32", "tf32", "fp16", "bf16"});
    if (is_new) {
      peak->required("fp32");
      peak->required("fp16");
    }
    if (auto v = peak->optional("fp32")) type->peak.fp32 = v->as_flop_rate();
    if (auto v = peak->optional("fp16")) type->peak.fp16 = v->as_flop_rate();
    // A new type without tensor-core figures for these formats runs them at the rate of
    // their neighbours: tf32 like fp32, bf16 like fp16.
    type->peak.tf32 = peak->has("tf32") ? peak->required("tf32").as_flop_rate()
                                        : (is_new ? type->peak.fp32 : type->peak.tf32);
    type->peak.bf16 = peak->has("bf16") ? peak->required("bf16").as_flop_rate()
                                        : (is_new ? type->peak.fp16 : type->peak.bf16);
  }
  if (auto v = entry.optional("matmul_efficiency")) type->matmul_efficiency = read_fraction(*v);
  if (auto v = entry.optional("memory_efficiency")) type->memory_efficiency = read_fraction(*v);
  if (auto v = entry.optional("reserved_memory")) type->reserved_memory = v->as_bytes();
  if (auto v = entry.optional("speed")) type->speed = v->as_positive_number();
  if (auto v = entry.optional("compute_capability")) {
    const int64_t major = v->as_int();
    if (major < 1)
      v->fail("a CUDA compute capability's major version (8 for Ampere, 9 for Hopper)");
    type->compute_capability = static_cast<int>(major);
  }
  if (auto v = entry.optional("multiprocessors")) {
    const int64_t count = v->as_int();
    if (count < 1 || count > kMaxMultiprocessors) {
      v->fail(
          fmt::format("a count of streaming multiprocessors from 1 to {}", kMaxMultiprocessors));
    }
    type->multiprocessors = static_cast<int>(count);
  }
  return *type;
}

// A link's measured table: message sizes ascending, each with its one-way time and, in
// every row or none, the two-rank all-reduce's.
std::vector<LinkSample> read_link_table(const YamlField& field) {
  std::vector<LinkSample> table;
  const auto rows = field.items(1);
  for (const auto& row : rows) {
    row.allow_only({"bytes", "one_way", "all_reduce"});
    LinkSample sample;
    const YamlField bytes = row.required("bytes");
    sample.bytes = bytes.as_bytes();
    if (sample.bytes <= 0 || (!table.empty() && sample.bytes <= table.back().bytes)) {
      bytes.fail("a positive size larger than the row before's");
    }
    const YamlField one_way = row.required("one_way");
    sample.one_way = one_way.as_duration();
    if (sample.one_way <= 0) one_way.fail("a positive time");
    if (row.has("all_reduce") != rows.front().has("all_reduce")) {
      row.fail("`all_reduce` in every row of the table or in none");
    }
    if (auto all_reduce = row.optional("all_reduce")) {
      sample.all_reduce = all_reduce->as_duration();
      if (sample.all_reduce <= 0) all_reduce->fail("a positive time");
    }
    table.push_back(sample);
  }
  return table;
}

Link read_link(const YamlField& field, bool is_override) {
  if (is_override) {
    field.allow_only({"between", "bandwidth", "latency", "efficiency", "table"});
  } else {
    field.allow_only({"bandwidth", "latency", "efficiency", "table"});
  }
  Link link(field.required("bandwidth").as_bandwidth(), field.required("latency").as_duration());
  if (auto efficiency = field.optional("efficiency")) link.efficiency = read_fraction(*efficiency);
  if (auto table = field.optional("table")) link.table = read_link_table(*table);
  return link;
}

std::vector<Node> read_nodes(const YamlField& root, const std::vector<GpuType>& types) {
  std::vector<Node> nodes;
  std::map<std::string, int> seen;
  for (const auto& entry : root.required("nodes").items(1)) {
    entry.allow_only({"name", "gpu", "count", "memory"});
    Node node;
    const YamlField name = entry.required("name");
    node.name = name.as_string();
    if (seen.count(node.name)) name.fail("a node name not used before");
    seen[node.name] = static_cast<int>(nodes.size());
    const YamlField gpu = entry.required("gpu");
    const GpuType* type = nullptr;
    for (const auto& candidate : types) {
      if (same_gpu_name(candidate.name, gpu.as_string())) type = &candidate;
    }
    if (!type) gpu.fail("a GPU type from `hyperpipe devices` or from this file's gpu_types");
    node.gpu_type = type->name;
    const int64_t count = entry.required("count").as_positive_int(kMaxGpusPerNode);
    node.gpu_count = static_cast<int>(count);
    node.memory_bytes = type->memory_bytes;
    if (auto memory = entry.optional("memory")) node.memory_bytes = memory->as_bytes();
    nodes.push_back(node);
  }
  return nodes;
}

std::vector<Island> read_islands(const YamlField& root, std::vector<Node>& nodes) {
  std::vector<Island> islands;
  if (!root.has("islands")) {  // one island holding every node
    Island all{"all", {}};
    for (int n = 0; n < static_cast<int>(nodes.size()); ++n) all.nodes.push_back(n);
    return {all};
  }
  std::vector<int> island_of(nodes.size(), -1);
  for (const auto& entry : root.required("islands").items(1)) {
    entry.allow_only({"name", "nodes"});
    Island island;
    const YamlField name = entry.required("name");
    island.name = name.as_string();
    for (const auto& other : islands) {
      if (other.name == island.name) name.fail("an island name not used before");
    }
    for (const auto& node : nodes) {
      if (node.name == island.name) name.fail("an island name that is not also a node name");
    }
    for (const auto& member : entry.required("nodes").items(1)) {
      const std::string node_name = member.as_string();
      int found = -1;
      for (int n = 0; n < static_cast<int>(nodes.size()); ++n) {
        if (nodes[n].name == node_name) found = n;
      }
      if (found < 0) member.fail("the name of a node listed under 'nodes'");
      if (island_of[found] >= 0) member.fail("a node that belongs to no other island");
      island_of[found] = static_cast<int>(islands.size());
      island.nodes.push_back(found);
    }
    islands.push_back(island);
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (island_of[n] < 0) {
      throw InputError(root.source(), "field 'islands'",
                       "node '" + nodes[n].name + "' belongs to no island; list it in one");
    }
    nodes[n].island = island_of[n];
  }
  return islands;
}

// The link of each level. A level no pair of devices uses may be left out.
std::vector<Link> read_level_links(const YamlField& links, const std::vector<Node>& nodes,
                                   const std::vector<Island>& islands) {
  bool needed[3] = {false, false, islands.size() > 1};
  for (const auto& node : nodes) needed[0] = needed[0] || node.gpu_count > 1;
  for (const auto& island : islands) needed[1] = needed[1] || island.nodes.size() > 1;
  const char* keys[3] = {"intra_node", "intra_island", "inter_island"};
  std::optional<Link> found[3];
  for (int level = 0; level < 3; ++level) {
    if (links.has(keys[level])) {
      found[level] = read_link(links.required(keys[level]), false);
    } else if (needed[level]) {
      links.required(keys[level]);  // throws: missing required field
    }
  }
  // Fill unused levels from the nearest defined one, so every level has a link.
  std::vector<Link> result(3);
  for (int level = 0; level < 3; ++level) {
    for (int distance = 0; distance < 3 && !found[level]; ++distance) {
      for (int other : {level - distance, level + distance}) {
        if (!found[level] && other >= 0 && other < 3 && found[other]) found[level] = found[other];
      }
    }
    result[level] = found[level].value_or(Link{});
  }
  return result;
}

std::vector<LinkOverride> read_overrides(const YamlField& links, const std::vector<Node>& nodes,
                                         const std::vector<Island>& islands) {
  std::vector<LinkOverride> overrides;
  const auto override_list = links.optional("overrides");
  if (!override_list) return overrides;
  for (const auto& entry : override_list->items()) {
    const Link link = read_link(entry, true);
    const YamlField between = entry.required("between");
    const auto names = between.items(2);
    if (names.size() != 2) between.fail("a list of two node or island names");
    for (const auto& name : names) {
      const std::string text = name.as_string();
      bool known = false;
      for (const auto& node : nodes) known = known || node.name == text;
      for (const auto& island : islands) known = known || island.name == text;
      if (!known) name.fail("the name of a node or an island of this cluster");
    }
    overrides.push_back({names[0].as_string(), names[1].as_string(), link});
  }
  return overrides;
}

}  // namespace

Cluster read_cluster_yaml(const YamlField& root) {
  if (!root.is_map()) root.fail("a mapping with 'nodes' and 'links'");
  root.allow_only({"name", "gpu_types", "nodes", "islands", "links"});
  std::string name = std::filesystem::path(root.source()).stem().string();
  if (auto field = root.optional("name")) name = field->as_string();

  std::vector<GpuType> types = gpu_catalogue();
  if (auto extra = root.optional("gpu_types")) {
    for (const auto& entry : extra->items()) {
      GpuType type = read_gpu_type(entry, types);
      bool replaced = false;
      for (auto& known : types) {
        if (same_gpu_name(known.name, type.name)) {
          known = type;
          replaced = true;
        }
      }
      if (!replaced) types.push_back(type);
    }
  }

  std::vector<Node> nodes = read_nodes(root, types);
  std::vector<Island> islands = read_islands(root, nodes);
  const YamlField links = root.required("links");
  links.allow_only({"intra_node", "intra_island", "inter_island", "overrides"});
  std::vector<Link> level_links = read_level_links(links, nodes, islands);
  std::vector<LinkOverride> overrides = read_overrides(links, nodes, islands);
  return Cluster(name, std::move(types), std::move(nodes), std::move(islands),
                 std::move(level_links), std::move(overrides));
}

Cluster load_cluster(const std::string& name_or_path) {
  if (std::filesystem::exists(name_or_path)) {
    return read_cluster_yaml(YamlField::load_file(name_or_path));
  }
  // Built-in names as model names: without regard to case.
  const auto lower = [](std::string text) {
    for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  for (const auto& [name, text] : builtin_clusters()) {
    if (name == lower(name_or_path)) {
      return read_cluster_yaml(YamlField::load_string(text, "built-in cluster '" + name + "'"));
    }
  }
  std::vector<std::string> names;
  for (const auto& entry : builtin_clusters()) names.push_back(entry.first);
  throw InputError("--cluster", "'" + name_or_path + "'",
                   fmt::format("not an existing cluster file nor a built-in cluster ({}){}",
                               fmt::join(names, ", "), did_you_mean(name_or_path, names)));
}

}  // namespace hyperpipe::cluster
