// `hyperpipe models` and `hyperpipe devices`: what the built-in catalogues hold
// (report/catalogue_report.h).
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "hyperpipe/cli/commands.h"
#include "hyperpipe/cli/output_format.h"
#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/report/catalogue_report.h"

namespace hyperpipe::cli {

void add_models_command(CLI::App& app, std::ostream& out) {
  auto format = std::make_shared<OutputFormat>(OutputFormat::table);
  CLI::App* models = app.add_subcommand("models", "List the built-in model catalogue");
  add_format_option(*models, *format);
  models->footer("Examples:\n  hyperpipe models\n  hyperpipe models --format json");
  models->callback([format, &out] {
    const nlohmann::json document = report::models_document();
    if (*format == OutputFormat::json) {
      out << document.dump(2) << '\n';
    } else {
      report::print_models(document, out);
    }
  });
}

void add_devices_command(CLI::App& app, std::ostream& out) {
  auto format = std::make_shared<OutputFormat>(OutputFormat::table);
  auto cluster = std::make_shared<std::optional<std::string>>();
  CLI::App* devices = app.add_subcommand("devices", "List GPU types and their datasheet figures");
  devices->add_option("--cluster,-c", *cluster,
                      "Also show the types a cluster file adds or changes");
  add_format_option(*devices, *format);
  devices->footer(
      "Examples:\n  hyperpipe devices\n  hyperpipe devices --cluster my-cluster.yaml --format "
      "json");
  devices->callback([format, cluster, &out] {
    // The catalogue's types, or a cluster's (with those its file adds or changes).
    const nlohmann::json document = report::devices_document(
        *cluster ? cluster::load_cluster(**cluster).gpu_types() : cluster::gpu_catalogue());
    if (*format == OutputFormat::json) {
      out << document.dump(2) << '\n';
    } else {
      report::print_devices(document, out);
    }
  });
}

}  // namespace hyperpipe::cli
