#include "hyperpipe/runtime/memory_in_use.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef HYPERPIPE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace hyperpipe::runtime {

std::optional<double> bytes_in_use(const torch::Device& device) {
  if (device.is_cuda()) {
#ifdef HYPERPIPE_WITH_CUDA
    constexpr size_t kAggregate = 0;  // StatType::AGGREGATE: both pools
    return static_cast<double>(c10::cuda::CUDACachingAllocator::getDeviceStats(device.index())
                                   .allocated_bytes[kAggregate]
                                   .current);
#else
    return std::nullopt;
#endif
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  const struct mallinfo2 heap = mallinfo2();
  return static_cast<double>(heap.uordblks + heap.hblkhd);
#else
  return std::nullopt;
#endif
}

}  // namespace hyperpipe::runtime
