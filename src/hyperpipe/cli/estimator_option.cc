#include "hyperpipe/cli/estimator_option.h"

namespace hyperpipe::cli {

void add_estimator_option(CLI::App& command, cost::Estimator& estimator) {
  command
      .add_option_function<std::string>(
          "--estimator",
          [&estimator](const std::string& name) {
            estimator = name == "ops" ? cost::Estimator::ops : cost::Estimator::roofline;
          },
          "How a layer without a profile is estimated: op by op (`describe --estimate` "
          "shows the ops), or the roofline it replaced (every product at one share of the peak)")
      ->transform(CLI::IsMember({"roofline", "ops"}))
      ->type_name("ops|roofline")
      ->default_str("ops");
}

}  // namespace hyperpipe::cli
