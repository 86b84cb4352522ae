// Built-in GPU types with datasheet figures.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/cluster/gpu_type.h"

namespace hyperpipe::cluster {

const std::vector<GpuType>& gpu_catalogue();

// Names match ignoring case, spaces, '-' and '_': "a100-80gb", "A100 80GB", "rtx4090".
// gpu_name_key gives the form they are compared in.
std::string gpu_name_key(const std::string& name);
bool same_gpu_name(const std::string& a, const std::string& b);
std::optional<GpuType> find_gpu_type(const std::string& name);

}  // namespace hyperpipe::cluster
