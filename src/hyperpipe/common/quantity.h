// Physical quantities as they appear in hand-written files ("80 GiB", "25 GB/s", "5 us")
// and as they are shown to people. Internally everything is SI base units: bytes, bytes/s,
// seconds, FLOP/s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hyperpipe {

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * kKiB;
inline constexpr double kGiB = 1024.0 * kMiB;
inline constexpr double kGB = 1e9;
inline constexpr double kTera = 1e12;

// Parses "<number> <unit>" (space optional). Each returns nullopt when the text is not a
// positive finite number (durations may be zero) with one of the listed units; a bare number takes
// the default unit.
//   bytes:     B, KB, MB, GB, TB (decimal), KiB, MiB, GiB, TiB; default GiB
//   bandwidth: B/s, KB/s, MB/s, GB/s, TB/s, Kbit/s, Mbit/s, Gbit/s, Tbit/s (also Gb/s etc.);
//              default GB/s; result in bytes per second
//   duration:  ns, us, ms, s; default us
//   flop rate: FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s (also TFLOPS); default TFLOP/s
std::optional<double> parse_bytes(const std::string& text);
std::optional<double> parse_bandwidth(const std::string& text);
std::optional<double> parse_duration(const std::string& text);
std::optional<double> parse_flop_rate(const std::string& text);

// Human-readable forms with three significant digits: "1.50 GiB", "312 TFLOP/s", "4.20 ms".
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_second);
std::string format_duration(double seconds);
std::string format_flops(double flops);            // an amount: "5.41 TFLOP"
std::string format_flop_rate(double flops_per_s);  // a rate: "312 TFLOP/s"
std::string format_count(double count);            // "6.74 B", "124 M", "768"
// A count with its noun: "1 stage", "4 stages"; `plural` where adding an s is wrong
// ("1 process", "3 processes").
std::string counted(int64_t count, std::string_view singular, std::string_view plural = {});
// The noun alone, for a count given otherwise ("device 3", "devices 0-3").
std::string noun_for(int64_t count, std::string_view singular, std::string_view plural = {});

}  // namespace hyperpipe
