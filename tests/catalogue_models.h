// A catalogue model by name, for tests that cost or simulate the real shapes.
#pragma once

#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/model/model.h"

namespace hyperpipe::testing {

inline model::Model catalogue_model(const char* name) {
  return model::Model(*model::find_catalogue_model(name));
}

}  // namespace hyperpipe::testing
