#include "hyperpipe/common/nearest_name.h"

#include <gtest/gtest.h>

#include <map>

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
  EXPECT_EQ(edit_distance("stpes", "steps"), 1u);  // two neighbours swapped
  EXPECT_EQ(edit_distance("ba", "ab"), 1u);
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);  // not 2: no substring is edited twice
}

// Against a brute force: the distance is the least number of edits of a breadth-first
// search over every string one edit away, on a small alphabet.
TEST(EditDistance, EqualsTheFewestEditsFoundByBreadthFirstSearch) {
  const std::string alphabet = "ab";
  const auto neighbours = [&](const std::string& s) {
    std::vector<std::string> out;
    for (size_t i = 0; i <= s.size(); ++i) {
      for (char c : alphabet) out.push_back(s.substr(0, i) + c + s.substr(i));  // insert
      if (i == s.size()) continue;
      out.push_back(s.substr(0, i) + s.substr(i + 1));  // delete
      for (char c : alphabet) out.push_back(s.substr(0, i) + c + s.substr(i + 1));
      if (i + 1 < s.size()) {
        std::string swapped = s;
        std::swap(swapped[i], swapped[i + 1]);
        out.push_back(swapped);
      }
    }
    return out;
  };
  // Every string of up to 3 letters of two: too few for a swap and another edit to overlap,
  // where this distance exceeds the true one ("ca" to "abc" takes three letters).
  std::vector<std::string> words{""};
  for (size_t n = 0; n < words.size() && words[n].size() < 3; ++n) {
    for (char c : alphabet) words.push_back(words[n] + c);
  }
  for (const auto& from : words) {
    std::map<std::string, size_t> distance{{from, 0}};
    std::vector<std::string> frontier{from};
    for (size_t d = 1; d <= 4; ++d) {
      std::vector<std::string> next;
      for (const auto& s : frontier) {
        for (const auto& n : neighbours(s)) {
          if (n.size() <= 4 && distance.emplace(n, d).second) next.push_back(n);
        }
      }
      frontier = next;
    }
    for (const auto& to : words) {
      EXPECT_EQ(edit_distance(from, to), distance.at(to)) << from << " " << to;
    }
  }
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
  EXPECT_EQ(nearest_name("--stpes", {"--steps", "--seed"}), "--steps");
  EXPECT_EQ(did_you_mean("bert", models), "");
}

}  // namespace
}  // namespace hyperpipe
