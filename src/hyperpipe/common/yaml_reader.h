// Typed, checked reading of hand-written YAML (and JSON, which YAML parses too).
// Every accessor that finds something wrong throws InputError naming the file, the line
// and the field path ("nodes[1].count"), and saying what was expected.
#pragma once

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hyperpipe/common/limits.h"

namespace hyperpipe {

class YamlField {
 public:
  // Reads and parses a file; throws InputError if it cannot be read or is not valid YAML.
  static YamlField load_file(const std::string& path);
  // Parses text; `source` names it in error messages (a file name or "built-in cluster X").
  static YamlField load_string(const std::string& text, const std::string& source);

  const std::string& source() const { return source_; }
  // Dotted field path from the document root; empty at the root.
  const std::string& path() const { return path_; }
  // 1-based line of this node in the source.
  int line() const;

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  // Map access. `has` is false for a missing key and for an explicit null value.
  bool has(const std::string& key) const;
  YamlField required(const std::string& key) const;
  std::optional<YamlField> optional(const std::string& key) const;
  // Rejects keys outside `allowed`, so a typo ("gpus:" for "count:") is an error, not a
  // silently ignored field.
  void allow_only(std::initializer_list<std::string_view> allowed) const;
  void allow_only(const std::vector<std::string>& allowed) const;
  std::vector<std::pair<std::string, YamlField>> entries() const;

  // Sequence access; `min_items` rejects an empty list where one makes no sense.
  std::vector<YamlField> items(size_t min_items = 0) const;

  std::string as_string() const;
  bool as_bool() const;
  int64_t as_int() const;
  // At most `max` (kMaxSize by default: see limits.h).
  int64_t as_positive_int(int64_t max = kMaxSize) const;
  double as_number() const;
  double as_positive_number() const;
  double as_non_negative_number() const;  // a finite number, at least 0
  // Quantities with units, see quantity.h for the accepted units and defaults.
  double as_bytes() const;
  double as_bandwidth() const;
  double as_duration() const;
  double as_flop_rate() const;
  // One of `choices` (exact match); returns its index.
  size_t as_choice(const std::vector<std::string>& choices) const;

  // Throws InputError at this field: "<source>: line L, field P: expected <expected>, got V".
  [[noreturn]] void fail(const std::string& expected) const;

 private:
  // yaml-cpp's Node has no move constructor: it is a handle, copied cheaply.
  YamlField(const YAML::Node& node, std::string source, std::string path, YAML::Mark mark);
  std::string where() const;
  std::string shown_value() const;
  YamlField child(const std::string& key, const YAML::Node& node) const;
  // The scalar as a whole integer or a finite number; nullopt if it is not one.
  std::optional<int64_t> scalar_int() const;
  std::optional<double> scalar_number() const;
  // The scalar parsed by one of quantity.h's parsers; fails with `expected` otherwise.
  double quantity(std::optional<double> (*parse)(const std::string&), const char* expected) const;

  YAML::Node node_;
  std::string source_;
  std::string path_;
  YAML::Mark mark_;
};

}  // namespace hyperpipe
