// Named models with their published shapes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hyperpipe/model/transformer_config.h"

namespace hyperpipe::model {

struct CatalogueEntry {
  TransformerConfig config;  // complete and valid
  std::string aliases;       // other accepted names, comma-separated ("" for none)
  double published_params;   // the count its authors give, for reference
  std::string source;        // where the shape comes from
};

const std::vector<CatalogueEntry>& model_catalogue();
// Finds a model by its name or alias (case-insensitive).
std::optional<TransformerConfig> find_catalogue_model(const std::string& name);

}  // namespace hyperpipe::model
