#include "hyperpipe/exporter/export.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "hyperpipe/common/error.h"
#include "hyperpipe/exporter/rank_placement.h"

namespace hyperpipe::exporter {
namespace {

using model::LayerKind;
using schedule::ScheduleKind;

// What one stage (in the plan's stage order: chunk by chunk, rank by rank) holds.
struct StageLayers {
  bool embedding = false;
  int first_block = 0;  // index among the decoder blocks
  int blocks = 0;
  bool head = false;
};

std::vector<StageLayers> stage_layers(const plan::Plan& plan, const model::Model& model) {
  std::vector<StageLayers> result;
  int block = 0;
  for (const auto& stage : plan.stages) {
    StageLayers layers;
    layers.first_block = block;
    for (int l = stage.first_layer; l < stage.end_layer; ++l) {
      switch (model.layers()[l].kind()) {
        case LayerKind::embedding:
          layers.embedding = true;
          break;
        case LayerKind::decoder_block:
          ++layers.blocks;
          ++block;
          break;
        case LayerKind::head:
          layers.head = true;
          break;
      }
    }
    result.push_back(layers);
  }
  return result;
}

// Sequences per micro-batch on each data-parallel rank, as the three frameworks take it.
int64_t per_rank_micro_batch(const plan::Plan& plan, plan::Framework target) {
  const int dp = plan.stages.front().dp;
  if (plan.micro_batch_size % dp != 0) {
    throw InputError("--to", std::string(to_string(target)),
                     fmt::format("a micro-batch that splits evenly over dp {}: {} takes one size "
                                 "per data-parallel rank, the plan's is {} sequences",
                                 dp, plan::traits(target).display_name, plan.micro_batch_size));
  }
  return plan.micro_batch_size / dp;
}

int64_t sequence_length(const plan::Plan& plan, const model::Model& model) {
  return model.config().sequence_length(plan.seq_len);
}

std::string header(const plan::Plan& plan, plan::Framework target, const std::string& comment) {
  const auto& traits = plan::traits(target);
  return fmt::format("{} {} ({}) settings for HyperPipe's plan of {} on {}\n", comment,
                     traits.display_name, traits.version, plan.model, plan.cluster);
}

// Megatron-LM's --pipeline-model-parallel-layout: stages split by '|', E the embedding,
// t a decoder layer, L the loss (our head); stages in virtual-stage order, as ours.
std::string megatron_layout(const std::vector<StageLayers>& stages) {
  std::vector<std::string> parts;
  for (const auto& s : stages) {
    std::vector<std::string> items;
    if (s.embedding) items.emplace_back("E");
    if (s.blocks == 1) items.emplace_back("t");
    if (s.blocks > 1) items.push_back(fmt::format("t*{}", s.blocks));
    if (s.head) items.emplace_back("L");
    parts.push_back(fmt::format("{}", fmt::join(items, ",")));
  }
  return fmt::format("{}", fmt::join(parts, "|"));
}

ExportedFile megatron(const plan::Plan& plan, const model::Model& model) {
  const auto& first = plan.stages.front();
  const auto stages = stage_layers(plan, model);
  std::vector<std::string> args{
      fmt::format("--tensor-model-parallel-size {}", first.tp),
      fmt::format("--pipeline-model-parallel-size {}", plan.ranks()),
      fmt::format("--pipeline-model-parallel-layout \"{}\"", megatron_layout(stages)),
      fmt::format("--num-layers {}", stages.back().first_block + stages.back().blocks),
      fmt::format("--seq-length {}", sequence_length(plan, model)),
      fmt::format("--micro-batch-size {}", per_rank_micro_batch(plan, plan::Framework::megatron)),
      fmt::format("--global-batch-size {}", plan.global_batch())};
  const auto dtype = model.config().dtype;
  if (dtype == model::DType::bf16) args.emplace_back("--bf16");
  if (dtype == model::DType::fp16) args.emplace_back("--fp16");
  if (first.recompute == model::Recompute::selective) {
    args.emplace_back("--recompute-granularity selective");
  } else if (first.recompute == model::Recompute::full) {
    args.emplace_back(
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
  }
  if (plan.sequence_parallel && first.tp > 1) args.emplace_back("--sequence-parallel");
  if (plan.overlap_allreduce) args.emplace_back("--overlap-grad-reduce");
  if (plan.shard_optimizer) args.emplace_back("--use-distributed-optimizer");
  if (plan.schedule == ScheduleKind::interleaved) args.emplace_back("--overlap-p2p-comm");
  std::string text = header(plan, plan::Framework::megatron, "#");
  text += fmt::format(
      "# dp {} (world size {} = tp × pp × dp); ranks placed by rankfile or torchrun.txt\n"
      "HYPERPIPE_MEGATRON_ARGS=(\n",
      first.dp, first.dp * first.tp * plan.ranks());
  for (const auto& arg : args) text += "  " + arg + "\n";
  text += ")\n";
  return {"megatron-args.sh", text};
}

std::vector<ExportedFile> deepspeed(const plan::Plan& plan, const model::Model& model) {
  const auto& first = plan.stages.front();
  nlohmann::json config{
      {"train_batch_size", plan.global_batch()},
      {"train_micro_batch_size_per_gpu", per_rank_micro_batch(plan, plan::Framework::deepspeed)},
      {"gradient_accumulation_steps", plan.micro_batches},
      {"zero_optimization", {{"stage", plan.shard_optimizer ? 1 : 0}}}};
  const auto dtype = model.config().dtype;
  if (dtype == model::DType::bf16) config["bf16"] = {{"enabled", true}};
  if (dtype == model::DType::fp16) config["fp16"] = {{"enabled", true}};
  // PipelineModule's partition: layer specs [parts[s], parts[s + 1]) on stage s, over a
  // layer list in the model's chain order (embedding, decoder blocks, head).
  std::vector<int> parts;
  for (const auto& stage : plan.stages) parts.push_back(stage.first_layer);
  parts.push_back(plan.stages.back().end_layer);
  const int interval = first.recompute == model::Recompute::full ? 1 : 0;
  std::string module = header(plan, plan::Framework::deepspeed, "#");
  module += fmt::format(
      "# PipelineModule has no option for explicit stage boundaries: this subclass sets them\n"
      "# (layer specs [PARTS[s], PARTS[s + 1]) on stage s, the list being the model's chain:\n"
      "# embedding, {} decoder layers, head) as DeepSpeed's own partition methods end.\n"
      "import deepspeed\n\n"
      "PARTS = [{}]\n"
      "PIPE_STAGES, DATA_PARALLEL, MODEL_PARALLEL = {}, {}, {}\n"
      "ACTIVATION_CHECKPOINT_INTERVAL = {}  # PipelineModule(..., "
      "activation_checkpoint_interval=)\n\n\n"
      "class HyperPipePartitionedModule(deepspeed.pipe.PipelineModule):\n"
      "    def _partition_layers(self, method=\"uniform\"):\n"
      "        assert len(self._layer_specs) == PARTS[-1], \"a layer list of another model\"\n"
      "        self.parts = list(PARTS)\n"
      "        stage = self._topo.get_coord(self.global_rank).pipe\n"
      "        self._set_bounds(start=self.parts[stage], stop=self.parts[stage + 1])\n",
      model.num_layers() - 2, fmt::join(parts, ", "), plan.ranks(), first.dp, first.tp, interval);
  return {{"ds_config.json", config.dump(2) + "\n"}, {"deepspeed_partition.py", module}};
}

// torch.distributed.pipelining's names of the schedules (get_schedule_class).
std::string torchtitan_schedule(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::gpipe:
      return "GPipe";
    case ScheduleKind::interleaved:
      return "Interleaved1F1B";
    default:
      return "1F1B";
  }
}

ExportedFile torchtitan(const plan::Plan& plan, const model::Model& model) {
  const auto& first = plan.stages.front();
  const auto stages = stage_layers(plan, model);
  std::vector<std::string> chunks;
  for (const auto& s : stages) {
    std::vector<std::string> names;
    if (s.embedding) names.emplace_back("\"tok_embeddings\"");
    for (int b = 0; b < s.blocks; ++b)
      names.push_back(fmt::format("\"layers.{}\"", s.first_block + b));
    if (s.head) {
      names.emplace_back("\"norm\"");
      names.emplace_back("\"output\"");
    }
    chunks.push_back(fmt::format("[{}]", fmt::join(names, ", ")));
  }
  const char* modes[] = {"none", "selective", "full"};
  // Sequences per micro-batch on each data-parallel rank: torchtitan cuts its local batch
  // into micro-batches of this size (their count is local_batch_size ÷ it).
  const int64_t micro_batch = per_rank_micro_batch(plan, plan::Framework::torchtitan);
  std::string text = header(plan, plan::Framework::torchtitan, "#");
  text += fmt::format(
      "# Module names of torchtitan's Llama (tok_embeddings, layers.N, norm, output).\n"
      "[parallelism]\n"
      "pipeline_parallel_degree = {}\n"
      "pipeline_parallel_schedule = \"{}\"\n"
      "module_fqns_per_model_part = [{}]\n"
      "pipeline_parallel_microbatch_size = {}\n"
      "tensor_parallel_degree = {}\n"
      "data_parallel_shard_degree = {}\n"
      "data_parallel_replicate_degree = {}\n\n"
      "[training]\n"
      "local_batch_size = {}\n"
      "seq_len = {}\n\n"
      "[activation_checkpoint]\n"
      "mode = \"{}\"\n"
      "{}",
      plan.ranks(), torchtitan_schedule(plan.schedule), fmt::join(chunks, ", "), micro_batch,
      first.tp, plan.shard_optimizer ? first.dp : 1, plan.shard_optimizer ? 1 : first.dp,
      micro_batch * plan.micro_batches, sequence_length(plan, model),
      modes[static_cast<int>(first.recompute)],
      // The per-op policy HyperPipe's memory count assumes for `selective` (its default in
      // torchtitan's 2024 configs was "2", every second block in full).
      first.recompute == model::Recompute::selective ? "selective_ac_option = \"op\"\n" : "");
  return {"torchtitan.toml", text};
}

}  // namespace

std::vector<ExportedFile> export_plan(const plan::Plan& plan, const model::Model& model,
                                      const cluster::Cluster& cluster, plan::Framework target) {
  const std::string name(to_string(target));
  if (target == plan::Framework::hyperpipe) {
    throw InputError("--to", name,
                     "megatron, deepspeed or torchtitan (HyperPipe runs the plan "
                     "file itself: hyperpipe launch --plan)");
  }
  if (const auto refused = plan::refusal(plan, target)) {
    throw InputError("--to", name,
                     fmt::format("a plan {} can run ({}: {})", plan::traits(target).display_name,
                                 refused->field, refused->reason));
  }
  std::vector<ExportedFile> files;
  if (target == plan::Framework::megatron) files.push_back(megatron(plan, model));
  if (target == plan::Framework::deepspeed) files = deepspeed(plan, model);
  if (target == plan::Framework::torchtitan) files.push_back(torchtitan(plan, model));
  const auto ranks = place_ranks(plan, cluster);
  files.push_back({"rankfile", rankfile(ranks)});
  const auto torchrun = torchrun_lines(ranks);
  files.push_back(
      {"torchrun.txt",
       torchrun ? *torchrun
                : "# torchrun cannot place these ranks (each host needs one block of "
                  "consecutive ranks of one size): start them with mpirun --rankfile rankfile\n"});
  return files;
}

}  // namespace hyperpipe::exporter
