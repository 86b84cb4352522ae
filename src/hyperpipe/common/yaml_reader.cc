#include "hyperpipe/common/yaml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hyperpipe/common/error.h"
#include "hyperpipe/common/input_file.h"
#include "hyperpipe/common/quantity.h"
#include "hyperpipe/common/text_excerpt.h"

namespace hyperpipe {
namespace {

// Longest field path echoed back in an error message (keys come from the file).
constexpr size_t kMaxShownPathChars = 120;

// Refuses documents nested deeper than kMaxNestingDepth or with more than kMaxDocumentNodes
// nodes counted through aliases (a few aliases of aliases expand exponentially), before
// any reader walks them.
void check_shape(const YAML::Node& root, const std::string& source) {
  struct Pending {
    YAML::Node node;
    int depth;
  };
  std::vector<Pending> stack{{root, 1}};  // the root is the first level
  int64_t visited = 0;
  while (!stack.empty()) {
    Pending top = std::move(stack.back());
    stack.pop_back();
    if (++visited > kMaxDocumentNodes) {
      throw InputError(source, "",
                       fmt::format("more than {} values (counting each alias as the values it "
                                   "repeats): not a spec, plan or profile",
                                   kMaxDocumentNodes));
    }
    const bool container = top.node.IsSequence() || top.node.IsMap();
    if (container && top.depth > kMaxNestingDepth) {
      throw InputError(source, fmt::format("line {}", top.node.Mark().line + 1),
                       fmt::format("nested deeper than {} levels", kMaxNestingDepth));
    }
    if (top.node.IsSequence()) {
      for (const auto& item : top.node) stack.push_back({item, top.depth + 1});
    } else if (top.node.IsMap()) {
      for (const auto& entry : top.node) {
        stack.push_back({entry.first, top.depth + 1});
        stack.push_back({entry.second, top.depth + 1});
      }
    }
  }
}

std::string join(const std::vector<std::string>& words) {
  std::string joined;
  for (const auto& word : words) {
    if (!joined.empty()) joined += ", ";
    joined += word;
  }
  return joined;
}

}  // namespace

YamlField::YamlField(const YAML::Node& node, std::string source, std::string path, YAML::Mark mark)
    : node_(node), source_(std::move(source)), path_(std::move(path)), mark_(mark) {}

YamlField YamlField::load_file(const std::string& path) {
  return load_string(read_input_file(path, kMaxSpecFileBytes, "a YAML or JSON file"), path);
}

YamlField YamlField::load_string(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& error) {
    throw InputError(source, fmt::format("line {}", error.mark.line + 1),
                     fmt::format("nested deeper than {} levels", error.depth()));
  } catch (const YAML::ParserException& error) {
    throw InputError(source,
                     fmt::format("line {}, column {}", error.mark.line + 1, error.mark.column + 1),
                     "not valid YAML/JSON: " + error.msg);
  }
  check_shape(root, source);
  return YamlField(root, source, "", root.Mark());
}

int YamlField::line() const {
  return mark_.is_null() ? 0 : mark_.line + 1;
}

std::string YamlField::where() const {
  std::string place = line() > 0 ? fmt::format("line {}", line()) : std::string();
  const std::string field =
      path_.empty() ? "top level" : "field '" + printable_excerpt(path_, kMaxShownPathChars) + "'";
  return place.empty() ? field : place + ", " + field;
}

std::string YamlField::shown_value() const {
  if (!node_.IsDefined() || node_.IsNull()) return "nothing";
  if (node_.IsMap()) return "a mapping";
  if (node_.IsSequence()) return "a list";
  return "'" + printable_excerpt(node_.Scalar()) + "'";
}

void YamlField::fail(const std::string& expected) const {
  throw InputError(source_, where(), "expected " + expected + ", got " + shown_value());
}

YamlField YamlField::child(const std::string& key, const YAML::Node& node) const {
  const std::string child_path = path_.empty() ? key : path_ + "." + key;
  // A missing node has no position: point at its parent instead.
  const YAML::Mark mark = node.IsDefined() && !node.Mark().is_null() ? node.Mark() : mark_;
  return YamlField(node, source_, child_path, mark);
}

bool YamlField::has(const std::string& key) const {
  if (!node_.IsMap()) return false;
  const YAML::Node value = node_[key];
  return value.IsDefined() && !value.IsNull();
}

YamlField YamlField::required(const std::string& key) const {
  if (!node_.IsMap()) fail("a mapping with field '" + key + "'");
  if (!has(key)) {
    throw InputError(source_, where(), "missing required field '" + key + "'");
  }
  return child(key, node_[key]);
}

std::optional<YamlField> YamlField::optional(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return child(key, node_[key]);
}

void YamlField::allow_only(std::initializer_list<std::string_view> allowed) const {
  allow_only(std::vector<std::string>(allowed.begin(), allowed.end()));
}

void YamlField::allow_only(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) fail("a mapping");
  for (const auto& entry : node_) {
    if (!entry.first.IsScalar()) fail("a mapping with text keys");
    const std::string key = entry.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    throw InputError(
        source_, child(key, entry.second).where(),
        "unknown field '" + printable_excerpt(key) + "'; expected one of: " + join(allowed));
  }
}

std::vector<std::pair<std::string, YamlField>> YamlField::entries() const {
  if (!node_.IsMap()) fail("a mapping");
  std::vector<std::pair<std::string, YamlField>> result;
  for (const auto& entry : node_) {
    if (!entry.first.IsScalar()) fail("a mapping with text keys");
    const std::string key = entry.first.as<std::string>();
    if (!is_printable_utf8(key)) {
      child(key, entry.second).fail("a key in UTF-8 text without control characters");
    }
    result.emplace_back(key, child(key, entry.second));
  }
  return result;
}

std::vector<YamlField> YamlField::items(size_t min_items) const {
  if (!node_.IsSequence()) fail("a list");
  if (node_.size() < min_items)
    fail("a list of at least " + counted(static_cast<int64_t>(min_items), "item"));
  std::vector<YamlField> result;
  for (size_t i = 0; i < node_.size(); ++i) {
    const YAML::Node item = node_[i];
    const YAML::Mark mark = item.Mark().is_null() ? mark_ : item.Mark();
    result.push_back(YamlField(item, source_, fmt::format("{}[{}]", path_, i), mark));
  }
  return result;
}

std::string YamlField::as_string() const {
  if (!node_.IsScalar()) fail("a text value");
  // Names travel into JSON outputs, tables and the terminal: UTF-8 without control
  // characters, or refused here with the line, rather than failing once results are written.
  if (!is_printable_utf8(node_.Scalar())) fail("UTF-8 text without control characters");
  return node_.Scalar();
}

bool YamlField::as_bool() const {
  bool value = false;
  if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, value)) fail("true or false");
  return value;
}

std::optional<int64_t> YamlField::scalar_int() const {
  if (!node_.IsScalar()) return std::nullopt;
  const std::string& text = node_.Scalar();
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return value;
}

std::optional<double> YamlField::scalar_number() const {
  if (!node_.IsScalar()) return std::nullopt;
  const std::string& text = node_.Scalar();
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

double YamlField::quantity(std::optional<double> (*parse)(const std::string&),
                           const char* expected) const {
  const auto value = node_.IsScalar() ? parse(node_.Scalar()) : std::nullopt;
  if (!value) fail(expected);
  return *value;
}

int64_t YamlField::as_int() const {
  const auto value = scalar_int();
  if (!value) fail("an integer");
  return *value;
}

int64_t YamlField::as_positive_int(int64_t max) const {
  const auto value = scalar_int();
  if (!value || *value <= 0 || *value > max) {
    fail(fmt::format("a positive integer up to {}", max));
  }
  return *value;
}

double YamlField::as_number() const {
  const auto value = scalar_number();
  if (!value) fail("a finite number");
  return *value;
}

double YamlField::as_positive_number() const {
  const auto value = scalar_number();
  if (!value || *value <= 0) fail("a positive number");
  return *value;
}

double YamlField::as_non_negative_number() const {
  const auto value = scalar_number();
  if (!value || *value < 0) fail("a number, at least 0");
  return *value;
}

double YamlField::as_bytes() const {
  return quantity(parse_bytes, "a positive size such as '80 GiB' (a bare number is GiB)");
}

double YamlField::as_bandwidth() const {
  return quantity(parse_bandwidth,
                  "a positive bandwidth such as '25 GB/s' or '100 Gbit/s' (a bare number is GB/s)");
}

double YamlField::as_duration() const {
  return quantity(parse_duration,
                  "a non-negative duration such as '5 us' or '1.5 ms' (a bare number is us)");
}

double YamlField::as_flop_rate() const {
  return quantity(parse_flop_rate,
                  "a positive rate such as '312 TFLOP/s' (a bare number is TFLOP/s)");
}

size_t YamlField::as_choice(const std::vector<std::string>& choices) const {
  if (node_.IsScalar()) {
    for (size_t i = 0; i < choices.size(); ++i) {
      if (node_.Scalar() == choices[i]) return i;
    }
  }
  fail("one of: " + join(choices));
}

}  // namespace hyperpipe
