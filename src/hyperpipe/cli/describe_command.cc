// `hyperpipe describe`: a model, a cluster and the cost model's view of each layer on each GPU
// type (report/description.h), as tables or JSON.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/estimator_option.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/report/description.h"

namespace hyperpipe::cli {

namespace {

struct DescribeArgs {
  report::DescribeRequest request{.model = kDefaultModel, .cluster = kDefaultCluster};
  std::string recompute = "none";  // none, selective or full
  bool estimate = false;           // the op-level estimate of a layer, op by op
  report::EstimateSettings estimate_settings;
  OutputFormat format = OutputFormat::table;
};

void run_describe(DescribeArgs args, std::ostream& out) {
  args.request.settings.recompute =
      model::parse_recompute(args.recompute).value_or(model::Recompute::none);
  if (args.estimate) args.request.estimate = args.estimate_settings;
  const nlohmann::json report = report::describe(args.request);
  if (args.format == OutputFormat::json) {
    out << report.dump(2) << '\n';
    return;
  }
  report::print_describe_tables(report, out);
  if (args.estimate) report::print_estimate_tables(report["op_estimate"], out);
}

void add_describe(CLI::App& app, DescribeArgs& args, std::function<void()> action) {
  CLI::App* describe = app.add_subcommand(
      "describe", "Show a model's layers, a cluster's devices and links, and the cost model");
  describe
      ->add_option("--model,-m", args.request.model,
                   "Catalogue name, model .yaml, or Hugging Face config.json")
      ->default_str(kDefaultModel);
  describe
      ->add_option("--cluster,-c", args.request.cluster, "Cluster .yaml or built-in cluster name")
      ->default_str(kDefaultCluster);
  describe->add_option("--profiles", args.request.profiles,
                       "Profile database (JSON) to prefer over "
                       "estimates");
  describe
      ->add_option("--micro-batch,-b", args.request.settings.micro_batch,
                   "Sequences per micro-batch")
      ->check(positive_integer())
      ->default_str("1");
  describe
      ->add_option("--seq", args.request.settings.seq_len, "Sequence length (default: the model's)")
      ->check(positive_integer());
  describe->add_option("--tp", args.request.settings.tp, "Tensor-parallel degree")
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
  add_estimator_option(*describe, args.request.estimator);
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
