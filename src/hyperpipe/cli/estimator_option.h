// `--estimator ops|roofline`: how describe, plan and simulate estimate a layer without a profile.
#pragma once

#include <CLI/CLI.hpp>

#include "hyperpipe/cost/cost_options.h"

namespace hyperpipe::cli {

void add_estimator_option(CLI::App& command, cost::Estimator& estimator);

}  // namespace hyperpipe::cli
