// Fuzzes the cluster spec reader, then asks the cluster what the cost model asks of it.
#include "fuzz_input.h"
#include "hyperpipe/cluster/cluster_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hyperpipe::fuzz::run_on_text(data, size, [](const std::string& text) {
    const auto cluster = hyperpipe::cluster::read_cluster_yaml(
        hyperpipe::YamlField::load_string(text, "cluster.yaml"));
    const int devices = static_cast<int>(cluster.devices().size());
    for (int d = 0; d < devices && d < 64; ++d) {
      (void)cluster.device_memory(d);
      (void)cluster.link_between(0, d);
    }
  });
}
