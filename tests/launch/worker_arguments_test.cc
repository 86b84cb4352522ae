#include "hyperpipe/launch/worker_arguments.h"

#include <gtest/gtest.h>

#include "hyperpipe/model/catalogue.h"

namespace hyperpipe::launch {
namespace {

using Arguments = std::vector<std::string>;

// Both spellings of an option are read, and the last one given wins, as CLI11 reads them
// in the worker.
TEST(WorkerArguments, ReadsBothSpellingsAndTheLastValue) {
  const Arguments arguments{"--steps",          "4",     "--checkpoint-dir=run/a",
                            "--checkpoint-dir", "run/b", "--resume"};
  EXPECT_EQ(option_value(arguments, "--steps"), "4");
  EXPECT_EQ(option_value(arguments, "--checkpoint-dir"), "run/b");
  EXPECT_EQ(option_value(Arguments{"--dtype=bf16", "--dtype=fp16"}, "--dtype"), "fp16");
  EXPECT_FALSE(option_value(arguments, "--dtype"));
  // A flag at the end has no value; a prefix of another option is not that option.
  EXPECT_FALSE(option_value(arguments, "--resume"));
  EXPECT_FALSE(option_value(Arguments{"--checkpoint-directory", "x"}, "--checkpoint-dir"));
  EXPECT_TRUE(has_flag(arguments, "--resume"));
  EXPECT_FALSE(has_flag(arguments, "--overwrite"));
}

// A restart drops an option with its value (both spellings) or a flag alone, and keeps
// everything else in order.
TEST(WorkerArguments, DropsAnOptionWithItsValueOrAFlagAlone) {
  const Arguments arguments{"--startup-record",        "a.json",      "--steps", "4",
                            "--startup-record=b.json", "--overwrite", "--resume"};
  EXPECT_EQ(without_option(arguments, "--startup-record", true),
            (Arguments{"--steps", "4", "--overwrite", "--resume"}));
  EXPECT_EQ(without_option(arguments, "--overwrite", false),
            (Arguments{"--startup-record", "a.json", "--steps", "4", "--startup-record=b.json",
                       "--resume"}));
}

// The model as the run computes it: the --dtype given, fp64 costed as fp32 (the GPU types
// have no fp64 peaks), unchanged without one or with one no dtype names.
TEST(WorkerArguments, TheModelIsCostedInTheRunsDtype) {
  const model::Model model(*model::find_catalogue_model("gpt2"));
  ASSERT_EQ(model.config().dtype, model::DType::fp16);
  EXPECT_EQ(model_as_run(model, {"--dtype", "bf16"}).config().dtype, model::DType::bf16);
  EXPECT_EQ(model_as_run(model, {"--dtype=fp64"}).config().dtype, model::DType::fp32);
  EXPECT_EQ(model_as_run(model, {"--dtype", "fp32"}).config().dtype, model::DType::fp32);
  EXPECT_EQ(model_as_run(model, {}).config().dtype, model::DType::fp16);
  EXPECT_EQ(model_as_run(model, {"--dtype", "int3"}).config().dtype, model::DType::fp16);
}

// Through train's definition of an option: its value read as the type the worker reads
// it as, and flags added or dropped with or without a value as the definition says.
TEST(WorkerArguments, TypedThroughTrainsDefinition) {
  namespace flags = train_flags;
  const Arguments arguments{
      "--steps",    "12",    "--adapt-gain=0.25", "--resume", "--checkpoint-every", "ten",
      "--profiles", "p.json"};
  EXPECT_EQ(value_of(arguments, flags::kSteps), 12);
  EXPECT_EQ(value_of(arguments, flags::kAdaptGain), 0.25);
  EXPECT_EQ(value_of(arguments, flags::kProfiles), "p.json");
  EXPECT_FALSE(value_of(arguments, flags::kCheckpointEvery));  // "ten": the worker refuses it
  EXPECT_FALSE(value_of(arguments, flags::kTimeout));
  EXPECT_TRUE(given(arguments, flags::kResume));
  EXPECT_FALSE(given(arguments, flags::kOverwrite));
  EXPECT_EQ(
      without(arguments, flags::kProfiles),
      (Arguments{"--steps", "12", "--adapt-gain=0.25", "--resume", "--checkpoint-every", "ten"}));
  EXPECT_EQ(without(arguments, flags::kResume).size(), arguments.size() - 1);
  Arguments passed{"--steps", "3"};
  append(passed, flags::kResume);
  append(passed, flags::kPlan, "plan.json");
  EXPECT_EQ(passed, (Arguments{"--steps", "3", "--resume", "--plan", "plan.json"}));
}

}  // namespace
}  // namespace hyperpipe::launch
