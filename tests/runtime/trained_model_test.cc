#include "hyperpipe/runtime/trained_model.h"

#include <gtest/gtest.h>

#include <fstream>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe::runtime {
namespace {

CheckpointInfo checkpoint_of(const std::string& plan_model) {
  return {"ckpt/step-00000001", 1, {{"plan", {{"model", plan_model}}}}};
}

// The model named wins over the plan's; a Hugging Face directory brings its config.json,
// a catalogue model none.
TEST(TrainedModel, TheModelNamedElseThePlansWithItsHuggingFaceConfig) {
  const std::string folder = hyperpipe::testing::fresh_directory("trained-hf");
  std::ofstream(folder + "/config.json")
      << R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
             "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
             "vocab_size": 100, "max_position_embeddings": 32, "custom_field": 7})";
  const TrainedModel from_plan = model_trained_as(checkpoint_of(folder), std::nullopt);
  EXPECT_EQ(from_plan.config.layers, 2);
  ASSERT_TRUE(from_plan.hf_config);
  EXPECT_EQ((*from_plan.hf_config)["custom_field"], 7);  // kept as read

  const TrainedModel named = model_trained_as(checkpoint_of(folder), std::string("gpt2"));
  EXPECT_EQ(named.config.name, "gpt2-124m");  // the catalogue's name for it
  EXPECT_FALSE(named.hf_config);
}

TEST(TrainedModel, APlanModelThatCannotBeReadAsksForOne) {
  const std::string message = hyperpipe::testing::error_message<InputError>(
      [] { model_trained_as(checkpoint_of("/no/such/model"), std::nullopt); });
  EXPECT_NE(message.find("--model"), std::string::npos) << message;
  EXPECT_NE(message.find("'/no/such/model'"), std::string::npos) << message;
}

}  // namespace
}  // namespace hyperpipe::runtime
