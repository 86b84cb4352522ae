// Measures what a device holds for a training process besides the model's tensors, the
// device-level terms of the memory model (cost/device_memory.h), on this machine: the
// context (on CPU the process's own resident set), one collective communicator's and one
// pipeline neighbour's buffers (two ranks of the runtime's backend in two threads, as two
// training processes meet), cuBLAS's workspace and the allocator's reserve over what it
// hands out while a stage of the model trains. `hyperpipe profile --memory` files them in
// the profile database, where they replace the defaults for the device's type.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cost/device_memory.h"
#include "hyperpipe/model/model.h"

namespace hyperpipe::runtime {

struct MemoryProfileSettings {
  torch::Device device = torch::kCPU;
  int port = 0;             // a free port of 127.0.0.1 for the two ranks' rendezvous
  int64_t micro_batch = 1;  // of the stage trained for the allocator's reserve
  int64_t seq_len = 0;      // 0: the model's
  // Called before each probe: (probes done, probes, what comes next).
  std::function<void(int, int, const std::string&)> progress;
};

// One figure as measured, or why it kept its default.
struct MemoryProbe {
  std::string term;  // "context", "collective_communicator", … as DeviceOverheads names it
  std::optional<double> measured;
  std::string how;
};

struct DeviceMemoryProfile {
  cost::DeviceOverheads overheads;  // measured, the defaults where a probe could not run
  std::vector<MemoryProbe> probes;
};

// Throws CommunicationError if the two ranks cannot meet.
DeviceMemoryProfile profile_device_memory(const model::Model& model,
                                          const MemoryProfileSettings& settings);

}  // namespace hyperpipe::runtime
