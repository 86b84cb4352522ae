// Fuzzes the model spec reader (our YAML format) and the model built from what it accepts.
#include "fuzz_input.h"
#include "hyperpipe/model/model_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hyperpipe::fuzz::run_on_text(data, size, [](const std::string& text) {
    const auto root = hyperpipe::YamlField::load_string(text, "model.yaml");
    const hyperpipe::model::Model model(hyperpipe::model::read_model_yaml(root));
    (void)model.num_layers();
  });
}
