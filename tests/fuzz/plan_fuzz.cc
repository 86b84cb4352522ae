// Fuzzes the plan reader, the checks of a plan against its model and cluster, and the
// simulation of every plan the checks accept. The model and cluster are the examples'
// (by the base name the plan gives), so no input reaches the file system.
#include <filesystem>
#include <map>

#include "fuzz_input.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/plan/plan.h"
#include "hyperpipe/plan/plan_checks.h"
#include "hyperpipe/sim/plan_simulation.h"

namespace {

// Simulations past this many ops take longer than a fuzz input should; the readers and
// checks still run on them.
constexpr int64_t kMaxSimulatedOps = 4096;

std::string base_name(const std::string& reference) {
  return std::filesystem::path(reference).stem().string();
}

hyperpipe::model::Model model_named(const std::string& reference) {
  using namespace hyperpipe;
  if (auto found = model::find_catalogue_model(reference)) return model::Model(*found);
  return model::load_model(std::string(HYPERPIPE_EXAMPLES) + "/models/tiny-gpt.yaml");
}

const hyperpipe::cluster::Cluster& cluster_named(const std::string& reference) {
  using namespace hyperpipe;
  static std::map<std::string, cluster::Cluster> loaded;
  std::string name = base_name(reference);
  bool builtin = false;
  for (const auto& entry : cluster::builtin_clusters()) builtin = builtin || entry.first == name;
  if (!builtin) name = "cpu-emulated";
  auto found = loaded.find(name);
  if (found == loaded.end()) found = loaded.emplace(name, cluster::load_cluster(name)).first;
  return found->second;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hyperpipe;
  return fuzz::run_on_text(data, size, [](const std::string& text) {
    const plan::Plan plan = plan::read_plan(YamlField::load_string(text, "plan.json"));
    const model::Model model = model_named(plan.model);
    const cluster::Cluster& cluster = cluster_named(plan.cluster);
    plan::check_plan(plan, model, cluster, "plan.json");
    int64_t ops = 0;
    for (int p = 0; p < plan.pipeline_count(); ++p) {
      ops += static_cast<int64_t>(plan.pipeline(p).stages.size()) * plan.pipeline(p).micro_batches;
    }
    if (ops > kMaxSimulatedOps) return;
    const cost::CostModel costs(model, cluster);
    (void)sim::simulate_plan(costs, plan);
  });
}
