#include "hyperpipe/runtime/device_check.h"

#include <fmt/format.h>
#include <unistd.h>

#ifdef HYPERPIPE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include <array>
#include <map>
#include <optional>

#include "hyperpipe/cluster/device_identity.h"
#include "hyperpipe/common/error.h"

namespace hyperpipe::runtime {
namespace {

constexpr size_t kHostNameLength = 256;  // HOST_NAME_MAX is 64 on Linux; room to spare

std::string host_name() {
  std::array<char, kHostNameLength> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "?";
  return name.data();
}

}  // namespace

void require_planned_device(const torch::Device& device, const cluster::Cluster& cluster,
                            int planned_device, int rank, const std::string& plan_path) {
  if (!device.is_cuda()) return;
#ifdef HYPERPIPE_WITH_CUDA
  const cudaDeviceProp* properties = at::cuda::getDeviceProperties(device.index());
  const cluster::ReportedDevice reported{properties->name,
                                         static_cast<double>(properties->totalGlobalMem)};
  const auto& planned = cluster.devices().at(static_cast<size_t>(planned_device));
  const std::string& type = cluster.device_type(planned_device).name;
  if (const auto why = cluster::device_mismatch(reported, type)) {
    throw InputError(
        plan_path, "stages",
        fmt::format("rank {} on host {} (CUDA device {}) to be device {} of node {}, a {}; {}. "
                    "The launcher placed this rank on another node than the cluster file says "
                    "(check the rankfile, or the node rank each host got), or the cluster file "
                    "names the wrong type",
                    rank, host_name(), device.index(), planned_device,
                    cluster.nodes().at(static_cast<size_t>(planned.node)).name, type, *why));
  }
#else
  (void)cluster;
  (void)planned_device;
  (void)rank;
  (void)plan_path;
#endif
}

void require_one_host_per_node(Communicator& communicator, const plan::RankLayout& layout,
                               const cluster::Cluster& cluster, const std::string& plan_path) {
  communicator.store_set(fmt::format("host/{}", communicator.rank()), host_name());
  std::map<int, std::pair<int, std::string>> first_on_node;  // node → (rank, host)
  std::optional<std::string> problem;
  for (int r = 0; r < layout.world_size(); ++r) {
    const std::string host = communicator.store_get(fmt::format("host/{}", r));
    const int device = layout.role(r).device;
    const int node = cluster.devices().at(static_cast<size_t>(device)).node;
    const auto [it, first] = first_on_node.emplace(node, std::pair{r, host});
    if (!first && it->second.second != host && !problem) {
      problem = fmt::format(
          "the devices of node {} on one host, but rank {} (device {}) runs on {} and rank {} on "
          "{}: "
          "the launcher placed ranks on other nodes than the cluster file says (check the "
          "rankfile, or the node rank each host got)",
          cluster.nodes().at(static_cast<size_t>(node)).name, r, device, host, it->second.first,
          it->second.second);
    }
  }
  // Every process has read every host before any leaves (rank 0's going ends the store).
  communicator.barrier();
  if (problem) throw InputError(plan_path, "stages", *problem);
}

}  // namespace hyperpipe::runtime
