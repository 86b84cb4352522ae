// Fuzzes the planner on small clusters and models drawn from the input: both are written
// as the YAML a user would write and go through the real readers, then planned with every
// baseline. "No plan fits" is an InputError and a correct answer; a crash, a sanitizer
// report, another exception or a plan that fails its own checks is a defect.
#include <fmt/format.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "fuzz_input.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/planner/planner.h"

namespace {

std::string model_yaml(FuzzedDataProvider& in) {
  const bool llama = in.ConsumeBool();
  const int heads = in.ConsumeIntegralInRange(1, 8);
  const int groups = in.ConsumeIntegralInRange(1, heads);  // grouped-query attention
  const int kv_heads = llama && heads % groups == 0 ? heads / groups : heads;
  const int head_dim = 8 << in.ConsumeIntegralInRange(0, 3);
  const int layers = in.ConsumeIntegralInRange(1, 12);
  const int vocab = in.ConsumeIntegralInRange(16, 8192);
  const int seq_len = 16 << in.ConsumeIntegralInRange(0, 6);
  const bool fp32 = in.ConsumeBool();
  return fmt::format(
      "name: fuzzed\nflavour: {}\nhidden: {}\nlayers: {}\nheads: {}\nkv_heads: {}\n"
      "vocab: {}\nseq_len: {}\ndtype: {}\n",
      llama ? "llama" : "gpt", heads * head_dim, layers, heads, kv_heads, vocab, seq_len,
      fp32 ? "fp32" : "fp16");
}

std::string cluster_yaml(FuzzedDataProvider& in) {
  const auto& gpus = hyperpipe::cluster::gpu_catalogue();
  const int nodes = in.ConsumeIntegralInRange(1, 6);
  const int islands = in.ConsumeIntegralInRange(1, std::min(nodes, 3));
  std::string yaml = "name: fuzzed\nnodes:\n";
  for (int n = 0; n < nodes; ++n) {
    const auto& gpu = gpus[in.ConsumeIntegralInRange<size_t>(0, gpus.size() - 1)];
    const int count = 1 << in.ConsumeIntegralInRange(0, 3);
    yaml += fmt::format("  - {{name: n{}, gpu: '{}', count: {}}}\n", n, gpu.name, count);
  }
  yaml += "islands:\n";
  for (int i = 0; i < islands; ++i) {
    yaml += fmt::format("  - {{name: i{}, nodes: [", i);
    for (int n = i; n < nodes; n += islands) yaml += fmt::format("{}n{}", n == i ? "" : ", ", n);
    yaml += "]}\n";
  }
  const int node_gbs = in.ConsumeIntegralInRange(10, 900);
  const int island_gbits = in.ConsumeIntegralInRange(1, 400);
  const int between_gbits = in.ConsumeIntegralInRange(1, 100);
  const int between_us = in.ConsumeIntegralInRange(0, 1000);
  yaml += fmt::format(
      "links:\n  intra_node: {{bandwidth: {} GB/s, latency: 2 us}}\n"
      "  intra_island: {{bandwidth: {} Gbit/s, latency: 5 us}}\n"
      "  inter_island: {{bandwidth: {} Gbit/s, latency: {} us}}\n",
      node_gbs, island_gbits, between_gbits, between_us);
  return yaml;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hyperpipe;
  FuzzedDataProvider in(data, size);
  const std::string model_text = model_yaml(in);
  const std::string cluster_text = cluster_yaml(in);
  const int64_t global_batch = in.ConsumeIntegralInRange(1, 64);
  const int max_stages = in.ConsumeIntegralInRange(1, 8);
  const auto read_model = [&] {
    return model::Model(model::read_model_yaml(YamlField::load_string(model_text, "model")));
  };
  const auto read_cluster = [&] {
    return cluster::read_cluster_yaml(YamlField::load_string(cluster_text, "cluster"));
  };
  const auto plan_or_refuse = [&]() -> std::optional<plan::Plan> {
    try {
      const model::Model model = read_model();
      const cluster::Cluster cluster = read_cluster();
      const cost::CostModel costs(model, cluster);
      planner::PlanRequest request;
      request.batch = {"fuzzed", "fuzzed", global_batch, 0,
                       planner::micro_batch_sizes(global_batch)};
      request.space.max_stages = max_stages;
      return planner::make_plan(costs, request).best.plan;
    } catch (const InputError&) {
      return std::nullopt;  // "no plan fits", with its numbers, or a model the readers refuse
    }
  };
  const auto planned = plan_or_refuse();
  if (!planned) return 0;
  // The planner's plan passes the checks every hand-written plan must pass.
  try {
    plan::check_plan(*planned, read_model(), read_cluster(), "planned");
  } catch (const InputError& error) {
    std::fprintf(stderr, "the planner wrote a plan its checks refuse: %s\n%s\n%s", error.what(),
                 model_text.c_str(), cluster_text.c_str());
    std::abort();
  }
  return 0;
}
