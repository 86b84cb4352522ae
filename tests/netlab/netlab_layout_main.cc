// netlab-layout: prints the network lab's layout of a cluster file (netlab_layout.h) for
// scripts/netlab.sh. Bad input: a message naming the file and field, exit 2.
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "hyperpipe/cluster/cluster_loader.h"
#include "hyperpipe/common/error.h"
#include "hyperpipe/plan/plan.h"
#include "netlab_layout.h"

int main(int argc, char** argv) {
  CLI::App app{"The network lab's layout of a cluster: namespaces, veths, bridges, shaping"};
  std::string cluster_path;
  std::string plan_path;
  std::string lab = "0";
  app.add_option("--cluster", cluster_path,
                 "cluster file or built-in name (default: the plan's cluster)");
  app.add_option("--plan", plan_path, "plan whose ranks to place on the lab's hosts");
  app.add_option("--lab", lab, "the lab's id, 1-6 characters of a-z0-9 (names start hp<lab>)");
  CLI11_PARSE(app, argc, argv);
  try {
    std::optional<hyperpipe::plan::Plan> plan;
    if (!plan_path.empty()) {
      plan = hyperpipe::plan::load_plan(plan_path);
      if (cluster_path.empty()) {
        cluster_path = hyperpipe::plan::resolve_reference(plan_path, plan->cluster);
      }
    }
    if (cluster_path.empty())
      throw hyperpipe::InputError("arguments", "--cluster", "--cluster or --plan");
    const auto cluster = hyperpipe::cluster::load_cluster(cluster_path);
    const auto layout = hyperpipe::netlab::make_lab_layout(cluster, plan ? &*plan : nullptr, lab);
    std::cout << hyperpipe::netlab::format_lab_layout(layout);
    return 0;
  } catch (const hyperpipe::InputError& error) {
    std::cerr << "netlab-layout: " << error.what() << '\n';
    return 2;
  }
}
