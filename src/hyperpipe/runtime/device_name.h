// The device a command runs on, as its --device names it.
#pragma once

#include <torch/torch.h>

#include <string>

namespace hyperpipe::runtime {

// "cpu", "cuda" (device 0) or "cuda:N". Throws InputError (naming --device) for another
// name, for CUDA where this libtorch or machine has none, and for a device it lacks.
torch::Device parse_device(const std::string& name);

}  // namespace hyperpipe::runtime
