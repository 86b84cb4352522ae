// How many bytes a process holds in tensors, as the allocator counts them: what the
// profiler and the runtime measure activations and peaks with.
#pragma once

#include <torch/torch.h>

#include <optional>

namespace hyperpipe::runtime {

// Bytes this process holds in tensors now: the CUDA caching allocator's count on a GPU;
// on the CPU, glibc's heap and mapped blocks in use (libtorch's CPU allocator is malloc).
// Empty where neither is known.
std::optional<double> bytes_in_use(const torch::Device& device);

}  // namespace hyperpipe::runtime
