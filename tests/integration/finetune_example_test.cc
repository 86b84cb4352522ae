// The guide's fine-tuning walkthrough (scripts/finetune_example.sh) as a user runs it, for
// both architectures: the shipped script's model fine-tuned on its own tokenizer's
// indexed dataset across the emulated cluster learns (the loss falls), and its export
// holds trained weights (not the ones it started from) under the same names and shapes.
#include <gtest/gtest.h>

#include "hyperpipe/weights/safetensors.h"
#include "run_helpers.h"

namespace hyperpipe::runtime {
namespace {

using namespace integration;

struct Walkthrough {
  const char* name;  // the script's FLAVOUR
};

class FinetuneExample : public ::testing::TestWithParam<Walkthrough> {};

TEST_P(FinetuneExample, FineTunesTheShippedModelAndExportsIt) {
  const std::string flavour = GetParam().name;
  const std::string out = hyperpipe::testing::temp_path("finetune-" + flavour);
  std::filesystem::remove_all(out);
  const std::string log = out + ".log";
  ASSERT_EQ(run_command(fmt::format("FLAVOUR={} STEPS=12 MICRO_BATCHES=8 OUT={} HYPERPIPE={} bash "
                                    "{}/../scripts/finetune_example.sh > {} 2>&1",
                                    flavour, out, kBinary, HYPERPIPE_EXAMPLES, log)),
            0)
      << slurp(log);
  const auto losses = metric_losses(out);
  ASSERT_EQ(losses.size(), 12u) << slurp(log);
  EXPECT_LT(losses.back(), losses.front() - 0.1) << slurp(log);

  const weights::SafetensorsFile before(out + "/tiny-" + flavour + "/model.safetensors");
  const weights::SafetensorsFile after(out + "/tiny-" + flavour + "-tuned/model.safetensors");
  ASSERT_EQ(after.tensors().size(), before.tensors().size());
  int changed = 0;
  for (const auto& entry : before.tensors()) {
    const auto* tuned = after.find(entry.name);
    ASSERT_NE(tuned, nullptr) << entry.name;
    EXPECT_EQ(tuned->shape, entry.shape) << entry.name;
    const auto a = before.bytes(entry);
    const auto b = after.bytes(*tuned);
    changed += a.size() != b.size() || !std::equal(a.begin(), a.end(), b.begin());
  }
  EXPECT_EQ(changed, static_cast<int>(before.tensors().size())) << "every tensor trained";
  EXPECT_TRUE(std::filesystem::exists(out + "/tiny-" + flavour + "-tuned/vocab.json"));
  std::filesystem::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Flavours, FinetuneExample,
                         ::testing::Values(Walkthrough{"gpt2"}, Walkthrough{"llama"}),
                         hyperpipe::testing::NameOfCase());

}  // namespace
}  // namespace hyperpipe::runtime
