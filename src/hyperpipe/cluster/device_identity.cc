#include "hyperpipe/cluster/device_identity.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <regex>
#include <vector>

#include "hyperpipe/cluster/gpu_catalogue.h"

namespace hyperpipe::cluster {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<std::string> parts_of(const std::string& name) {
  std::vector<std::string> parts;
  std::string part;
  for (const char ch : name + " ") {
    if (ch == '-' || ch == '_' || ch == ' ') {
      if (!part.empty()) parts.push_back(gpu_name_key(part));
      part.clear();
    } else {
      part += ch;
    }
  }
  return parts;
}

// The name in lower case with each separator as '|'.
std::string marked(const std::string& name) {
  std::string result;
  for (const char ch : name) {
    const bool separator = ch == '-' || ch == '_' || ch == ' ';
    result += separator ? '|' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return result;
}

// Whether `part` is in the marked name, separators allowed between its characters
// ("rtx4090" in "geforce|rtx|4090"), and not followed by a digit ("a10" is not in "a100").
bool contains(const std::string& marked_name, const std::string& part) {
  std::string pattern;
  for (const char ch : part) {
    if (!pattern.empty()) pattern += "\\|?";
    if (!std::isalnum(static_cast<unsigned char>(ch))) pattern += '\\';
    pattern += ch;
  }
  return std::regex_search(marked_name, std::regex(pattern + "(?![0-9])"));
}

}  // namespace

std::optional<std::string> device_mismatch(const ReportedDevice& device,
                                           const std::string& type_name) {
  const std::string reported = marked(device.name);
  const std::regex memory_part("([0-9]+)gb");
  for (const auto& part : parts_of(type_name)) {
    if (contains(reported, part)) continue;
    std::smatch size;
    if (std::regex_match(part, size, memory_part) && device.memory_bytes > 0) {
      const double expected = std::stod(size[1]) * kBytesPerGiB;
      if (std::abs(device.memory_bytes / expected - 1) <= kMemoryTolerance) continue;
      return fmt::format("{} has {:.1f} GiB, not the {} of a {}", device.name,
                         device.memory_bytes / kBytesPerGiB, size[0].str(), type_name);
    }
    return fmt::format("{} is not a {} (its name lacks '{}')", device.name, type_name, part);
  }
  return std::nullopt;
}

}  // namespace hyperpipe::cluster
