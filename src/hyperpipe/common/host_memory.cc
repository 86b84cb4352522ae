#include "hyperpipe/common/host_memory.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace hyperpipe {

void keep_freed_memory() {
#ifdef __GLIBC__
  constexpr int kMmapThreshold = 32 << 20;  // glibc's largest: blocks below come from the heap
  constexpr int kTrimThreshold = 1 << 30;   // return heap memory only past 1 GiB free
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
#endif
}

}  // namespace hyperpipe
