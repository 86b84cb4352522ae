#include "hyperpipe/launch/worker_arguments.h"

#include <charconv>
#include <stdexcept>

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

std::optional<std::string> value_of(const std::vector<std::string>& arguments,
                                    const train_flags::Flag<std::string>& flag) {
  return option_value(arguments, std::string(flag.name));
}

std::optional<int64_t> value_of(const std::vector<std::string>& arguments,
                                const train_flags::Flag<int64_t>& flag) {
  const auto text = option_value(arguments, std::string(flag.name));
  int64_t value = 0;
  if (!text ||
      std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc{}) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> value_of(const std::vector<std::string>& arguments,
                               const train_flags::Flag<double>& flag) {
  const auto text = option_value(arguments, std::string(flag.name));
  if (!text) return std::nullopt;
  try {
    return std::stod(*text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool given(const std::vector<std::string>& arguments, const train_flags::Flag<bool>& flag) {
  return has_flag(arguments, std::string(flag.name));
}

model::Model model_as_run(const model::Model& model, const std::vector<std::string>& arguments) {
  const auto dtype = value_of(arguments, train_flags::kDtype);
  if (!dtype) return model;
  const auto parsed = model::costed_dtype(*dtype);
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
