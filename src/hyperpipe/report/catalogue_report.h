// The catalogues as `hyperpipe models` and `hyperpipe devices` report them: a JSON document
// each ("hyperpipe.models/1", "hyperpipe.devices/1"), and its table rendered from it.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "hyperpipe/cluster/gpu_catalogue.h"

namespace hyperpipe::report {

inline constexpr const char* kModelsFormat = "hyperpipe.models/1";
inline constexpr const char* kDevicesFormat = "hyperpipe.devices/1";

// Every catalogue model with its shape, counted and published parameters and source.
nlohmann::json models_document();
void print_models(const nlohmann::json& document, std::ostream& out);

// `types` with their memory, bandwidth, dense peaks and source.
nlohmann::json devices_document(const std::vector<cluster::GpuType>& types);
void print_devices(const nlohmann::json& document, std::ostream& out);

}  // namespace hyperpipe::report
