#include "hyperpipe/model/catalogue.h"

#include <gtest/gtest.h>

#include "hyperpipe/model/model.h"

namespace hyperpipe::model {
namespace {

int64_t params_of(const std::string& name) {
  const auto config = find_catalogue_model(name);
  EXPECT_TRUE(config.has_value()) << name;
  return config ? Model(*config).total_params() : 0;
}

// Exact parameter counts of the Hugging Face checkpoints (sum of tensor sizes, tied
// embeddings once): an independent reference for every per-layer formula.
TEST(Catalogue, ParameterCountsMatchCheckpointsExactly) {
  EXPECT_EQ(params_of("gpt2"), 124'439'808);
  EXPECT_EQ(params_of("gpt2-355m"), 354'823'168);
  EXPECT_EQ(params_of("gpt2-774m"), 774'030'080);
  EXPECT_EQ(params_of("gpt2-1.5b"), 1'557'611'200);
  EXPECT_EQ(params_of("opt-350m"), 331'196'416);
  EXPECT_EQ(params_of("llama2-7b"), 6'738'415'616);
  EXPECT_EQ(params_of("llama2-13b"), 13'015'864'320);
  EXPECT_EQ(params_of("llama2-70b"), 68'976'648'192);
  EXPECT_EQ(params_of("llama3-8b"), 8'030'261'248);
  EXPECT_EQ(params_of("llama3-70b"), 70'553'706'496);
}

TEST(Catalogue, Gpt3CountsMatchThePaper) {
  // Brown et al. give rounded sizes; 175B is 174.6B when counted exactly.
  EXPECT_NEAR(static_cast<double>(params_of("gpt3-175b")), 174.6e9, 0.1e9);
  for (const auto& entry : model_catalogue()) {
    const double counted = static_cast<double>(Model(entry.config).total_params());
    EXPECT_NEAR(counted / entry.published_params, 1.0, 0.03) << entry.config.name;
  }
}

TEST(Catalogue, NamesAreLowerCaseWithSizeAndAliasesResolve) {
  EXPECT_EQ(find_catalogue_model("gpt2")->name, "gpt2-124m");
  EXPECT_EQ(find_catalogue_model("GPT3-2.7B")->name, "gpt3-2.7b");
  EXPECT_EQ(find_catalogue_model("gpt2-xl")->name, "gpt2-1.5b");
  EXPECT_FALSE(find_catalogue_model("gpt5").has_value());
  for (const auto& entry : model_catalogue()) {
    for (char ch : entry.config.name) EXPECT_FALSE(std::isupper(static_cast<unsigned char>(ch)));
  }
}

TEST(Catalogue, RequiredModelsArePresent) {
  for (const char* name :
       {"gpt2", "gpt2-355m", "gpt2-774m", "gpt2-1.5b", "gpt3-125m", "gpt3-350m", "gpt3-760m",
        "gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "gpt3-175b", "opt-350m", "llama2-7b",
        "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b"}) {
    EXPECT_TRUE(find_catalogue_model(name).has_value()) << name;
  }
}

}  // namespace
}  // namespace hyperpipe::model
