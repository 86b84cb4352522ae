#include "hyperpipe/model/model_loader.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe::model {
namespace {

using hyperpipe::testing::BadInputCase;
using hyperpipe::testing::error_message;
using hyperpipe::testing::write_temp_file;

const std::string kData = HYPERPIPE_TEST_DATA;

TEST(HuggingFaceConfig, Gpt2) {
  const Model model = load_model(kData + "/gpt2-config.json");
  EXPECT_EQ(model.total_params(), 124'439'808);
  EXPECT_EQ(model.config().ffn_hidden, 4 * 768);  // n_inner: null
  EXPECT_EQ(model.config().name, "gpt2");
}

// A Hugging Face checkpoint's directory is read through its config.json; a directory
// without one is refused, saying what it lacks.
TEST(HuggingFaceConfig, ACheckpointDirectoryIsItsConfigJson) {
  const std::string dir = hyperpipe::testing::temp_path("hf-gpt2-directory");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_NE(error_message<InputError>([&] {
              load_model(dir);
            }).find("a model directory with a config.json"),
            std::string::npos);
  std::filesystem::copy_file(kData + "/gpt2-config.json", dir + "/config.json");
  const Model model = load_model(dir);
  EXPECT_EQ(model.total_params(), 124'439'808);
  EXPECT_EQ(model.config().name, "gpt2");
}

TEST(HuggingFaceConfig, OptWithNarrowEmbeddingsAndPostNorm) {
  const Model model = load_model(kData + "/opt-350m-config.json");
  EXPECT_EQ(model.total_params(), 331'196'416);
  EXPECT_FALSE(model.config().final_norm);
  EXPECT_EQ(model.config().embed_dim, 512);
}

TEST(HuggingFaceConfig, Llama) {
  const Model llama2 = load_model(kData + "/llama-2-7b-config.json");
  EXPECT_EQ(llama2.total_params(), 6'738'415'616);
  EXPECT_EQ(llama2.config().dtype, DType::fp16);  // torch_dtype wins over the default
  const Model llama3 = load_model(kData + "/llama-3-8b-config.json");
  EXPECT_EQ(llama3.total_params(), 8'030'261'248);
  EXPECT_EQ(llama3.config().kv_heads, 8);
  EXPECT_EQ(llama3.config().dtype, DType::bf16);
  // Named as the hub names it, or (no _name_or_path) by architecture and shape, never by
  // the folder the file sits in.
  EXPECT_EQ(llama2.config().name, "meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(llama3.config().name, "llama-32x4096");
  // What changes the logits and not the cost: each config's own.
  EXPECT_DOUBLE_EQ(llama2.config().rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(llama3.config().rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(llama3.config().norm_eps, 1e-5);
  EXPECT_FALSE(llama3.config().qkv_bias);
}

// Qwen2: LLaMA's shape with biases on q, k and v, which add h + 2·kv parameters per block;
// a missing rms_norm_eps is Qwen2Config's default.
TEST(HuggingFaceConfig, Qwen2HasQueryKeyAndValueBiases) {
  const std::string body = R"("hidden_size": 64, "num_hidden_layers": 3,
      "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
      "max_position_embeddings": 32, "vocab_size": 100, "rope_theta": 1000000.0})";
  const Model qwen2 =
      load_model(write_temp_file("qwen2.json", R"({"model_type": "qwen2", )" + body));
  const Model llama =
      load_model(write_temp_file("llama.json", R"({"model_type": "llama", )" + body));
  EXPECT_TRUE(qwen2.config().qkv_bias);
  EXPECT_DOUBLE_EQ(qwen2.config().rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(qwen2.config().norm_eps, 1e-6);
  EXPECT_EQ(qwen2.total_params() - llama.total_params(), 3 * (64 + 2 * 32));
}

TEST(HuggingFaceConfig, UnsupportedTypeNamesTheField) {
  const std::string path = write_temp_file("bert.json", R"({"model_type": "bert"})");
  const std::string message = error_message<InputError>([&] { load_model(path); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("model_type"), std::string::npos) << message;
  EXPECT_NE(message.find("gpt2, opt, llama"), std::string::npos) << message;
}

TEST(HuggingFaceConfig, MissingFieldIsNamed) {
  const std::string path =
      write_temp_file("partial.json", R"({"model_type": "llama", "hidden_size": 64})");
  const std::string message = error_message<InputError>([&] { load_model(path); });
  EXPECT_NE(message.find("num_hidden_layers"), std::string::npos) << message;
}

TEST(ModelYaml, FullDescription) {
  const std::string path = write_temp_file("tiny.yaml", R"(
name: tiny-llama
flavour: llama
hidden: 256
layers: 4
heads: 8
kv_heads: 2
vocab: 1000
seq_len: 128
dtype: fp32
norm_eps: 1.0e-6
rope_theta: 500000
qkv_bias: true
)");
  const Model model = load_model(path);
  const auto& c = model.config();
  EXPECT_EQ(c.name, "tiny-llama");
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(c.flavour, Flavour::llama);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_FALSE(c.dropout);
  EXPECT_EQ(c.ffn_hidden, 768);  // 2/3 · 4 · 256 = 682.7, rounded up to a multiple of 256
  EXPECT_EQ(c.dtype, DType::fp32);
  EXPECT_EQ(model.num_layers(), 6);
}

TEST(ModelYaml, BaseModelWithChanges) {
  const std::string path = write_temp_file("longer.yaml", "base: gpt3-2.7b\nseq_len: 4096\n");
  const Model model = load_model(path);
  EXPECT_EQ(model.config().hidden, 2560);
  EXPECT_EQ(model.config().seq_len, 4096);
  EXPECT_EQ(model.config().name, "gpt3-2.7b");
}

TEST(ModelYaml, Tf32IsAnFp32ModelsSetting) {
  EXPECT_FALSE(load_model("gpt2").config().tf32);
  const std::string path =
      write_temp_file("tf32.yaml", "base: gpt3-2.7b\ndtype: fp32\ntf32: true\n");
  EXPECT_TRUE(load_model(path).config().tf32);
}

class BadModelYaml : public ::testing::TestWithParam<hyperpipe::testing::BadInputCase> {};

TEST_P(BadModelYaml, SaysWhereAndWhat) {
  const std::string path = write_temp_file("bad-model.yaml", GetParam().text);
  const std::string message = error_message<InputError>([&] { load_model(path); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().expected_fragment), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadModelYaml,
    ::testing::Values(
        BadInputCase{"hidden: [1, 2\nlayers: 3\n", "not valid YAML"},
        BadInputCase{"hidden: 64\nlayers: 2\nheads: 4\nvocab: 10\n",
                     "missing required field 'seq_len'"},
        BadInputCase{
            "hidden: -64\nlayers: 2\nheads: 4\nvocab: 10\nseq_len: 8\n",
            "line 1, field 'hidden': expected a positive integer up to 16777216, got '-64'"},
        BadInputCase{"hidden: 64\nlayers: 0\nheads: 4\nvocab: 10\nseq_len: 8\n",
                     "field 'layers': expected a positive integer"},
        BadInputCase{"hidden: 64\nlayers: 2\nheads: 5\nvocab: 10\nseq_len: 8\n",
                     "line 3, field 'heads': expected a divisor of hidden = 64"},
        BadInputCase{"base: gpt2\nkv_heads: 5\n",
                     "line 2, field 'kv_heads': expected a divisor of heads = 12"},
        BadInputCase{"hidden: 64\nlayers: 2\nheads: 4\nvocab: 10\nseq_len: 8\nlayer: 3\n",
                     "unknown field 'layer'"},
        BadInputCase{"base: gpt9\n", "field 'base': expected a catalogue model name"},
        BadInputCase{"base: gpt2\ndtype: fp8\n", "field 'dtype': expected a dtype"},
        BadInputCase{"base: gpt2\nflavour: bert\n", "expected one of: gpt, llama"},
        BadInputCase{"", "expected a mapping of model fields"},
        BadInputCase{"base: gpt2\nlayers: 100000\n", "field 'layers': expected at most 10000"},
        BadInputCase{"base: gpt2\nhidden: 99999999999999\n", "expected a positive integer up to"},
        BadInputCase{"{[1, 2]: 3}\n", "expected a mapping with text keys"},
        BadInputCase{"- 1\n- 2\n", "expected a mapping of model fields, got a list"},
        BadInputCase{"base: llama2-7b\nnorm_eps: 0\n", "field 'norm_eps'"},
        BadInputCase{"base: llama2-7b\nnorm_eps: 2\n", "between 0 and 1, got 2"},
        BadInputCase{"base: llama2-7b\nrope_theta: -5\n", "field 'rope_theta'"},
        BadInputCase{"base: gpt2\nqkv_bias: true\n", "false or absent for GPT"},
        BadInputCase{"base: gpt2\ntf32: true\n",
                     "field 'tf32': expected false or absent unless "
                     "dtype is fp32"}));

TEST(LoadModel, UnknownNameSaysWhatIsAccepted) {
  const std::string message = error_message<InputError>([] { load_model("gpt-17"); });
  EXPECT_NE(message.find("--model"), std::string::npos) << message;
  EXPECT_NE(message.find("hyperpipe models"), std::string::npos) << message;
}

TEST(LoadModel, MissingFileIsReported) {
  const std::string message = error_message<InputError>([] { load_model("/nonexistent/m.yaml"); });
  EXPECT_NE(message.find("/nonexistent/m.yaml"), std::string::npos) << message;
}

TEST(ModelLoader, AModelNamedAfterANonUtf8FileMustNameItself) {
  const std::string yaml = "hidden: 64\nlayers: 2\nheads: 4\nvocab: 10\nseq_len: 8\n";
  const std::string path = hyperpipe::testing::write_temp_file("m\xff.yaml", yaml);
  const std::string message =
      hyperpipe::testing::error_message<InputError>([&] { load_model(path); });
  EXPECT_NE(message.find("name: a `name` field"), std::string::npos) << message;
  EXPECT_NE(message.find("'hyperpipe-"), std::string::npos) << message;
  EXPECT_NE(message.find("m\\xff'"), std::string::npos) << message;
  const std::string named =
      hyperpipe::testing::write_temp_file("n\xff.yaml", "name: fine\n" + yaml);
  EXPECT_EQ(load_model(named).config().name, "fine");
}

}  // namespace
}  // namespace hyperpipe::model
