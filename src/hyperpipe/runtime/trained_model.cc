#include "hyperpipe/runtime/trained_model.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "hyperpipe/common/error.h"
#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/model/model_loader.h"

namespace hyperpipe::runtime {

std::optional<nlohmann::ordered_json> hf_config_at(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  if (model::find_catalogue_model(name_or_path)) return std::nullopt;
  std::error_code error;
  const fs::path file = fs::is_directory(name_or_path, error)
                            ? fs::path(name_or_path) / model::kHfConfigFile
                            : fs::path(name_or_path);
  std::ifstream in(file);
  if (!in) return std::nullopt;
  auto config = nlohmann::ordered_json::parse(in, nullptr, false);
  if (config.is_discarded() || !config.is_object() || !config.contains("model_type")) {
    return std::nullopt;  // a model .yaml
  }
  return config;
}

TrainedModel model_trained_as(const CheckpointInfo& checkpoint,
                              const std::optional<std::string>& given) {
  if (given) return {model::load_model(*given).config(), hf_config_at(*given)};
  const auto named = checkpoint.manifest.at("plan").value("model", std::string());
  try {
    return {model::load_model(named).config(), hf_config_at(named)};
  } catch (const InputError&) {
    throw InputError("--model", "",
                     fmt::format("the model the checkpoint was trained as (a model spec, a "
                                 "catalogue name or a Hugging Face directory): its plan names "
                                 "'{}', which cannot be read from here",
                                 named));
  }
}

}  // namespace hyperpipe::runtime
