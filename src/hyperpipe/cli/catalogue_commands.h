// `hyperpipe models` and `hyperpipe devices`: what the built-in catalogues hold.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "hyperpipe/cli/output_format.h"

namespace hyperpipe::cli {

void print_models(std::ostream& out, OutputFormat format);

// GPU types of the catalogue, or of a cluster (with the types its file adds or changes).
void print_devices(std::ostream& out, OutputFormat format,
                   const std::optional<std::string>& cluster_name_or_path);

}  // namespace hyperpipe::cli
