#include "hyperpipe/cost/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "catalogue_models.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/cost/op_estimate.h"
#include "hyperpipe/model/layer_ops.h"

namespace hyperpipe::cost {
namespace {

using model::Recompute;

using testing::catalogue_model;

// A cluster of one made-up GPU type with round figures, so closed forms are easy.
cluster::Cluster round_cluster(double flops_scale = 1.0) {
  const std::string text =
      "gpu_types:\n  - name: Round\n    memory: 64 GiB\n"
      "    memory_bandwidth: " +
      std::to_string(1000 * flops_scale) +
      " GB/s\n    peak: {fp32: " + std::to_string(50 * flops_scale) +
      ", fp16: " + std::to_string(100 * flops_scale) + "}\n" +
      "nodes:\n  - {name: n0, gpu: Round, count: 8}\n"
      "  - {name: n1, gpu: Round, count: 8}\n"
      "links:\n  intra_node: {bandwidth: 100 GB/s, latency: 10 us}\n"
      "  intra_island: {bandwidth: 10 GB/s, latency: 100 us}\n";
  return cluster::read_cluster_yaml(YamlField::load_string(text, "round"));
}

// The roofline, kept beside the op-level estimate for comparison (`--estimator roofline`).
CostOptions roofline_options() {
  CostOptions options;
  options.estimator = Estimator::roofline;
  return options;
}

TEST(CostModel, ComputeBoundLayerRunsAtAchievableFlopRate) {
  const auto model = catalogue_model("gpt3-175b");
  const auto cluster = cluster::load_cluster("a100x8");
  const CostModel costs(model, cluster, roofline_options());
  const auto group = first_devices_of_type(cluster, "A100-80GB", 1, 1);
  const ComputeTime t = costs.range_time(1, 2, group, 4, 2048, Recompute::none);
  const auto f = model.layers()[1].flops({4, 2048, 1, true});
  const double rate = 312e12 * kDefaultMatmulEfficiency;
  // A 12288-wide block is compute bound: the memory-bound kernels add a few percent.
  EXPECT_GT(t.forward, f.forward / rate);
  EXPECT_LT(t.forward, 1.10 * f.forward / rate);
  EXPECT_LT(t.backward_weight, 1.10 * f.backward_weight / rate);
  EXPECT_EQ(t.source(), "estimate");
  EXPECT_EQ(t.estimated_layers, 1);
}

TEST(CostModel, Tf32RunsAnFp32ModelsProductsOnTensorCores) {
  auto config = catalogue_model("gpt3-175b").config();
  config.dtype = model::DType::fp32;
  const model::Model fp32(config);
  config.tf32 = true;
  const model::Model tf32(config);
  const auto cluster = cluster::load_cluster("a100x8");
  const auto group = first_devices_of_type(cluster, "A100-80GB", 1, 1);
  const ComputeTime slow = CostModel(fp32, cluster, roofline_options())
                               .range_time(1, 2, group, 4, 2048, Recompute::none);
  const ComputeTime fast = CostModel(tf32, cluster, roofline_options())
                               .range_time(1, 2, group, 4, 2048, Recompute::none);
  // Only the products' rate changes: A100's 19.5 TFLOP/s fp32, 156 on TF32 tensor cores.
  const auto f = fp32.layers()[1].flops({4, 2048, 1, true});
  const double saved = f.forward / kDefaultMatmulEfficiency * (1 / 19.5e12 - 1 / 156e12);
  EXPECT_NEAR(slow.forward - fast.forward, saved, 1e-9 * saved);
  // Op by op, only the products move too: each on its own path, the rest unchanged.
  const ComputeTime ops_slow =
      CostModel(fp32, cluster).range_time(1, 2, group, 4, 2048, Recompute::none);
  const ComputeTime ops_fast =
      CostModel(tf32, cluster).range_time(1, 2, group, 4, 2048, Recompute::none);
  const auto& a100 = cluster.gpu_type("A100-80GB");
  double products_saved = 0;
  for (const auto& op : model::layer_ops(fp32.layers()[1], {4, 2048, 1, true})) {
    if (op.pass != model::Pass::forward) continue;
    products_saved += op_time(op, a100, fp32.config(), kDefaultMemoryEfficiency).seconds -
                      op_time(op, a100, tf32.config(), kDefaultMemoryEfficiency).seconds;
  }
  EXPECT_GT(products_saved, 0.5 * ops_slow.forward);  // fp32's products dominate the block
  EXPECT_NEAR(ops_slow.forward - ops_fast.forward, products_saved, 1e-9 * products_saved);
}

// By default a layer without a profile costs the sum of its ops, pass by pass
// (op_estimate.h), and full recomputation reruns its forward.
TEST(CostModel, TheOpLevelEstimatorSumsTheLayersOps) {
  const auto model = catalogue_model("gpt3-2.7b");
  const auto cluster = cluster::load_cluster("a100x8");
  const CostModel costs(model, cluster);
  const auto group = first_devices_of_type(cluster, "A100-80GB", 1, 1);
  const ComputeTime t = costs.range_time(1, 2, group, 2, 2048, Recompute::full);
  const PassTimes ops =
      estimate_layer(model::layer_ops(model.layers()[1], {2, 2048, 1, false}),
                     cluster.gpu_type("A100-80GB"), model.config(), kDefaultMemoryEfficiency);
  EXPECT_DOUBLE_EQ(t.forward, ops.forward);
  EXPECT_DOUBLE_EQ(t.backward_input, ops.backward_input);
  EXPECT_DOUBLE_EQ(t.backward_weight, ops.backward_weight);
  EXPECT_DOUBLE_EQ(t.recompute, ops.forward);
  EXPECT_EQ(t.source(), "estimate");
  // Asked again, and for two blocks (their estimates remembered): the same sums.
  EXPECT_DOUBLE_EQ(costs.range_time(1, 3, group, 2, 2048, Recompute::full).forward,
                   2 * ops.forward);
  const PassTimes wider =
      estimate_layer(model::layer_ops(model.layers()[1], {4, 2048, 1, false}),
                     cluster.gpu_type("A100-80GB"), model.config(), kDefaultMemoryEfficiency);
  EXPECT_DOUBLE_EQ(costs.range_time(2, 3, group, 4, 2048, Recompute::none).backward_input,
                   wider.backward_input);
  const ComputeTime roofline = CostModel(model, cluster, roofline_options())
                                   .range_time(1, 2, group, 2, 2048, Recompute::full);
  EXPECT_NE(t.forward, roofline.forward);
}

TEST(CostModel, TwiceTheHardwareHalvesTheTime) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto slow = round_cluster(1.0);
  const auto fast = round_cluster(2.0);
  const CostModel slow_costs(model, slow);
  const CostModel fast_costs(model, fast);
  const auto slow_group = first_devices_of_type(slow, "Round", 1, 1);
  const auto fast_group = first_devices_of_type(fast, "Round", 1, 1);
  const int layers = model.num_layers();
  const ComputeTime a = slow_costs.range_time(0, layers, slow_group, 2, 2048, Recompute::full);
  const ComputeTime b = fast_costs.range_time(0, layers, fast_group, 2, 2048, Recompute::full);
  EXPECT_NEAR(a.forward / b.forward, 2.0, 1e-9);
  EXPECT_NEAR(a.backward() / b.backward(), 2.0, 1e-9);
}

TEST(CostModel, RangeTimeIsTheSumOfItsLayers) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const auto group = first_devices_of_type(cluster, "Round", 1, 1);
  const ComputeTime whole = costs.range_time(0, 10, group, 2, 2048, Recompute::selective);
  double forward = 0, backward = 0;
  for (int layer = 0; layer < 10; ++layer) {
    const ComputeTime one =
        costs.range_time(layer, layer + 1, group, 2, 2048, Recompute::selective);
    forward += one.forward;
    backward += one.backward();
  }
  EXPECT_NEAR(whole.forward, forward, 1e-12);
  EXPECT_NEAR(whole.backward(), backward, 1e-12);
  EXPECT_GT(whole.recompute, 0);
}

TEST(CostModel, DataParallelSplitsTheMicroBatch) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const auto one = first_devices_of_type(cluster, "Round", 1, 1);
  const auto two = first_devices_of_type(cluster, "Round", 2, 1);
  EXPECT_DOUBLE_EQ(costs.range_time(1, 5, two, 8, 2048, Recompute::none).forward,
                   costs.range_time(1, 5, one, 4, 2048, Recompute::none).forward);
  // An odd micro-batch: the rank with the extra sequence sets the pace.
  EXPECT_DOUBLE_EQ(costs.range_time(1, 5, two, 7, 2048, Recompute::none).forward,
                   costs.range_time(1, 5, one, 4, 2048, Recompute::none).forward);
}

TEST(CostModel, TensorParallelAddsTwoAllReducesEachWay) {
  const auto model = catalogue_model("gpt3-1.3b");  // fp16, hidden 2048
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const auto group = first_devices_of_type(cluster, "Round", 1, 4);
  const ComputeTime t = costs.range_time(1, 2, group, 2, 2048, Recompute::none);
  // Ring all-reduce of b·s·h·2 bytes over 4 ranks on 100 GB/s × 0.8, 10 us latency.
  const double bytes = 2.0 * 2048 * 2048 * 2;
  const double one = 2 * 3 * (10e-6 + bytes / 4 / (100e9 * kDefaultLinkEfficiency));
  EXPECT_NEAR(t.tp_communication, 4 * one, 1e-12);
}

// The vocabulary-parallel embedding sums its shards' lookups forward (one all-reduce of
// the activation); the head sums its input's gradient backward and, forward, the loss's
// three per-token values (every shard's maxima, the sums of exponentials, the target
// logits).
TEST(CostModel, TensorParallelEmbeddingAndHeadSumOverTheShards) {
  const auto model = catalogue_model("gpt3-1.3b");  // fp16, hidden 2048
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const auto group = first_devices_of_type(cluster, "Round", 1, 4);
  const auto ring = [](double bytes) {
    return 2 * 3 * (10e-6 + bytes / 4 / (100e9 * kDefaultLinkEfficiency));
  };
  const double tokens = 2.0 * 2048;
  const double one = ring(tokens * 2048 * 2);
  const ComputeTime embedding = costs.range_time(0, 1, group, 2, 2048, Recompute::none);
  EXPECT_NEAR(embedding.tp_communication, one, 1e-12);
  const int head = model.num_layers() - 1;
  const ComputeTime t = costs.range_time(head, head + 1, group, 2, 2048, Recompute::none);
  EXPECT_NEAR(t.tp_communication, one + ring(tokens * 2 * 4) + 2 * ring(tokens * 2), 1e-12);
}

TEST(CostModel, AllReduceAndTransferClosedForms) {
  const auto model = catalogue_model("gpt2");
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const cluster::Link link{10e9, 100e-6};
  const double eff = kDefaultLinkEfficiency;
  EXPECT_DOUBLE_EQ(costs.allreduce_time(1e9, 1, link), 0.0);
  EXPECT_NEAR(costs.allreduce_time(1e9, 4, link), 6 * (100e-6 + 0.25e9 / (10e9 * eff)), 1e-12);
  EXPECT_NEAR(costs.transfer(5e8, link).seconds, 100e-6 + 5e8 / (10e9 * eff), 1e-12);
  // Sixteen ranks over both nodes: the ring crosses the 10 GB/s link.
  const auto group = first_devices_of_type(cluster, "Round", 16, 1);
  EXPECT_DOUBLE_EQ(group.dp_link.bandwidth, 10e9);
  // fp16 weights, fp32 main grads all-reduced in fp32 (the default reduce type)...
  const double grad_bytes = static_cast<double>(model.layers()[3].params()) * 4;
  EXPECT_NEAR(costs.gradient_allreduce_time(3, 4, group),
              30 * (100e-6 + grad_bytes / 16 / (10e9 * eff)), 1e-12);
  // ... or in half the bytes where the plan says bf16.
  CostOptions bf16_reduce;
  bf16_reduce.gradient_reduce_dtype = model::DType::bf16;
  EXPECT_NEAR(costs.with_options(bf16_reduce).gradient_allreduce_time(3, 4, group),
              30 * (100e-6 + grad_bytes / 2 / 16 / (10e9 * eff)), 1e-12);
}

TEST(CostModel, CutTransferShipsEachSendersShare) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const auto from = first_devices_of_type(cluster, "Round", 2, 1);
  const auto to = first_devices_of_type(cluster, "Round", 1, 1);
  const cluster::Link link = cluster.level_link(cluster::LinkLevel::intra_island);
  const Transfer t = costs.cut_transfer(5, 8, 2048, from, to, link);
  EXPECT_DOUBLE_EQ(t.bytes, 4.0 * 2048 * 2048 * 2);  // each of 2 senders holds 4 sequences
  EXPECT_NEAR(t.seconds, 100e-6 + t.bytes / (10e9 * kDefaultLinkEfficiency), 1e-12);
}

TEST(CostModel, CutTransferUnderTensorParallelismMovesWhatTheRuntimeMoves) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const auto one = first_devices_of_type(cluster, "Round", 1, 1);
  const auto two = first_devices_of_type(cluster, "Round", 1, 2);
  const cluster::Link link = cluster.level_link(cluster::LinkLevel::intra_island);
  const double whole = 8.0 * 2048 * 2048 * 2;  // 8 sequences × hidden 2048 × fp16
  // Equal tp: each shard sends its half, one message.
  const Transfer scattered = costs.cut_transfer(5, 8, 2048, two, two, link);
  EXPECT_DOUBLE_EQ(scattered.bytes, whole / 2);
  EXPECT_NEAR(scattered.seconds, 100e-6 + whole / 2 / (10e9 * kDefaultLinkEfficiency), 1e-12);
  // tp 2 to tp 1: shard 0 sends the whole activation to the one receiver.
  EXPECT_DOUBLE_EQ(costs.cut_transfer(5, 8, 2048, two, one, link).bytes, whole);
  // tp 1 to tp 2: the one sender sends the whole activation to both shards, one by one.
  const Transfer fan_out = costs.cut_transfer(5, 8, 2048, one, two, link);
  EXPECT_DOUBLE_EQ(fan_out.bytes, 2 * whole);
  EXPECT_NEAR(fan_out.seconds, 2 * 100e-6 + 2 * whole / (10e9 * kDefaultLinkEfficiency), 1e-12);
}

TEST(CostModel, MixedPrecisionAdamNeedsEighteenBytesPerParameter) {
  // Rajbhandari et al. (ZeRO, 2020) count 2 + 2 + 12 bytes per parameter; with the
  // gradients accumulated in fp32 main grads (Megatron-LM's default for bf16, the
  // runtime's for both 16-bit types) it is 2 + 4 + 12.
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const auto group = first_devices_of_type(cluster, "Round", 1, 1);
  const StageMemory m = costs.stage_memory(1, 9, group, 1, 2048, 3, Recompute::full);
  const double params = costs.range_params(1, 9, 1);
  EXPECT_DOUBLE_EQ(m.weights + m.gradients + m.optimizer, 18 * params);
  EXPECT_DOUBLE_EQ(m.gradients, 4 * params);
  const double per_micro_batch =
      8.0 * model.layers()[1].activation_bytes({1, 2048, 1, true}, Recompute::full);
  EXPECT_DOUBLE_EQ(m.activations, 3 * per_micro_batch);
  EXPECT_DOUBLE_EQ(m.context, gpu_defaults().context);
  // Tensor parallelism splits the static memory.
  const auto tp2 = first_devices_of_type(cluster, "Round", 1, 2);
  const StageMemory split = costs.stage_memory(1, 9, tp2, 1, 2048, 3, Recompute::full);
  EXPECT_DOUBLE_EQ(split.weights * 2, m.weights);
}

// Megatron-LM's distributed optimizer (docs/source/distrib_optimizer.md): 4 + 16/d bytes
// per parameter for a 16-bit model whose grads stay 16-bit, 6 + 12/d with fp32 main grads
// (ours), 8 + 8/d in fp32. The step shrinks to 1/d; the gradients' reduce-scatter and the
// weights' all-gather after the step are each half a ring all-reduce of their bytes.
// HyperPipe's runtime all-reduces the gradients whole instead.
TEST(CostModel, ShardedOptimizerStateMatchesMegatronsDistributedOptimizer) {
  const auto model = catalogue_model("gpt3-1.3b");  // fp16
  const auto cluster = round_cluster();
  CostOptions sharded_options;
  sharded_options.shard_optimizer = true;
  CostOptions all_reduced_options = sharded_options;
  all_reduced_options.reduce_scatter_gradients = false;
  const CostModel whole(model, cluster);
  const CostModel sharded(model, cluster, sharded_options);
  const CostModel all_reduced(model, cluster, all_reduced_options);
  for (int dp : {2, 3, 4}) {
    const auto group = first_devices_of_type(cluster, "Round", dp, 1);
    const double params = whole.range_params(1, 9, 1);
    const StageMemory m = sharded.stage_memory(1, 9, group, dp, 2048, 1, Recompute::full);
    EXPECT_DOUBLE_EQ((m.weights + m.gradients + m.optimizer) / params, 6 + 12.0 / dp) << dp;
    const double gradient_bytes = params * 4, weight_bytes = params * 2;
    const double gather = whole.allreduce_time(weight_bytes, dp, group.dp_link) / 2;
    EXPECT_DOUBLE_EQ(sharded.optimizer_time(1, 9, group),
                     whole.optimizer_time(1, 9, group) / dp + gather);
    EXPECT_DOUBLE_EQ(sharded.gradient_allreduce_time(1, 9, group),
                     whole.allreduce_time(gradient_bytes, dp, group.dp_link) / 2);
    EXPECT_DOUBLE_EQ(all_reduced.gradient_allreduce_time(1, 9, group),
                     whole.gradient_allreduce_time(1, 9, group));
    EXPECT_DOUBLE_EQ(all_reduced.optimizer_time(1, 9, group), sharded.optimizer_time(1, 9, group));
    // Fewer bytes than the plain all-reduce of fp32 main grads.
    EXPECT_LT(sharded.gradient_allreduce_time(1, 9, group) + gather,
              whole.gradient_allreduce_time(1, 9, group));
  }
  // One rank: nothing to shard, nothing to move.
  const auto alone = first_devices_of_type(cluster, "Round", 1, 1);
  EXPECT_DOUBLE_EQ(sharded.stage_memory(1, 9, alone, 1, 2048, 1, Recompute::full).optimizer,
                   whole.stage_memory(1, 9, alone, 1, 2048, 1, Recompute::full).optimizer);
  EXPECT_DOUBLE_EQ(sharded.gradient_allreduce_time(1, 9, alone), 0);
}

TEST(CostModel, OptimizerStepIsMemoryBound) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  const auto group = first_devices_of_type(cluster, "Round", 1, 1);
  // fp16 AdamW: reads 4 (the fp32 main grad) + 4 + 8 and writes 4 + 8 + 2 bytes per
  // parameter.
  const double params = costs.range_params(0, 4, 1);
  EXPECT_NEAR(costs.optimizer_time(0, 4, group), params * 30 / (1000e9 * kDefaultMemoryEfficiency),
              1e-12);
}

// gpt3-1.3b's block on the test cluster's "Round" type at micro-batch 2.
ProfileDb block_profile(const ProfiledTimes& times) {
  ProfileDb profiles;
  profiles.add(
      {{"gpt3-1.3b", model::LayerKind::decoder_block, "Round", model::DType::fp16, 1, 2048},
       2,
       times});
  return profiles;
}

TEST(CostModel, ProfilesWinOverTheEstimate) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = round_cluster();
  const auto profiles =
      block_profile({0.020, 0.025, 0.015, std::nullopt, std::nullopt, std::nullopt});
  const CostModel costs(model, cluster, {}, &profiles);
  const auto group = first_devices_of_type(cluster, "Round", 1, 1);
  const ComputeTime block = costs.range_time(1, 2, group, 2, 2048, Recompute::full);
  EXPECT_DOUBLE_EQ(block.forward, 0.020);
  EXPECT_DOUBLE_EQ(block.backward_input, 0.025);
  EXPECT_DOUBLE_EQ(block.recompute, 0.020);  // full recomputation reruns the forward
  EXPECT_EQ(block.source(), "profile");
  EXPECT_EQ(costs.range_time(1, 2, group, 3, 2048, Recompute::none).source(),
            "profile (interpolated)");
  const ComputeTime with_embedding = costs.range_time(0, 2, group, 2, 2048, Recompute::full);
  EXPECT_EQ(with_embedding.source(), "profile+estimate");
  EXPECT_EQ(with_embedding.profiled_layers, 1);
  EXPECT_EQ(with_embedding.estimated_layers, 1);
}

// B and W are what they cost apart; a measured whole backward is what the combined op
// costs (with recomputation on top), over every layer of a range.
TEST(CostModel, MeasuredWholeBackwardIsTheCombinedOpsTime) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = round_cluster();
  const auto profiles = block_profile({0.020, 0.025, 0.015, std::nullopt, std::nullopt, 0.034});
  const CostModel costs(model, cluster, {}, &profiles);
  const auto group = first_devices_of_type(cluster, "Round", 1, 1);
  const ComputeTime blocks = costs.range_time(1, 4, group, 2, 2048, Recompute::full);
  EXPECT_DOUBLE_EQ(blocks.backward_input, 3 * 0.025);
  EXPECT_DOUBLE_EQ(blocks.backward_weight, 3 * 0.015);
  EXPECT_NEAR(blocks.split_extra, 3 * 0.006, 1e-15);
  EXPECT_NEAR(blocks.backward(), 3 * (0.034 + 0.020), 1e-15);
  // Estimated layers have no measured whole: B + W.
  const ComputeTime estimated = costs.range_time(0, 1, group, 2, 2048, Recompute::none);
  EXPECT_EQ(estimated.split_extra, 0);
  EXPECT_DOUBLE_EQ(estimated.backward(), estimated.backward_input + estimated.backward_weight);
}

// Links measured for a cluster replace every level's link of that cluster (and no
// other's): transfers and all-reduces are costed with them.
TEST(CostModel, MeasuredLinksReplaceTheClustersOwn) {
  const auto model = catalogue_model("gpt3-1.3b");
  const auto cluster = cluster::load_cluster("cpu-emulated");
  ProfileDb profiles;
  const cluster::Link measured{3e9, 40e-6};
  profiles.set_links({"cpu-emulated", "gloo", measured, {1e9, 20e-6}, {}});
  const CostModel costs(model, cluster, {}, &profiles);
  for (const auto level : {cluster::LinkLevel::intra_node, cluster::LinkLevel::intra_island,
                           cluster::LinkLevel::inter_island}) {
    EXPECT_DOUBLE_EQ(costs.cluster().level_link(level).bandwidth, measured.bandwidth);
    EXPECT_DOUBLE_EQ(costs.cluster().level_link(level).latency, measured.latency);
  }
  // Measured figures are what transfers reached: no efficiency discount on them.
  EXPECT_DOUBLE_EQ(costs.link_efficiency(), 1.0);
  const auto between = costs.cluster().link_between(0, 2);
  EXPECT_NEAR(costs.transfer(1e6, between).seconds, 40e-6 + 1e6 / 3e9, 1e-15);
  // All-reduces run over the link fitted to the measured all-reduce, whatever link the
  // caller names: ring over 4 ranks, 6 steps of a quarter each.
  EXPECT_NEAR(costs.allreduce_time(4e6, 4, between), 6 * (20e-6 + 1e6 / 1e9), 1e-12);
  DeviceGroup pair{"A100-40GB", 2, 1, measured, measured, 0, {0, 1}};
  const double gradient_bytes = costs.range_params(1, 2, 1) * 4;  // fp16's fp32 main grads
  EXPECT_NEAR(costs.gradient_allreduce_time(1, 2, pair), 2 * (20e-6 + gradient_bytes / 2 / 1e9),
              1e-12);
  // Another cluster's measurement leaves this one as its file says.
  ProfileDb elsewhere;
  elsewhere.set_links({"a100x8", "nccl", measured, measured, {}});
  const CostModel untouched(model, cluster, {}, &elsewhere);
  EXPECT_DOUBLE_EQ(untouched.link_efficiency(), untouched.options().link_efficiency);
  EXPECT_DOUBLE_EQ(untouched.cluster().level_link(cluster::LinkLevel::intra_node).bandwidth,
                   cluster.level_link(cluster::LinkLevel::intra_node).bandwidth);
}

// A cluster file's link table, efficiency and reserved memory: the cost model uses the
// table (interpolated, no efficiency on top) where a link has one, the link's efficiency
// where it gives one, each GPU type's reserved memory where the file gives one.
TEST(CostModel, ClusterFileLinkTablesEfficienciesAndReservedMemory) {
  const auto model = catalogue_model("gpt2");
  const auto cluster = round_cluster();
  const CostModel costs(model, cluster);
  cluster::Link tabled(1e9, 1e-3);
  tabled.table = {{1e4, 2e-3, 5e-3}, {1e6, 6e-3, 13e-3}};
  EXPECT_DOUBLE_EQ(costs.transfer(1e5, tabled).seconds, 4e-3);  // halfway in log size
  // Four ranks, 1.6e6 bytes: six steps of 4e5 bytes, each half a two-rank all-reduce of
  // 8e5 bytes, interpolated: log(80) / log(100) of the way from 5 to 13 ms.
  const double two_rank = 5e-3 + std::log(80.0) / std::log(100.0) * 8e-3;
  EXPECT_NEAR(costs.allreduce_time(1.6e6, 4, tabled), 6 * two_rank / 2, 1e-15);
  cluster::Link efficient(10e9, 100e-6);
  efficient.efficiency = 0.5;
  EXPECT_NEAR(costs.transfer(5e8, efficient).seconds, 100e-6 + 5e8 / 5e9, 1e-12);
  EXPECT_NEAR(costs.allreduce_time(1e9, 2, efficient), 2 * (100e-6 + 0.5e9 / 5e9), 1e-12);
  // A type's reserved_memory replaces the device-level terms of a stage's memory.
  const auto small = cluster::read_cluster_yaml(YamlField::load_string(R"(
    gpu_types: [{name: T4, reserved_memory: 3 GiB}]
    nodes: [{name: a, gpu: T4, count: 1}]
    links: {intra_node: {bandwidth: 10 GB/s, latency: 1 us}})",
                                                                       "reserved.yaml"));
  const CostModel on_small(model, small);
  const DeviceGroup t4 = make_device_group(small, {0}, 1, 1);
  const StageMemory m = on_small.stage_memory(0, 1, t4, 1, 128, 1, Recompute::none);
  EXPECT_TRUE(m.stated_reserve);
  EXPECT_DOUBLE_EQ(m.outside_allocator(), 3 * kGiB);
  EXPECT_DOUBLE_EQ(m.communicators + m.workspaces + m.allocator, 0);
  EXPECT_DOUBLE_EQ(m.total(), m.allocated() + 3 * kGiB);
}

// Links measured across the hosts (profile --links in the network lab) replace only the
// levels measured; the others stay as the file says, efficiency and all.
TEST(CostModel, LinksMeasuredPerLevelReplaceOnlyTheirLevels) {
  const auto model = catalogue_model("gpt2");
  const auto cluster = cluster::load_cluster("lab-two-islands");
  cluster::Link inter(12e6, 300e-6);
  inter.table = {{16384, 2e-3, 4e-3}, {1 << 20, 90e-3, 180e-3}};
  ProfileDb profiles;
  MeasuredLinks measured{"lab-two-islands", "gloo", {3e9, 40e-6}, {1e9, 20e-6}, {}};
  measured.levels[cluster::LinkLevel::inter_island] = inter;
  profiles.set_links(measured);
  const CostModel costs(model, cluster, {}, &profiles);
  const auto across = costs.cluster().link_between(0, 2);  // a0 to v0
  EXPECT_DOUBLE_EQ(costs.transfer(1 << 20, across).seconds, 90e-3);
  // Two ranks: exactly the measured two-rank all-reduce.
  EXPECT_NEAR(costs.allreduce_time(1 << 20, 2, across), 180e-3, 1e-12);
  const auto inside = costs.cluster().link_between(0, 1);  // a0 to a1: the file's 10 Gbit/s
  EXPECT_DOUBLE_EQ(inside.bandwidth, cluster.link_between(0, 1).bandwidth);
  EXPECT_NEAR(costs.transfer(1e6, inside).seconds,
              100e-6 + 1e6 / (inside.bandwidth * kDefaultLinkEfficiency), 1e-12);
}

}  // namespace
}  // namespace hyperpipe::cost
