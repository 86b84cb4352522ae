#include "hyperpipe/common/nearest_name.h"

#include <gtest/gtest.h>

namespace hyperpipe {
namespace {

TEST(EditDistance, CountsTheFewestSingleCharacterEdits) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("plan", "plan"), 0u);
  EXPECT_EQ(edit_distance("plann", "plan"), 1u);      // one deletion
  EXPECT_EQ(edit_distance("pln", "plan"), 1u);        // one insertion
  EXPECT_EQ(edit_distance("plen", "plan"), 1u);       // one substitution
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // the textbook pair
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(NearestName, SuggestsWhatWasMeant) {
  const std::vector<std::string> commands{"models", "devices", "describe", "plan", "simulate"};
  EXPECT_EQ(nearest_name("plann", commands), "plan");
  EXPECT_EQ(nearest_name("simulat", commands), "simulate");
  EXPECT_EQ(nearest_name("Describe", commands), "describe");
  // Separators and case do not count: the catalogue's names as people type them.
  const std::vector<std::string> models{"gpt2", "gpt3-2.7b", "llama2-7b", "llama3-8b"};
  EXPECT_EQ(nearest_name("llama-2-7b", models), "llama2-7b");
  EXPECT_EQ(nearest_name("GPT3_2.7B", models), "gpt3-2.7b");
  EXPECT_EQ(nearest_name("llama3-7b", models), "llama2-7b");  // the first of the closest
  // Nothing close: no suggestion.
  EXPECT_EQ(nearest_name("train", commands), std::nullopt);
  EXPECT_EQ(nearest_name("x", commands), std::nullopt);
  EXPECT_EQ(did_you_mean("plann", commands), "; did you mean 'plan'?");
  EXPECT_EQ(did_you_mean("bert", models), "");
}

}  // namespace
}  // namespace hyperpipe
