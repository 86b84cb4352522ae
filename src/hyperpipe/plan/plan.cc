#include "hyperpipe/plan/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/limits.h"

namespace hyperpipe::plan {
namespace {

model::Recompute read_recompute(const YamlField& field) {
  return static_cast<model::Recompute>(field.as_choice(model::recompute_names()));
}

int read_count(const YamlField& field) {
  return static_cast<int>(field.as_positive_int());
}

void read_schedule(const YamlField& field, Pipeline& plan) {
  if (field.is_scalar()) {
    const auto kind = schedule::parse_schedule_kind(field.as_string());
    if (!kind) field.as_choice(schedule::schedule_kind_names());  // throws with the choices
    plan.schedule = *kind;
    return;
  }
  field.allow_only({"kind", "chunks", "warmup"});
  const YamlField kind_field = field.required("kind");
  plan.schedule = *schedule::parse_schedule_kind(
      schedule::schedule_kind_names()[kind_field.as_choice(schedule::schedule_kind_names())]);
  if (auto chunks = field.optional("chunks")) plan.chunks = read_count(*chunks);
  if (plan.chunks > 1 && plan.schedule != schedule::ScheduleKind::interleaved) {
    field.required("chunks").fail("1: only the interleaved schedule runs several chunks");
  }
  if (auto warmup = field.optional("warmup")) {
    if (plan.schedule != schedule::ScheduleKind::hetero_1f1b) {
      warmup->fail("no warm-up list: only hetero-1f1b takes one");
    }
    for (const auto& depth : warmup->items(1)) {
      const int value = read_count(depth);
      // A stage cannot hold more forwards in flight than the one before can send it.
      if (!plan.warmup.empty() && value > plan.warmup.back()) {
        depth.fail(
            fmt::format("a depth of at most {} (the stage before's): a deeper warm-up "
                        "behind a shallower one deadlocks",
                        plan.warmup.back()));
      }
      plan.warmup.push_back(value);
    }
  }
}

StagePlan read_stage(const YamlField& entry, model::Recompute default_recompute) {
  entry.allow_only({"layers", "devices", "dp", "tp", "recompute"});
  StagePlan stage;
  const YamlField layers = entry.required("layers");
  const auto bounds = layers.items(2);
  if (bounds.size() != 2) layers.fail("[first, end): two layer indices");
  const int64_t first = bounds[0].as_int();
  const int64_t end = bounds[1].as_int();
  if (first < 0 || end <= first) layers.fail("[first, end) with 0 <= first < end");
  stage.first_layer = static_cast<int>(first);
  stage.end_layer = static_cast<int>(end);
  const YamlField devices = entry.required("devices");
  for (const auto& device : devices.items(1)) {
    const int64_t id = device.as_int();
    if (id < 0 || id > kMaxSize) device.fail(fmt::format("a device id from 0 to {}", kMaxSize));
    // Each device runs one process of the stage: listed twice, it would run two.
    if (std::find(stage.devices.begin(), stage.devices.end(), id) != stage.devices.end()) {
      device.fail(fmt::format("a device not listed before in this stage (device {} is)", id));
    }
    stage.devices.push_back(static_cast<int>(id));
  }
  const int count = static_cast<int>(stage.devices.size());
  if (auto tp = entry.optional("tp")) stage.tp = read_count(*tp);
  stage.dp = count / stage.tp;
  if (auto dp = entry.optional("dp")) stage.dp = read_count(*dp);
  if (stage.dp * stage.tp != count) {
    devices.fail(
        fmt::format("dp × tp = {} × {} = {} device ids", stage.dp, stage.tp, stage.dp * stage.tp));
  }
  stage.recompute = default_recompute;
  if (auto recompute = entry.optional("recompute")) stage.recompute = read_recompute(*recompute);
  return stage;
}

// The fields every pipeline has (the plan's own, and each of its replicas).
const std::vector<std::string> kPipelineFields{"micro_batch_size", "micro_batches", "schedule",
                                               "recompute", "stages"};

void read_pipeline(const YamlField& root, Pipeline& plan) {
  plan.micro_batch_size = root.required("micro_batch_size").as_positive_int();
  const YamlField micro_batches = root.required("micro_batches");
  plan.micro_batches = static_cast<int>(micro_batches.as_positive_int(kMaxMicroBatches));
  if (auto kind = root.optional("schedule")) read_schedule(*kind, plan);
  model::Recompute recompute = model::Recompute::none;
  if (auto field = root.optional("recompute")) recompute = read_recompute(*field);

  const YamlField stages = root.required("stages");
  int expected_first = 0;
  for (const auto& entry : stages.items(1)) {
    StagePlan stage = read_stage(entry, recompute);
    if (stage.first_layer != expected_first) {
      entry.required("layers").fail(fmt::format(
          "a range starting at layer {}, where the previous stage ends", expected_first));
    }
    expected_first = stage.end_layer;
    plan.stages.push_back(std::move(stage));
  }
  const int count = static_cast<int>(plan.stages.size());
  // A schedule holds about three ops per stage and micro-batch; keep it in memory.
  if (static_cast<int64_t>(count) * plan.micro_batches * 3 > kMaxScheduleOps) {
    micro_batches.fail(
        fmt::format("at most {} micro-batches with {} stages", kMaxScheduleOps / 3 / count, count));
  }
  if (count % plan.chunks != 0) {
    stages.fail(fmt::format("a multiple of chunks = {} stages", plan.chunks));
  }
  // With chunks, stage s and stage s + ranks are two chunks of one device group.
  for (int s = plan.ranks(); s < count; ++s) {
    const StagePlan& owner = plan.stages[s % plan.ranks()];
    if (plan.stages[s].devices != owner.devices || plan.stages[s].tp != owner.tp) {
      stages.items()[s].required("devices").fail(fmt::format(
          "the devices and tp of stage {}: with {} chunks, stage {} is another chunk of the "
          "same device group",
          s % plan.ranks(), plan.chunks, s));
    }
  }
  if (!plan.warmup.empty() && static_cast<int>(plan.warmup.size()) != plan.ranks()) {
    root.required("schedule")
        .required("warmup")
        .fail(fmt::format("one depth per stage ({} of them)", plan.ranks()));
  }
}

}  // namespace

Plan read_plan(const YamlField& root) {
  if (!root.is_map()) root.fail("a plan: an object with \"format\", \"model\", \"stages\"…");
  std::vector<std::string> fields{"format",
                                  "name",
                                  "model",
                                  "cluster",
                                  "seq_len",
                                  "replicas",
                                  "predicted",
                                  "overlap_allreduce",
                                  "gradient_reduce_dtype",
                                  "dtype",
                                  "sequence_parallel",
                                  "runtime",
                                  "shard_optimizer",
                                  "memory_margin"};
  fields.insert(fields.end(), kPipelineFields.begin(), kPipelineFields.end());
  root.allow_only(fields);
  const YamlField format = root.required("format");
  if (format.as_string() != kPlanFormat) format.fail(std::string("\"") + kPlanFormat + "\"");
  Plan plan;
  plan.model = root.required("model").as_string();
  plan.cluster = root.required("cluster").as_string();
  if (auto seq = root.optional("seq_len")) plan.seq_len = seq->as_positive_int();
  if (auto overlap = root.optional("overlap_allreduce"))
    plan.overlap_allreduce = overlap->as_bool();
  if (auto sequence = root.optional("sequence_parallel")) {
    plan.sequence_parallel = sequence->as_bool();
  }
  if (auto reduce = root.optional("gradient_reduce_dtype")) {
    const auto dtype = model::parse_dtype(reduce->as_string());
    if (!dtype) reduce->fail(fmt::format("one of {}", fmt::join(model::dtype_names(), ", ")));
    plan.gradient_reduce_dtype = *dtype;
  }
  if (auto field = root.optional("dtype")) {
    const auto dtype = model::parse_dtype(field->as_string());
    if (!dtype) field->fail(fmt::format("one of {}", fmt::join(model::dtype_names(), ", ")));
    plan.dtype = *dtype;
  }
  read_pipeline(root, plan);
  if (auto replicas = root.optional("replicas")) {
    for (const auto& entry : replicas->items()) {
      entry.allow_only(kPipelineFields);
      read_pipeline(entry, plan.replicas.emplace_back());
    }
  }
  if (auto shard = root.optional("shard_optimizer")) plan.shard_optimizer = shard->as_bool();
  if (auto margin = root.optional("memory_margin")) {
    const double value = margin->as_non_negative_number();
    if (value >= 1) margin->fail("a share of each device's memory, from 0 up to (not with) 1");
    plan.memory_margin = value;
  }
  const auto runtime = root.optional("runtime");
  if (runtime) {
    const auto framework = parse_framework(runtime->as_string());
    if (!framework) runtime->fail(fmt::format("one of {}", fmt::join(framework_names(), ", ")));
    plan.runtime = *framework;
  }
  if (const auto refused = refusal(plan, plan.runtime)) {
    (runtime ? *runtime : root)
        .fail(fmt::format("a plan {} can run ({}: {})", traits(plan.runtime).display_name,
                          refused->field, refused->reason));
  }
  return plan;
}

Plan load_plan(const std::string& path) {
  return read_plan(YamlField::load_file(path));
}

std::vector<int> ranks_of_devices(const Plan& plan, const std::vector<int>& devices_given) {
  const auto devices = devices_in_rank_order(plan);
  std::vector<int> ranks;
  if (devices_given.empty()) {
    for (size_t rank = 0; rank < devices.size(); ++rank) ranks.push_back(static_cast<int>(rank));
    return ranks;
  }
  for (int device : devices_given) {
    const auto found = std::find(devices.begin(), devices.end(), device);
    if (found == devices.end()) {
      throw InputError("--devices-here", std::to_string(device),
                       fmt::format("devices of the plan ({})", format_devices(devices)));
    }
    const int rank = static_cast<int>(found - devices.begin());
    if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) {
      throw InputError("--devices-here", std::to_string(device), "each device once");
    }
    ranks.push_back(rank);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<int> devices_in_rank_order(const Plan& plan) {
  std::vector<int> devices;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const Pipeline& pipeline = plan.pipeline(p);
    // Stages group, group + ranks, … share the first one's devices.
    for (int group = 0; group < pipeline.ranks(); ++group) {
      const auto& group_devices = pipeline.stages.at(group).devices;
      devices.insert(devices.end(), group_devices.begin(), group_devices.end());
    }
  }
  return devices;
}

std::string format_layers(int first_layer, int end_layer) {
  return fmt::format("[{}, {})", first_layer, end_layer);
}

std::string layer_numbering_note(int chain_layers) {
  return fmt::format(
      "Layers [first, end) of the chain: 0 the embedding, 1 to {} the blocks, {} the head, as in "
      "plan files",
      chain_layers - 2, chain_layers - 1);
}

std::string format_devices(const std::vector<int>& devices) {
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  std::string text;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += j == i ? std::to_string(sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]);
    i = j + 1;
  }
  return text;
}

std::string resolve_reference(const std::string& plan_path, const std::string& reference) {
  const std::filesystem::path ref(reference);
  if (ref.is_relative()) {
    const auto beside = std::filesystem::path(plan_path).parent_path() / ref;
    if (std::filesystem::is_regular_file(beside)) return beside.string();
  }
  return reference;
}

std::string reference_from_anywhere(const std::string& plan_path, const std::string& reference) {
  const std::string resolved = resolve_reference(plan_path, reference);
  return std::filesystem::is_regular_file(resolved)
             ? std::filesystem::absolute(resolved).lexically_normal().string()
             : resolved;
}

std::string reference_beside(const std::optional<std::string>& plan_path,
                             const std::string& name_or_path) {
  if (!plan_path || !std::filesystem::is_regular_file(name_or_path)) return name_or_path;
  const auto base = std::filesystem::absolute(*plan_path).parent_path();
  return std::filesystem::relative(std::filesystem::absolute(name_or_path), base).string();
}

std::string format_stages(const Plan& plan) {
  std::string text;
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const auto& stages = plan.pipeline(p).stages;
    for (size_t s = 0; s < stages.size(); ++s) {
      text += fmt::format("{}{} on {}", text.empty() ? "" : (s ? " · " : " ‖ "),
                          format_layers(stages[s].first_layer, stages[s].end_layer),
                          format_devices(stages[s].devices));
    }
  }
  return text;
}

}  // namespace hyperpipe::plan
