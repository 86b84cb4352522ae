#include "hyperpipe/common/quantity.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

namespace hyperpipe {
namespace {

struct Unit {
  const char* name;
  double factor;
};

std::string trim(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

// Splits "25GB/s" into 25 and "GB/s". Returns nullopt unless the number is finite and
// positive (or zero where `allow_zero`) and the unit is one of `units` (or empty, which takes
// `default_factor`).
template <size_t N>
std::optional<double> parse_with_units(const std::string& raw, const std::array<Unit, N>& units,
                                       double default_factor, bool allow_zero = false) {
  const std::string text = trim(raw);
  if (text.empty()) return std::nullopt;
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value) || value < 0) return std::nullopt;
  if (value == 0 && !allow_zero) return std::nullopt;
  const std::string unit = trim(std::string(end));
  // The number must stay finite (and positive where zero is not allowed) once converted to
  // base units: "1e308 TB/s" overflows to inf.
  const auto converted = [&](double factor) -> std::optional<double> {
    const double base = value * factor;
    if (!std::isfinite(base) || (base == 0 && !allow_zero)) return std::nullopt;
    return base;
  };
  if (unit.empty()) return converted(default_factor);
  for (const auto& candidate : units) {
    if (unit == candidate.name) return converted(candidate.factor);
  }
  return std::nullopt;
}

constexpr double kBitsPerByte = 8.0;

constexpr std::array<Unit, 9> kByteUnits{{{"B", 1.0},
                                          {"KB", 1e3},
                                          {"MB", 1e6},
                                          {"GB", 1e9},
                                          {"TB", 1e12},
                                          {"KiB", kKiB},
                                          {"MiB", kMiB},
                                          {"GiB", kGiB},
                                          {"TiB", kGiB * 1024.0}}};

constexpr std::array<Unit, 13> kBandwidthUnits{{{"B/s", 1.0},
                                                {"KB/s", 1e3},
                                                {"MB/s", 1e6},
                                                {"GB/s", 1e9},
                                                {"TB/s", 1e12},
                                                {"Kbit/s", 1e3 / kBitsPerByte},
                                                {"Mbit/s", 1e6 / kBitsPerByte},
                                                {"Gbit/s", 1e9 / kBitsPerByte},
                                                {"Tbit/s", 1e12 / kBitsPerByte},
                                                {"Kb/s", 1e3 / kBitsPerByte},
                                                {"Mb/s", 1e6 / kBitsPerByte},
                                                {"Gb/s", 1e9 / kBitsPerByte},
                                                {"Tb/s", 1e12 / kBitsPerByte}}};

constexpr std::array<Unit, 4> kDurationUnits{
    {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}}};

constexpr std::array<Unit, 8> kFlopRateUnits{{{"FLOP/s", 1.0},
                                              {"GFLOP/s", 1e9},
                                              {"TFLOP/s", 1e12},
                                              {"PFLOP/s", 1e15},
                                              {"FLOPS", 1.0},
                                              {"GFLOPS", 1e9},
                                              {"TFLOPS", 1e12},
                                              {"PFLOPS", 1e15}}};

// Three significant digits: 1.23, 12.3, 123.
std::string three_digits(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude >= 100 || magnitude == 0) return fmt::format("{:.0f}", value);
  if (magnitude >= 10) return fmt::format("{:.1f}", value);
  return fmt::format("{:.2f}", value);
}

// Picks the largest unit not above the value from a list ordered small to large.
template <size_t N>
std::string scaled(double value, const std::array<std::pair<double, const char*>, N>& steps) {
  size_t chosen = 0;
  for (size_t i = 0; i < N; ++i) {
    if (std::fabs(value) >= steps[i].first) chosen = i;
  }
  return three_digits(value / steps[chosen].first) + " " + steps[chosen].second;
}

}  // namespace

std::optional<double> parse_bytes(const std::string& text) {
  return parse_with_units(text, kByteUnits, kGiB);
}

std::optional<double> parse_bandwidth(const std::string& text) {
  return parse_with_units(text, kBandwidthUnits, kGB);
}

std::optional<double> parse_duration(const std::string& text) {
  return parse_with_units(text, kDurationUnits, 1e-6, /*allow_zero=*/true);
}

std::optional<double> parse_flop_rate(const std::string& text) {
  return parse_with_units(text, kFlopRateUnits, kTera);
}

std::string format_bytes(double bytes) {
  static constexpr std::array<std::pair<double, const char*>, 5> kSteps{
      {{1.0, "B"}, {kKiB, "KiB"}, {kMiB, "MiB"}, {kGiB, "GiB"}, {kGiB * 1024.0, "TiB"}}};
  return scaled(bytes, kSteps);
}

std::string format_bandwidth(double bytes_per_second) {
  static constexpr std::array<std::pair<double, const char*>, 5> kSteps{
      {{1.0, "B/s"}, {1e3, "KB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}}};
  return scaled(bytes_per_second, kSteps);
}

std::string format_duration(double seconds) {
  static constexpr std::array<std::pair<double, const char*>, 4> kSteps{
      {{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1.0, "s"}}};
  return scaled(seconds, kSteps);
}

std::string format_flops(double flops) {
  static constexpr std::array<std::pair<double, const char*>, 6> kSteps{{{1.0, "FLOP"},
                                                                         {1e6, "MFLOP"},
                                                                         {1e9, "GFLOP"},
                                                                         {1e12, "TFLOP"},
                                                                         {1e15, "PFLOP"},
                                                                         {1e18, "EFLOP"}}};
  return scaled(flops, kSteps);
}

std::string format_flop_rate(double flops_per_s) {
  return format_flops(flops_per_s) + "/s";
}

std::string format_count(double count) {
  if (std::fabs(count) < 1e3) return fmt::format("{:.0f}", count);
  static constexpr std::array<std::pair<double, const char*>, 4> kSteps{
      {{1e3, "K"}, {1e6, "M"}, {1e9, "B"}, {1e12, "T"}}};
  return scaled(count, kSteps);
}

std::string noun_for(int64_t count, std::string_view singular, std::string_view plural) {
  if (count == 1) return std::string(singular);
  return plural.empty() ? std::string(singular) + "s" : std::string(plural);
}

std::string counted(int64_t count, std::string_view singular, std::string_view plural) {
  return std::to_string(count) + " " + noun_for(count, singular, plural);
}

}  // namespace hyperpipe
