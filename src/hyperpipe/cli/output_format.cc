#include "hyperpipe/cli/output_format.h"

#include <string>

#include "hyperpipe/common/limits.h"
#include "hyperpipe/launch/train_flags.h"

namespace hyperpipe::cli {

void add_format_option(CLI::App& command, OutputFormat& format) {
  command
      .add_option_function<std::string>(
          std::string(launch::train_flags::kFormat.name),
          [&format](const std::string& name) {
            format = name == "json" ? OutputFormat::json : OutputFormat::table;
          },
          std::string(launch::train_flags::kFormat.help))
      ->transform(CLI::IsMember({"table", "json"}, CLI::ignore_case))
      ->type_name("table|json")
      ->default_str("table");
}

const CLI::Validator& positive_integer() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        size_t used = 0;
        long long value = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || value <= 0 || value > kMaxSize) {
          return "expected a positive integer up to " + std::to_string(kMaxSize) + ", got '" +
                 text + "'";
        }
        return "";
      },
      "POSITIVE");
  return validator;
}

}  // namespace hyperpipe::cli
