// What this process holds of a device as the system sees it, beyond what its allocator
// hands out: on CPU the resident set (RSS) and its high-water mark, on CUDA the device's
// used memory and the caching allocator's reserve. `profile --memory` measures the
// device-level terms of the memory model with these, and a run reports its peak.
#pragma once

#include <torch/torch.h>

#include <optional>

namespace hyperpipe::runtime {

// This process's resident set (/proc/self/statm), in bytes; nullopt where unreadable.
std::optional<double> resident_bytes();
// Its high-water mark since the process started or since reset_peak_resident().
std::optional<double> peak_resident_bytes();
// Starts the high-water mark afresh (Linux: clear_refs 5); false where it cannot.
bool reset_peak_resident();

// What the device holds as used: CUDA's used bytes of the whole device (every process's;
// measure on an idle GPU), or this process's resident set on CPU.
std::optional<double> device_used_bytes(const torch::Device& device);

// The caching allocator's reserved bytes on a CUDA device (now and peak since the last
// reset), nullopt on CPU, where glibc's heap is counted by resident_bytes().
struct AllocatorReserve {
  double current = 0;
  double peak = 0;
  double allocated_peak = 0;
};
std::optional<AllocatorReserve> allocator_reserve(const torch::Device& device);
void reset_allocator_peaks(const torch::Device& device);

// What the device held at its peak since reset_device_peak(), as the system sees it: on
// CPU the process's peak resident set; on CUDA the allocator's peak reserve and what lies
// outside the allocator now (the context, NCCL's buffers). nullopt where unreadable.
void reset_device_peak(const torch::Device& device);
std::optional<double> device_peak_bytes(const torch::Device& device);

}  // namespace hyperpipe::runtime
