#include "hyperpipe/common/yaml_reader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"
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

TEST(YamlField, DevicesDirectoriesAndOversizedFilesAreRefusedBeforeReading) {
  EXPECT_NE(error_message<InputError>([] {
              YamlField::load_file("/dev/zero");
            }).find("expected a YAML or JSON file (a regular file), got a device"),
            std::string::npos);
  EXPECT_NE(error_message<InputError>([] {
              YamlField::load_file(::testing::TempDir());
            }).find("got a directory"),
            std::string::npos);
  // A sparse file one byte over the cap: refused from its size, nothing read.
  const std::string big = testing::temp_path("big.yaml");
  { std::ofstream(big) << "a: 1\n"; }
  ASSERT_EQ(::truncate(big.c_str(), static_cast<off_t>(kMaxSpecFileBytes + 1)), 0);
  const std::string message = error_message<InputError>([&] { YamlField::load_file(big); });
  EXPECT_NE(message.find("may be at most 64.0 MiB"), std::string::npos) << message;
  std::remove(big.c_str());
}

TEST(YamlField, DeepNestingAndAliasBombsAreRefused) {
  const std::string deep =
      std::string(kMaxNestingDepth + 1, '[') + std::string(kMaxNestingDepth + 1, ']');
  EXPECT_NE(error_message<InputError>([&] {
              YamlField::load_string(deep, "deep.json");
            }).find("nested deeper than 64 levels"),
            std::string::npos);
  const std::string deeper = std::string(2000, '[') + std::string(2000, ']');
  EXPECT_NE(error_message<InputError>([&] {
              YamlField::load_string(deeper, "deep.json");
            }).find("nested deeper than"),
            std::string::npos);
  const std::string shallow =
      std::string(kMaxNestingDepth, '[') + std::string(kMaxNestingDepth, ']');
  EXPECT_NO_THROW(YamlField::load_string(shallow, "ok.json"));
  const std::string leaf =
      std::string(kMaxNestingDepth, '[') + "1" + std::string(kMaxNestingDepth, ']');
  EXPECT_NO_THROW(YamlField::load_string(leaf, "ok.json"));
  // Nine aliases of nine aliases, eight times over: 9^8 = 43 M values from 300 bytes.
  std::string bomb = "a0: &a0 [x, y]\n";
  for (int level = 1; level <= 8; ++level) {
    bomb += fmt::format("a{}: &a{} [", level, level);
    for (int i = 0; i < 9; ++i) bomb += fmt::format("{}*a{}", i ? ", " : "", level - 1);
    bomb += "]\n";
  }
  EXPECT_NE(error_message<InputError>([&] {
              YamlField::load_string(bomb, "bomb.yaml");
            }).find("more than 16777216 values"),
            std::string::npos);
}

TEST(YamlField, EchoedKeysAndValuesAreShortAndEscaped) {
  const YamlField root = YamlField::load_string(
      "\"k\\x1b[31m\\u0007\": 1\nname: \"" + std::string(500, 'z') + "\"\n", "c.yaml");
  const std::string unknown = error_message<InputError>([&] { root.allow_only({"name"}); });
  EXPECT_NE(unknown.find("unknown field 'k\\x1b[31m\\x07'"), std::string::npos) << unknown;
  EXPECT_EQ(unknown.find('\x1b'), std::string::npos);
  const std::string value =
      error_message<InputError>([&] { root.required("name").as_positive_int(); });
  EXPECT_NE(value.find("'" + std::string(40, 'z') + "...'"), std::string::npos) << value;
  EXPECT_LT(value.size(), 200u);
}

TEST(YamlField, TextMustBeUtf8WithoutControlCharacters) {
  const YamlField root =
      YamlField::load_string("good: Grüße\nbad: x\xad\nbell: \"a\\u0007\"\n", "p.yaml");
  EXPECT_EQ(root.required("good").as_string(), "Grüße");
  const std::string bad = error_message<InputError>([&] { root.required("bad").as_string(); });
  EXPECT_NE(bad.find("line 2, field 'bad': expected UTF-8 text without control characters, got "
                     "'x\\xad'"),
            std::string::npos)
      << bad;
  EXPECT_NE(
      error_message<InputError>([&] { root.required("bell").as_string(); }).find("got 'a\\x07'"),
      std::string::npos);
}

}  // namespace
}  // namespace hyperpipe
