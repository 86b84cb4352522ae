// config.json as transformers 5 writes it (rope_parameters, dtype), what the reader refuses
// because the runtime would compute other logits from it, and the config an export keeps.
#include "hyperpipe/weights/hf_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hyperpipe/common/error.h"
#include "hyperpipe/model/model_loader.h"
#include "hyperpipe/weights/hf_checkpoint.h"
#include "test_files.h"

namespace hyperpipe::weights {
namespace {

// A LlamaConfig as transformers 5.25 saves it (LlamaConfig(...).save_pretrained), the
// rotary base only inside rope_parameters.
std::string llama3_config(const std::string& rope_parameters, const std::string& extra = "") {
  return R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
    "dtype": "float32", "head_dim": 8, "hidden_act": "silu", "hidden_size": 32,
    "intermediate_size": 48, "max_position_embeddings": 16, "mlp_bias": false,
    "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "rope_parameters": )" +
         rope_parameters + extra + R"(, "tie_word_embeddings": true,
    "transformers_version": "5.25.0", "vocab_size": 256})";
}

constexpr const char* kLlama3Rope = R"({"rope_theta": 500000.0, "rope_type": "default"})";

TEST(HfConfig, TransformersFiveNamesTheRotaryBaseAndTheDtypeItsWay) {
  const auto path =
      hyperpipe::testing::write_temp_file("llama3-v5.json", llama3_config(kLlama3Rope));
  const auto config = model::load_model(path).config();
  EXPECT_DOUBLE_EQ(config.rope_theta, 500000.0);
  EXPECT_EQ(config.dtype, model::DType::fp32);  // not LLaMA's bf16 default
  EXPECT_TRUE(config.tied_embeddings);
}

// The reason HfCheckpoint gives for a directory holding only `config` (its settings are
// checked before any weight file is looked for).
std::string refusal(const std::string& name, const std::string& config) {
  const std::string dir = hyperpipe::testing::temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << config;
  try {
    HfCheckpoint checkpoint(dir, HfComputation{});
  } catch (const InputError& error) {
    return error.what();
  }
  return "accepted";
}

TEST(HfConfig, SettingsThatWouldChangeTheLogitsAreRefused) {
  // Llama 3.1's scaled rotary positions, transformers 5's way.
  EXPECT_NE(refusal("rope-llama3", llama3_config(
                                       R"({"rope_theta": 500000.0, "rope_type": "llama3",
                                           "factor": 8.0})"))
                .find("rope_parameters"),
            std::string::npos);
  // A head width that is not hidden ÷ heads (Mistral NeMo's); the file's own is fine, and
  // the checkpoint goes on to look for its weights.
  EXPECT_NE(refusal("head-dim", llama3_config(kLlama3Rope, R"(, "head_dim": 16)")).find("head_dim"),
            std::string::npos);
  EXPECT_NE(refusal("head-dim-fine", llama3_config(kLlama3Rope)).find("the weights"),
            std::string::npos);
  // GPT-2's attention scaled by the inverse layer number, or not by √d.
  const std::string gpt2 = R"({"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4,
      "n_positions": 16, "vocab_size": 256, "resid_pdrop": 0, "embd_pdrop": 0,
      "attn_pdrop": 0)";
  EXPECT_NE(refusal("gpt2-inverse", gpt2 + R"(, "scale_attn_by_inverse_layer_idx": true})")
                .find("scale_attn_by_inverse_layer_idx"),
            std::string::npos);
  EXPECT_NE(refusal("gpt2-unscaled", gpt2 + R"(, "scale_attn_weights": false})")
                .find("scale_attn_weights"),
            std::string::npos);
  EXPECT_NE(refusal("gpt2-plain", gpt2 + "}").find("the weights"), std::string::npos);
}

TEST(HfConfig, AnExportKeepsTheConfigItWasLoadedFrom) {
  const nlohmann::ordered_json mistral = nlohmann::ordered_json::parse(
      R"({"architectures": ["MistralForCausalLM"], "model_type": "mistral", "bos_token_id": 1,
          "sliding_window": 4096, "dtype": "bfloat16", "hidden_size": 32})");
  const auto kept = hf_config_kept(mistral, "float32");
  EXPECT_EQ(kept["model_type"], "mistral");
  EXPECT_EQ(kept["architectures"][0], "MistralForCausalLM");
  EXPECT_EQ(kept["sliding_window"], 4096);
  EXPECT_EQ(kept["bos_token_id"], 1);
  EXPECT_EQ(kept["dtype"], "float32");  // under transformers 5's key, as the file had it
  EXPECT_FALSE(kept.contains("torch_dtype"));
  // transformers 4's key where the file has it, and where it has neither.
  EXPECT_EQ(hf_config_kept(nlohmann::ordered_json::parse(R"({"torch_dtype": "float16"})"),
                           "bfloat16")["torch_dtype"],
            "bfloat16");
  EXPECT_EQ(hf_config_kept(nlohmann::ordered_json::parse(R"({"model_type": "llama"})"),
                           "float32")["torch_dtype"],
            "float32");
}

}  // namespace
}  // namespace hyperpipe::weights
