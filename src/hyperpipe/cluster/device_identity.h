// Whether a device a process found is of the GPU type its stage was planned for: a
// launcher that put ranks on other nodes than the cluster file says would otherwise train
// a plan balanced for other devices, slowly or out of memory, without a word.
#pragma once

#include <optional>
#include <string>

namespace hyperpipe::cluster {

// What a process sees of its device (CUDA's name and total memory).
struct ReportedDevice {
  std::string name;  // "NVIDIA A100-SXM4-40GB"
  double memory_bytes = 0;
};

// Why `device` is not of the type named `type_name`, or nullopt when it is. The type's
// name is split at '-', '_' and ' ': each part must appear in the device's name (ignoring
// case and separators), except a memory part ("40GB"), which may instead match the
// device's memory within kMemoryTolerance (CUDA names do not always carry it).
std::optional<std::string> device_mismatch(const ReportedDevice& device,
                                           const std::string& type_name);

// How far a device's memory may be from its type's "NGB" and still be of it: datasheet
// sizes are rounded, and mean GB or GiB as the vendor pleases.
inline constexpr double kMemoryTolerance = 0.15;

}  // namespace hyperpipe::cluster
