// The device-level memory terms: which communicators a stage opens, what each framework
// keeps, the logits' spike, the allocator's share, and measured overheads replacing the
// defaults. Expected values are closed forms from the sources device_memory.cc names.
#include "hyperpipe/cost/device_memory.h"

#include <gtest/gtest.h>

#include "catalogue_models.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/cost/cost_model.h"
#include "test_files.h"

namespace hyperpipe::cost {
namespace {

using model::Recompute;

using testing::catalogue_model;

cluster::Cluster two_nodes() {
  return cluster::read_cluster_yaml(YamlField::load_string(R"(
    gpu_types: [{name: Big, memory: 80 GiB, memory_bandwidth: 2000 GB/s,
                 peak: {fp32: 60, bf16: 900, fp16: 900}}]
    nodes: [{name: a, gpu: Big, count: 8}, {name: b, gpu: Big, count: 8}]
    links: {intra_node: {bandwidth: 300 GB/s, latency: 5 us},
            intra_island: {bandwidth: 25 GB/s, latency: 10 us}})",
                                                           "two-nodes"));
}

model::Model in_type(const char* name, model::DType dtype) {
  auto config = *model::find_catalogue_model(name);
  config.dtype = dtype;
  return model::Model(config);
}

model::Model bf16(const char* name) {
  return in_type(name, model::DType::bf16);
}

TEST(DeviceMemory, DefaultsAreTheSourcesClosedForms) {
  const DeviceOverheads lazy = gpu_defaults(true);
  EXPECT_DOUBLE_EQ(lazy.context, 287'047'680);
  EXPECT_DOUBLE_EQ(gpu_defaults(false).context, 666'632'192);
  // 32 channels × (4 MiB Simple + 512 KiB LL + 4,915,200 B LL128).
  EXPECT_DOUBLE_EQ(lazy.collective_communicator, 32 * (4 * kMiB + 512 * kKiB + 4'915'200));
  EXPECT_DOUBLE_EQ(lazy.p2p_peer, 16 * kMiB);
  // cuBLAS: :4096:8 on Hopper and after (and where the generation is unknown),
  // :4096:2:16:8 before it.
  EXPECT_DOUBLE_EQ(lazy.workspace, 32 * kMiB);
  EXPECT_DOUBLE_EQ(gpu_defaults(true, 9).workspace, 4096 * 8 * kKiB);
  EXPECT_DOUBLE_EQ(gpu_defaults(true, 10).workspace, 4096 * 8 * kKiB);
  EXPECT_DOUBLE_EQ(gpu_defaults(true, 8).workspace, (4096 * 2 + 16 * 8) * kKiB);
  EXPECT_DOUBLE_EQ(gpu_defaults(true, 7).workspace, (4096 * 2 + 16 * 8) * kKiB);
  EXPECT_GE(lazy.allocator_ratio, 1.0);
  const DeviceOverheads stand_in = stand_in_defaults();
  EXPECT_DOUBLE_EQ(
      stand_in.context + stand_in.collective_communicator + stand_in.p2p_peer + stand_in.workspace,
      0);
  EXPECT_DOUBLE_EQ(stand_in.allocator_ratio, 1);
  EXPECT_THROW(framework_buffers("colossalai"), std::invalid_argument);
}

// Which groups a stage talks in follows from where it sits and how it is split.
TEST(DeviceMemory, CommunicatorsFollowTheStagesPlaceAndShape) {
  const auto model = catalogue_model("gpt3-1.3b");  // tied embeddings, 26 layers
  ASSERT_TRUE(model.config().tied_embeddings);
  const int layers = model.num_layers();
  const auto cluster = two_nodes();
  const CostModel costs(model, cluster);
  const DeviceOverheads d = gpu_defaults();
  const auto memory = [&](int first, int last, int dp, int tp) {
    const auto group = first_devices_of_type(cluster, "Big", dp, tp);
    return costs.stage_memory(first, last, group, dp, 2048, 1, Recompute::full).communicators;
  };
  // The whole model on one device: it talks to no one.
  EXPECT_DOUBLE_EQ(memory(0, layers, 1, 1), 0);
  // Alone but data parallel: the dp group and the world.
  EXPECT_DOUBLE_EQ(memory(0, layers, 2, 1), 2 * d.collective_communicator);
  // A middle stage at dp 2 × tp 2: tp, dp and world groups, two neighbours.
  EXPECT_DOUBLE_EQ(memory(3, 9, 2, 2), 3 * d.collective_communicator + 2 * d.p2p_peer);
  // The first stage of a tied model: the tied embedding's group and the world, one
  // neighbour; the last stage the same.
  EXPECT_DOUBLE_EQ(memory(0, 9, 1, 1), 2 * d.collective_communicator + d.p2p_peer);
  EXPECT_DOUBLE_EQ(memory(9, layers, 1, 1), 2 * d.collective_communicator + d.p2p_peer);
}

// Per parameter on top of 2 + 4 (+ 12/dp) bytes: DeepSpeed's 16-bit .grad, torchtitan's
// sharded fp32 gradient, Megatron-LM's main grads in the reduce type.
TEST(DeviceMemory, FrameworksKeepTheirOwnGradientBuffers) {
  const auto model = bf16("gpt3-1.3b");
  const auto cluster = two_nodes();
  const auto group = first_devices_of_type(cluster, "Big", 4, 1);
  const auto with = [&](const char* runtime, bool sharded, model::DType reduce) {
    CostOptions options;
    options.framework = framework_buffers(runtime);
    options.shard_optimizer = sharded;
    options.gradient_reduce_dtype = reduce;
    return CostModel(model, cluster, options)
        .stage_memory(3, 9, group, 4, 2048, 1, Recompute::full);
  };
  const double params = CostModel(model, cluster).range_params(3, 9, 1);
  const auto fp32 = model::DType::fp32;
  EXPECT_DOUBLE_EQ(with("hyperpipe", true, fp32).framework, 0);
  EXPECT_DOUBLE_EQ(with("megatron", true, fp32).framework, 0);
  EXPECT_DOUBLE_EQ(with("deepspeed", true, fp32).framework, 2 * params);
  EXPECT_DOUBLE_EQ(with("torchtitan", true, fp32).framework, 4 * params / 4);
  EXPECT_DOUBLE_EQ(with("torchtitan", false, fp32).framework, 0);
  const StageMemory megatron_bf16 = with("megatron", true, model::DType::bf16);
  EXPECT_DOUBLE_EQ(megatron_bf16.gradients, 2 * params);
  EXPECT_DOUBLE_EQ(with("hyperpipe", true, model::DType::bf16).gradients, 4 * params);
  // An fp32 model keeps no 16-bit copy.
  CostOptions deepspeed;
  deepspeed.framework = framework_buffers("deepspeed");
  const auto fp32_model = catalogue_model("gpt2");
  auto config = fp32_model.config();
  config.dtype = model::DType::fp32;
  const model::Model full(config);
  EXPECT_DOUBLE_EQ(CostModel(full, cluster, deepspeed)
                       .stage_memory(1, 3, group, 4, 1024, 1, Recompute::full)
                       .framework,
                   0);
}

// DeepSpeed keeps each micro-batch's output until its backward; the head's stage sends none.
TEST(DeviceMemory, DeepSpeedKeepsOutputsInFlight) {
  const auto model = bf16("gpt3-1.3b");
  const auto cluster = two_nodes();
  const auto group = first_devices_of_type(cluster, "Big", 1, 1);
  CostOptions options;
  options.framework = framework_buffers("deepspeed");
  const CostModel costs(model, cluster, options);
  const model::Workload work{2, 2048, 1, false};
  const double output = static_cast<double>(model.layers()[8].output_bytes(work));
  EXPECT_DOUBLE_EQ(costs.stage_memory(3, 9, group, 2, 2048, 3, Recompute::none).pipe_buffers,
                   3 * output);
  EXPECT_DOUBLE_EQ(
      costs.stage_memory(9, model.num_layers(), group, 2, 2048, 3, Recompute::none).pipe_buffers,
      0);
  EXPECT_DOUBLE_EQ(
      CostModel(model, cluster).stage_memory(3, 9, group, 2, 2048, 3, Recompute::none).pipe_buffers,
      0);
}

// The loss's logits: b · s · V / tp of them in the model's type beside the fp32 softmax
// the head's activations keep. Megatron-LM's copy is the softmax (worked on in place) and an
// fp32 model's logits have no second tensor. torchtitan's backward is out of place: two fp32
// gradients beside the softmax, and the logits as the head made them, which a pipeline
// stage keeps and the one-stage train step drops (more than its forward's upcast copy).
TEST(DeviceMemory, LogitsSpikeOnTheHeadsStage) {
  const auto model = bf16("gpt3-1.3b");
  const auto cluster = two_nodes();
  const int layers = model.num_layers();
  const double vocab = static_cast<double>(model.config().vocab);
  const auto with = [&](const model::Model& m, const char* runtime) {
    CostOptions options;
    options.framework = framework_buffers(runtime);
    return CostModel(m, cluster, options);
  };
  for (int tp : {1, 2}) {
    const auto group = first_devices_of_type(cluster, "Big", 2, tp);
    const double logits = 4.0 / 2 * 2048 * vocab / tp;  // micro-batch 4 over dp 2
    const auto logits_of = [&](const CostModel& costs, int first) {
      return costs.stage_memory(first, layers, group, 4, 2048, 1, Recompute::none).logits;
    };
    EXPECT_DOUBLE_EQ(logits_of(with(model, "hyperpipe"), 9), 2 * logits);
    EXPECT_DOUBLE_EQ(logits_of(with(model, "megatron"), 9), 2 * logits);
    EXPECT_DOUBLE_EQ(logits_of(with(model, "torchtitan"), 9), (2 * 4 + 2) * logits);
    EXPECT_DOUBLE_EQ(logits_of(with(model, "torchtitan"), 0), 2 * 4 * logits);
    const auto fp32 = in_type("gpt3-1.3b", model::DType::fp32);
    EXPECT_DOUBLE_EQ(logits_of(with(fp32, "megatron"), 9), 0.0);
    EXPECT_DOUBLE_EQ(logits_of(with(fp32, "torchtitan"), 9), (2 * 4 + 4) * logits);
    EXPECT_DOUBLE_EQ(logits_of(with(fp32, "torchtitan"), 0), 2 * 4 * logits);
    EXPECT_DOUBLE_EQ(
        with(model, "hyperpipe").stage_memory(3, 9, group, 4, 2048, 1, Recompute::none).logits, 0);
  }
}

// torchtitan's FSDP shards weights and gradients too. Alone in its pipeline a stage holds
// the head's unit gathered, the sharded fp32 weights (the optimizer's master) and moments,
// and no gradient at the backward's start; in a pipeline the unsharded weights and
// gradients stay between micro-batches, beside a sharded copy of the gradients.
TEST(DeviceMemory, TorchtitansFsdpShardsWeightsAndGradientsWithoutAPipeline) {
  const auto model = bf16("llama3-8b");
  const auto cluster = two_nodes();
  const int layers = model.num_layers();
  const auto group = first_devices_of_type(cluster, "Big", 8, 1);
  const auto with = [&](const char* runtime, bool sharded, int first, int last) {
    CostOptions options;
    options.framework = framework_buffers(runtime);
    options.shard_optimizer = sharded;
    return CostModel(model, cluster, options)
        .stage_memory(first, last, group, 16, 8192, 1, Recompute::selective);
  };
  const CostModel plain(model, cluster);
  const double all = plain.range_params(0, layers, 1);
  const double head = plain.range_params(layers - 1, layers, 1);
  const StageMemory alone = with("torchtitan", true, 0, layers);
  EXPECT_TRUE(alone.fully_sharded);
  EXPECT_DOUBLE_EQ(alone.weights, 2 * head);
  EXPECT_DOUBLE_EQ(alone.gradients, 0);
  EXPECT_DOUBLE_EQ(alone.optimizer, (4 + 8) * all / 8);
  EXPECT_DOUBLE_EQ(alone.framework, 0);
  // Replicated (no FSDP), or another framework's ZeRO-1: every weight and gradient whole.
  for (const StageMemory& whole :
       {with("torchtitan", false, 0, layers), with("megatron", true, 0, layers)}) {
    EXPECT_FALSE(whole.fully_sharded);
    EXPECT_DOUBLE_EQ(whole.weights, 2 * all);
    EXPECT_DOUBLE_EQ(whole.gradients, 4 * all);
  }
  const double part = plain.range_params(3, 9, 1);
  const StageMemory piped = with("torchtitan", true, 3, 9);
  EXPECT_FALSE(piped.fully_sharded);
  EXPECT_DOUBLE_EQ(piped.weights, 2 * part);
  EXPECT_DOUBLE_EQ(piped.gradients, 4 * part);
  EXPECT_DOUBLE_EQ(piped.framework, 4 * part / 8);
  // On a GPU the allocator keeps FSDP's side streams' pools: the sharded fp32 gradients
  // and one gathered output per unit size; the default stream's ratio is torchtitan's.
  const double unit_sizes = plain.range_params(0, 1, 1) + head + plain.range_params(1, 2, 1);
  EXPECT_DOUBLE_EQ(alone.stream_pools, 4 * all / 8 + 2 * unit_sizes);
  EXPECT_DOUBLE_EQ(alone.allocator_ratio, framework_buffers("torchtitan").fsdp_allocator_ratio);
  EXPECT_GT(alone.allocator_ratio, gpu_defaults().allocator_ratio);
  EXPECT_DOUBLE_EQ(alone.allocator, (alone.allocator_ratio - 1) * alone.allocated());
  EXPECT_DOUBLE_EQ(alone.outside_allocator(),
                   alone.communicators + alone.context + alone.stream_pools);
  EXPECT_DOUBLE_EQ(piped.stream_pools, 0);
  EXPECT_DOUBLE_EQ(piped.allocator_ratio, gpu_defaults().allocator_ratio);
  // A CPU stand-in has no caching allocator: the same stage holds none of it.
  const auto stand_ins = cluster::read_cluster_yaml(YamlField::load_string(R"(
    gpu_types: [{name: A100-80GB, speed: 1}]
    nodes: [{name: a, gpu: A100-80GB, count: 8}]
    links: {intra_node: {bandwidth: 300 GB/s, latency: 5 us}})",
                                                                           "stand-ins"));
  CostOptions titan;
  titan.framework = framework_buffers("torchtitan");
  titan.shard_optimizer = true;
  const StageMemory emulated =
      CostModel(model, stand_ins, titan)
          .stage_memory(0, layers, first_devices_of_type(stand_ins, "A100-80GB", 8, 1), 16, 8192, 1,
                        Recompute::selective);
  EXPECT_TRUE(emulated.fully_sharded);
  EXPECT_DOUBLE_EQ(emulated.stream_pools, 0);
  EXPECT_DOUBLE_EQ(emulated.allocator_ratio, 1);
  // torchtitan's `selective` is its per-op policy, Megatron-LM's the attention core.
  const model::Workload work{2, 8192, 1, false};
  EXPECT_DOUBLE_EQ(piped.activations,
                   6 * static_cast<double>(model.layers()[3].activation_bytes(
                           work, Recompute::selective, model::SelectiveRule::alternate_products)));
  EXPECT_DOUBLE_EQ(
      with("megatron", true, 3, 9).activations,
      6 * static_cast<double>(model.layers()[3].activation_bytes(work, Recompute::selective)));
}

// A tied head in the embedding's stage is the embedding's own weight in the frameworks
// that tie modules (Megatron-LM, DeepSpeed, torchtitan), a tensor of its own in HyperPipe's
// runtime; in a stage of its own it is a copy everywhere.
TEST(DeviceMemory, ATiedHeadBesideItsEmbeddingIsOneTensor) {
  const auto model = bf16("gpt3-1.3b");  // tied embeddings
  ASSERT_TRUE(model.config().tied_embeddings);
  const auto cluster = two_nodes();
  const int layers = model.num_layers();
  const double tied = static_cast<double>(model.config().vocab * model.config().embed_dim);
  const auto group = first_devices_of_type(cluster, "Big", 1, 1);
  CostOptions megatron;
  megatron.framework = framework_buffers("megatron");
  const CostModel ours(model, cluster);
  const CostModel theirs(model, cluster, megatron);
  const auto weights = [&](const CostModel& costs, int first, int last) {
    return costs.stage_memory(first, last, group, 1, 2048, 1, Recompute::none).weights;
  };
  EXPECT_DOUBLE_EQ(weights(ours, 0, layers) - weights(theirs, 0, layers), 2 * tied);
  EXPECT_DOUBLE_EQ(weights(ours, 9, layers), weights(theirs, 9, layers));
  EXPECT_DOUBLE_EQ(weights(ours, 0, 9), weights(theirs, 0, 9));
}

// The total is the allocator's reserve of what it hands out plus what lies outside it.
TEST(DeviceMemory, TotalIsAllocatorReserveAndWhatLiesOutside) {
  const auto model = bf16("gpt3-1.3b");
  const auto cluster = two_nodes();
  const CostModel costs(model, cluster);
  const auto group = first_devices_of_type(cluster, "Big", 2, 2);
  const StageMemory m = costs.stage_memory(3, 9, group, 2, 2048, 2, Recompute::none);
  const DeviceOverheads d = gpu_defaults();
  EXPECT_DOUBLE_EQ(m.allocator, (d.allocator_ratio - 1) * m.allocated());
  EXPECT_DOUBLE_EQ(m.total(), d.allocator_ratio * m.allocated() + m.communicators + m.context);
  EXPECT_DOUBLE_EQ(m.device_peak(m.activations + m.pipe_buffers), m.total());
  double sum = 0;
  for (const auto& term : m.terms()) {
    EXPECT_FALSE(term.source.empty()) << term.name;
    sum += term.bytes;
  }
  EXPECT_NEAR(sum, m.total(), 1e-6 * m.total());
  EXPECT_DOUBLE_EQ(costs.usable_memory(80 * kGiB), 80 * kGiB * (1 - kDefaultMemoryMargin));
}

// What profile --memory measured for a type replaces the defaults, for that type only; a
// CPU stand-in type gets the stand-in defaults.
TEST(DeviceMemory, MeasuredOverheadsReplaceTheDefaults) {
  const auto model = catalogue_model("gpt2");
  const auto cluster = two_nodes();
  ProfileDb profiles;
  DeviceOverheads measured;
  measured.context = 500 * kMiB;
  measured.collective_communicator = 100 * kMiB;
  measured.p2p_peer = 10 * kMiB;
  measured.workspace = 8 * kMiB;
  measured.allocator_ratio = 1.1;
  measured.source = "profile --memory";
  profiles.set_device_memory({"big", measured});
  const CostModel costs(model, cluster, {}, &profiles);
  const auto type = cluster.gpu_type("Big");
  EXPECT_DOUBLE_EQ(costs.device_overheads(type).context, 500 * kMiB);
  const auto group = first_devices_of_type(cluster, "Big", 2, 1);
  const StageMemory m = costs.stage_memory(2, 6, group, 2, 1024, 1, Recompute::none);
  EXPECT_DOUBLE_EQ(m.communicators, 2 * 100 * kMiB + 2 * 10 * kMiB);
  EXPECT_DOUBLE_EQ(m.allocator_ratio, 1.1);
  auto stand_in = type;
  stand_in.name = "Other";
  stand_in.speed = 1.0;
  EXPECT_DOUBLE_EQ(costs.device_overheads(stand_in).context, 0);

  // And it survives the file format.
  const std::string path = testing::write_temp_file("device-memory.json", to_json(profiles).dump());
  const ProfileDb loaded = ProfileDb::load(path);
  ASSERT_NE(loaded.device_memory_for("Big"), nullptr);
  EXPECT_DOUBLE_EQ(loaded.device_memory_for("Big")->allocator_ratio, 1.1);
  EXPECT_EQ(loaded.device_memory_for("Big")->source, "profile --memory");
}

TEST(DeviceMemory, ARatioBelowOneIsRefusedNamingTheField) {
  const std::string path = testing::write_temp_file("bad-ratio.json", R"({
    "format": "hyperpipe.profiles/1", "entries": [],
    "device_memory": [{"device": "H100", "context_bytes": 1, "collective_communicator_bytes": 1,
                       "p2p_peer_bytes": 1, "workspace_bytes": 1, "allocator_ratio": 0.9}]})");
  const std::string message = testing::error_message<InputError>([&] { ProfileDb::load(path); });
  EXPECT_NE(message.find("allocator_ratio"), std::string::npos) << message;
  EXPECT_NE(message.find("at least 1"), std::string::npos) << message;
}

}  // namespace
}  // namespace hyperpipe::cost
