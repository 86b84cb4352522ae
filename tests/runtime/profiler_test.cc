#include "hyperpipe/runtime/profiler.h"

#include <gtest/gtest.h>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/yaml_reader.h"
#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::runtime {
namespace {

TEST(Profiler, OneEntryPerLayerKindAndMicroBatchThatTheCostModelUses) {
  const model::Model model(model::read_model_yaml(YamlField::load_string(
      "name: profiled\nflavour: gpt\nhidden: 32\nlayers: 3\nheads: 2\nvocab: 256\nseq_len: 16\n"
      "dtype: fp32\n",
      "m")));
  ProfileSettings settings;
  settings.micro_batches = {1, 2};
  settings.warmup = 1;
  settings.repeats = 3;
  int calls = 0;
  settings.progress = [&](int done, int total, const std::string&) {
    EXPECT_EQ(done, calls++);
    EXPECT_EQ(total, 4);
  };
  const auto entries = profile_layers(model, settings, {{"A100-80GB", 1.0}});
  EXPECT_EQ(calls, 5);  // before each of the four rounds, and once when done
  ASSERT_EQ(entries.size(), 6u);
  for (const auto& e : entries) {
    EXPECT_EQ(e.key.model, "profiled");
    EXPECT_EQ(e.key.device, "A100-80GB");
    EXPECT_EQ(e.key.dtype, model::DType::fp32);
    EXPECT_EQ(e.key.tp, 1);
    EXPECT_EQ(e.key.seq_len, 16);
    EXPECT_GT(e.times.forward, 0);
    EXPECT_GT(e.times.backward_input, 0);
    ASSERT_TRUE(e.times.backward.has_value());
    EXPECT_GT(*e.times.backward, 0);
    ASSERT_TRUE(e.times.optimizer.has_value());
    EXPECT_GT(*e.times.optimizer, 0);
    // W is the linear layers' weight gradients: the embedding has none to defer.
    if (e.key.layer == model::LayerKind::embedding) {
      EXPECT_EQ(e.times.backward_weight, 0);
    } else {
      EXPECT_GT(e.times.backward_weight, 0);
    }
  }
  // Activation bytes: measured from the allocator, they grow with the micro-batch, and what
  // one more sample adds to a block and to the head agrees with the model's analytic count
  // (Korthikanti et al.; fp32 here) within 2×. The growth, not the total: the total also
  // holds per-op buffers that do not scale with the micro-batch (some 30 KB for this tiny
  // block, as much as its activations), and a few hundred bytes of heap bookkeeping move.
  model::Workload one;
  one.seq_len = 16;
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(entries[k].times.activation_bytes.has_value());
    ASSERT_TRUE(entries[3 + k].times.activation_bytes.has_value());
    const double growth =
        *entries[3 + k].times.activation_bytes - *entries[k].times.activation_bytes;
    EXPECT_GT(growth, 0) << "layer kind " << k;
    if (k == 0) continue;  // the embedding saves only token ids: too few bytes to compare
    const int layer = k == 1 ? 1 : model.num_layers() - 1;
    const double per_sample =
        static_cast<double>(model.layers()[layer].activation_bytes(one, model::Recompute::none));
    EXPECT_GT(growth, per_sample / 2) << "layer kind " << k;
    EXPECT_LT(growth, per_sample * 2) << "layer kind " << k;
  }
  EXPECT_EQ(entries[0].micro_batch, 1);
  EXPECT_EQ(entries[3].micro_batch, 2);

  cost::ProfileDb db;
  for (const auto& e : entries) db.add(e);
  const auto cluster = cluster::load_cluster("a100x8");
  const cost::CostModel costs(model, cluster, {}, &db);
  const auto group = cost::make_device_group(cluster, {0}, 1, 1);
  const auto time = costs.range_time(0, model.num_layers(), group, 2, 16, model::Recompute::none);
  EXPECT_EQ(time.source(), "profile");
  // The blocks share one measurement: the range is embedding + 3 × block + head.
  EXPECT_NEAR(time.forward,
              entries[3].times.forward + 3 * entries[4].times.forward + entries[5].times.forward,
              1e-12);
  // A whole backward is what was measured whole, B and W apart are what was measured apart.
  const auto range_sum = [&](auto field) {
    return field(entries[3]) + 3 * field(entries[4]) + field(entries[5]);
  };
  EXPECT_NEAR(time.backward(), range_sum([](const auto& e) { return *e.times.backward; }), 1e-12);
  EXPECT_NEAR(time.backward_weight,
              range_sum([](const auto& e) { return e.times.backward_weight; }), 1e-12);
  double optimizer =
      *entries[0].times.optimizer + 3 * *entries[1].times.optimizer + *entries[2].times.optimizer;
  EXPECT_NEAR(costs.optimizer_time(0, model.num_layers(), group), optimizer, 1e-12);
}

// --tp: every setting once more for each degree, filed under it; a shard holds half the
// heads and MLP columns, so it keeps markedly fewer activations than the whole block.
// The cost model reads the tp-2 entries for a tp-2 group and adds the all-reduces.
TEST(Profiler, TensorParallelDegreesAreProfiledAsShards) {
  const model::Model model(model::read_model_yaml(YamlField::load_string(
      "name: sharded\nflavour: gpt\nhidden: 64\nlayers: 2\nheads: 4\nvocab: 256\n"
      "seq_len: 32\ndtype: fp32\n",
      "m")));
  ProfileSettings settings;
  settings.micro_batches = {2};
  settings.tensor_parallel = {1, 2};
  settings.warmup = 1;
  settings.repeats = 3;
  const auto entries = profile_layers(model, settings, {{"A100-80GB", 1.0}});
  ASSERT_EQ(entries.size(), 6u);  // 2 degrees × 3 kinds
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(entries[k].key.tp, 1);
    EXPECT_EQ(entries[3 + k].key.tp, 2);
    EXPECT_EQ(entries[k].key.layer, entries[3 + k].key.layer);
    EXPECT_GT(entries[3 + k].times.forward, 0);
  }
  const auto block_bytes = [&](int at) { return *entries[at].times.activation_bytes; };
  EXPECT_LT(block_bytes(4), 0.85 * block_bytes(1));
  EXPECT_GT(block_bytes(4), 0.3 * block_bytes(1));

  cost::ProfileDb db;
  for (const auto& e : entries) db.add(e);
  const auto cluster = cluster::load_cluster("a100x8");
  const cost::CostModel costs(model, cluster, {}, &db);
  const auto pair = cost::make_device_group(cluster, {0, 1}, 1, 2);
  const auto time = costs.range_time(1, 2, pair, 2, 32, model::Recompute::none);
  EXPECT_EQ(time.source(), "profile");
  EXPECT_GT(time.tp_communication, 0);
  EXPECT_NEAR(time.forward, entries[4].times.forward + time.tp_communication / 2, 1e-12);
}

}  // namespace
}  // namespace hyperpipe::runtime
