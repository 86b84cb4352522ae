#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/estimator_option.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/report/describe_report.h"
#include "hyperpipe/report/estimate_report.h"

namespace hyperpipe::cli {

using report::describe_report;
using report::DescribeSettings;
using report::estimate_report;
using report::EstimateSettings;
using report::print_describe_tables;
using report::print_estimate_tables;
namespace {

struct DescribeArgs {
  std::string model = kDefaultModel;
  std::string cluster = kDefaultCluster;
  std::optional<std::string> profiles;
  int64_t micro_batch = 1;
  int64_t seq_len = 0;
  int tp = 1;
  std::string recompute = "none";  // none, selective or full
  cost::Estimator estimator = cost::CostOptions{}.estimator;
  bool estimate = false;  // the op-level estimate of a layer, op by op
  EstimateSettings estimate_settings;
  OutputFormat format = OutputFormat::table;
};

void run_describe(const DescribeArgs& args, std::ostream& out) {
  const model::Model model = model::load_model(args.model);
  const cluster::Cluster cluster = cluster::load_cluster(args.cluster);
  std::optional<cost::ProfileDb> profiles;
  if (args.profiles) profiles = cost::ProfileDb::load_for(*args.profiles, model.config().name);
  if (model.config().flavour == model::Flavour::gpt && args.seq_len > model.config().seq_len) {
    throw InputError("--seq", std::to_string(args.seq_len),
                     "expected at most the model's " + std::to_string(model.config().seq_len) +
                         " learned positions");
  }
  if (model.config().heads % args.tp != 0) {
    throw InputError("--tp", std::to_string(args.tp),
                     "expected a divisor of the model's " + std::to_string(model.config().heads) +
                         " attention heads");
  }
  cost::CostOptions options;
  options.estimator = args.estimator;
  const cost::CostModel costs(model, cluster, options, profiles ? &*profiles : nullptr);
  const auto recompute = model::parse_recompute(args.recompute).value_or(model::Recompute::none);
  const DescribeSettings settings{args.micro_batch, args.seq_len, args.tp, recompute};
  nlohmann::json report = describe_report(costs, settings);
  if (args.estimate) {
    report["op_estimate"] = estimate_report(costs, settings, args.estimate_settings);
  }
  if (args.format == OutputFormat::json) {
    out << report.dump(2) << '\n';
    return;
  }
  print_describe_tables(report, out);
  if (args.estimate) print_estimate_tables(report["op_estimate"], out);
}

void add_describe(CLI::App& app, DescribeArgs& args, std::function<void()> action) {
  CLI::App* describe = app.add_subcommand(
      "describe", "Show a model's layers, a cluster's devices and links, and the cost model");
  describe
      ->add_option("--model,-m", args.model,
                   "Catalogue name, model .yaml, or Hugging Face config.json")
      ->default_str(kDefaultModel);
  describe->add_option("--cluster,-c", args.cluster, "Cluster .yaml or built-in cluster name")
      ->default_str(kDefaultCluster);
  describe->add_option("--profiles", args.profiles,
                       "Profile database (JSON) to prefer over "
                       "estimates");
  describe->add_option("--micro-batch,-b", args.micro_batch, "Sequences per micro-batch")
      ->check(positive_integer())
      ->default_str("1");
  describe->add_option("--seq", args.seq_len, "Sequence length (default: the model's)")
      ->check(positive_integer());
  describe->add_option("--tp", args.tp, "Tensor-parallel degree")
      ->check(positive_integer())
      ->default_str("1");
  describe->add_option("--recompute", args.recompute, "Activation recomputation")
      ->check(CLI::IsMember(model::recompute_names()))
      ->default_str("none");
  describe->add_flag("--estimate", args.estimate,
                     "Also show a layer's estimate op by op on each GPU type (the estimate a "
                     "layer without a profile gets)");
  describe->add_option("--layer", args.estimate_settings.layer, "With --estimate: which layer")
      ->check(CLI::IsMember({"embedding", "block", "head", "all"}))
      ->default_str("block");
  describe->add_option("--gpu", args.estimate_settings.gpu_type,
                       "With --estimate: a GPU type, of the cluster or the catalogue "
                       "(default: each the cluster has)");
  add_estimator_option(*describe, args.estimator);
  add_format_option(*describe, args.format);
  describe->footer(
      "Examples:\n"
      "  hyperpipe describe\n"
      "  hyperpipe describe --model llama2-7b --cluster examples/clusters/h100-a100-islands.yaml\n"
      "  hyperpipe describe --model path/to/config.json --micro-batch 4 --format json\n"
      "  hyperpipe describe --model llama3-8b --cluster a100x8 --tp 2 --estimate --layer all");
  describe->callback(std::move(action));
}

}  // namespace

void add_describe_command(CLI::App& app, std::ostream& out) {
  auto args = std::make_shared<DescribeArgs>();
  add_describe(app, *args, [args, &out] { run_describe(*args, out); });
}

}  // namespace hyperpipe::cli
