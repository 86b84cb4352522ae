// Fuzzes the Hugging Face config.json reader and the model built from what it accepts.
#include "fuzz_input.h"
#include "hyperpipe/model/model_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hyperpipe::fuzz::run_on_text(data, size, [](const std::string& text) {
    const auto root = hyperpipe::YamlField::load_string(text, "config.json");
    const hyperpipe::model::Model model(hyperpipe::model::read_hf_config(root));
    (void)model.num_layers();
  });
}
