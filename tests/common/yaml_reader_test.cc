#include "hyperpipe/common/yaml_reader.h"

#include <gtest/gtest.h>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe {
namespace {

using hyperpipe::testing::error_message;

TEST(YamlField, PathsAndLinesInErrors) {
  const YamlField root = YamlField::load_string(
      "nodes:\n  - name: a\n    count: 4\n  - name: b\n    count: -2\n", "c.yaml");
  const auto nodes = root.required("nodes").items();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].required("count").as_positive_int(), 4);
  const std::string message =
      error_message<InputError>([&] { nodes[1].required("count").as_positive_int(); });
  EXPECT_EQ(message,
            "c.yaml: line 5, field 'nodes[1].count': expected a positive integer up to 16777216, "
            "got '-2'");
}

TEST(YamlField, MissingFieldPointsAtItsParent) {
  const YamlField root = YamlField::load_string("links:\n  intra_node: {latency: 2}\n", "c.yaml");
  const std::string message = error_message<InputError>(
      [&] { root.required("links").required("intra_node").required("bandwidth"); });
  EXPECT_EQ(message,
            "c.yaml: line 2, field 'links.intra_node': missing required field 'bandwidth'");
}

TEST(YamlField, UnknownFieldsAreRejected) {
  const YamlField root = YamlField::load_string("name: x\ngpus: 3\n", "c.yaml");
  const std::string message = error_message<InputError>([&] {
    root.allow_only({"name", "count"});
  });
  EXPECT_NE(message.find("unknown field 'gpus'; expected one of: name, count"), std::string::npos)
      << message;
}

TEST(YamlField, SyntaxErrorHasLineAndColumn) {
  const std::string message =
      error_message<InputError>([] { YamlField::load_string("a: 1\nb: [1, 2\n", "broken.yaml"); });
  EXPECT_NE(message.find("broken.yaml: line"), std::string::npos) << message;
  EXPECT_NE(message.find("not valid YAML"), std::string::npos) << message;
}

TEST(YamlField, ReadsJsonToo) {
  const YamlField root =
      YamlField::load_string(R"({"hidden": 64, "inner": null, "on": true})", "x.json");
  EXPECT_EQ(root.required("hidden").as_positive_int(), 64);
  EXPECT_FALSE(root.has("inner"));  // null counts as absent
  EXPECT_TRUE(root.required("on").as_bool());
}

TEST(YamlField, TypedAccessorsRejectWrongKinds) {
  const YamlField root =
      YamlField::load_string("n: 3.5\nlist: [1]\nword: abc\nbw: 10 GB\n", "t.yaml");
  EXPECT_THROW(root.required("n").as_int(), InputError);
  EXPECT_DOUBLE_EQ(root.required("n").as_positive_number(), 3.5);
  EXPECT_THROW(root.required("list").as_string(), InputError);
  EXPECT_THROW(root.required("word").as_number(), InputError);
  EXPECT_THROW(root.required("word").as_bool(), InputError);
  EXPECT_THROW(root.required("bw").as_bandwidth(), InputError);
  EXPECT_THROW(root.required("word").items(), InputError);
  EXPECT_EQ(root.required("word").as_choice({"xyz", "abc"}), 1u);
  EXPECT_THROW(root.required("word").as_choice({"xyz"}), InputError);
}

TEST(YamlField, UnreadableFile) {
  const std::string message =
      error_message<InputError>([] { YamlField::load_file("/nonexistent/c.yaml"); });
  EXPECT_NE(message.find("/nonexistent/c.yaml: cannot open"), std::string::npos) << message;
}

}  // namespace
}  // namespace hyperpipe
