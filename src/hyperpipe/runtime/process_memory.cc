#include "hyperpipe/runtime/process_memory.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#ifdef HYPERPIPE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace hyperpipe::runtime {
namespace {

constexpr double kKibibyte = 1024;

// A "Name:   123 kB" line of /proc/self/status.
std::optional<double> status_kilobytes(const std::string& name) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(name + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(name.size() + 1));
    double kilobytes = 0;
    if (fields >> kilobytes) return kilobytes * kKibibyte;
  }
  return std::nullopt;
}

#ifdef HYPERPIPE_WITH_CUDA
constexpr size_t kAggregate = 0;  // StatType::AGGREGATE: both pools
#endif

}  // namespace

std::optional<double> resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  if (!(statm >> size >> resident)) return std::nullopt;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

std::optional<double> peak_resident_bytes() {
  return status_kilobytes("VmHWM");
}

bool reset_peak_resident() {
  // Writing 5 to clear_refs resets the high-water mark to the present resident set.
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

std::optional<double> device_used_bytes(const torch::Device& device) {
  if (!device.is_cuda()) return resident_bytes();
#ifdef HYPERPIPE_WITH_CUDA
  const c10::cuda::CUDAGuard guard(device.index());
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
  return static_cast<double>(total - free);
#else
  return std::nullopt;
#endif
}

std::optional<AllocatorReserve> allocator_reserve(const torch::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
#ifdef HYPERPIPE_WITH_CUDA
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  return AllocatorReserve{static_cast<double>(stats.reserved_bytes[kAggregate].current),
                          static_cast<double>(stats.reserved_bytes[kAggregate].peak),
                          static_cast<double>(stats.allocated_bytes[kAggregate].peak)};
#else
  return std::nullopt;
#endif
}

void reset_allocator_peaks(const torch::Device& device) {
#ifdef HYPERPIPE_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#else
  (void)device;
#endif
}

void reset_device_peak(const torch::Device& device) {
  if (device.is_cuda()) {
    reset_allocator_peaks(device);
  } else {
    reset_peak_resident();
  }
}

std::optional<double> device_peak_bytes(const torch::Device& device) {
  if (!device.is_cuda()) return peak_resident_bytes();
  const auto reserve = allocator_reserve(device);
  const auto used = device_used_bytes(device);
  if (!reserve || !used) return std::nullopt;
  return reserve->peak + (*used - reserve->current);
}

}  // namespace hyperpipe::runtime
