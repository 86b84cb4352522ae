// Measures what each kind of layer costs on this device with the runtime's own modules:
// the embedding, a block (all blocks are alike) and the head, per micro-batch size,
// forward, backward for the input, backward for the weights and the optimizer step,
// median of repeated runs after a warm-up. Cost does not grow with depth.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"

namespace hyperpipe::runtime {

// Rounds before timing (allocator and caches warm) and timed rounds: the median of this
// many is robust to a stray slow one on a shared machine.
inline constexpr int kProfileWarmup = 3;
inline constexpr int kProfileRepeats = 9;
// Blocks are timed as a chain of this many (fewer if the model has fewer) and divided:
// one block alone keeps its weights in cache, which no multi-block stage does, and reads
// 20-30% fast on a small model. The cost stays independent of the model's depth.
inline constexpr int kProfiledBlocks = 4;

struct ProfileSettings {
  std::vector<int64_t> micro_batches{1, 2, 4};
  // Tensor-parallel degrees: each times one rank's shard of every layer kind (layers.h),
  // its compute without the all-reduces, which the cost model adds from the links.
  std::vector<int> tensor_parallel{1};
  int64_t seq_len = 0;  // 0: the model's
  torch::Device device = torch::kCPU;
  int warmup = kProfileWarmup;    // rounds
  int repeats = kProfileRepeats;  // rounds
  // Called before each round: (rounds done, rounds, what comes next).
  std::function<void(int, int, const std::string&)> progress;
};

// A GPU type to file measurements under, with the speed of its CPU stand-in relative to
// the host (< 1): each timed op is then preceded by the sleep the runtime puts after an
// op to stretch it, and its time divided by the speed, so the profile sees the op as the
// stand-in runs it (after a sleep its caches are cold and small ops run markedly slower).
struct ProfiledDevice {
  std::string name;
  double speed = 1.0;
};

// One entry per device, tp degree, layer kind and micro-batch size, keyed to the model
// (and its dtype, which the cost model looks profiles up by and the layers run in: a
// 16-bit model with fp32 masters as a run trains it) and to the device's name (the GPU type the
// planner will look up). The settings are measured in rounds, each setting once a round, and each
// entry is the median over the rounds after the warm-up.
std::vector<cost::ProfileEntry> profile_layers(const model::Model& model,
                                               const ProfileSettings& settings,
                                               const std::vector<ProfiledDevice>& devices);

// What this process runs on: the CPU's model name, or the CUDA device's name.
std::string device_description(const torch::Device& device);

}  // namespace hyperpipe::runtime
