#include "hyperpipe/launch/worker_arguments.h"

namespace hyperpipe::launch {

std::optional<std::string> option_value(const std::vector<std::string>& arguments,
                                        const std::string& name) {
  std::optional<std::string> value;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == name && i + 1 < arguments.size()) value = arguments[i + 1];
    if (arguments[i].rfind(name + "=", 0) == 0) value = arguments[i].substr(name.size() + 1);
  }
  return value;
}

model::Model model_as_run(const model::Model& model, const std::vector<std::string>& arguments) {
  const auto dtype = option_value(arguments, "--dtype");
  if (!dtype) return model;
  const auto parsed = model::parse_dtype(*dtype == "fp64" ? "fp32" : *dtype);
  return parsed ? model.in_dtype(*parsed) : model;
}

bool has_flag(const std::vector<std::string>& arguments, const std::string& name) {
  for (const auto& argument : arguments) {
    if (argument == name) return true;
  }
  return false;
}

std::vector<std::string> without_option(const std::vector<std::string>& arguments,
                                        const std::string& name, bool takes_value) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == name) {
      if (takes_value) ++i;
      continue;
    }
    if (takes_value && arguments[i].rfind(name + "=", 0) == 0) continue;
    kept.push_back(arguments[i]);
  }
  return kept;
}

}  // namespace hyperpipe::launch
