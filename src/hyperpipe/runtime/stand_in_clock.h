// A CPU stand-in for a slower GPU type (cluster `speed` < 1) stretches each op to the
// host's work on it ÷ speed. The work is the CPU time the op took, not its wall time:
// on a shared host the wall time also holds waits for a free core, which the emulated
// device would not have and which stretching would multiply by 1 / speed.
#pragma once

#include <ATen/Parallel.h>

#include <ctime>

namespace hyperpipe::runtime {

// A running total of this process's compute, in seconds: the calling thread's CPU time
// with one intra-op thread (the autograd engine runs CPU backwards on the caller), else
// the process's CPU time spread over its intra-op threads.
inline double work_seconds() {
  const int threads = at::get_num_threads();
  timespec now{};
  clock_gettime(threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &now);
  constexpr double kNanosecond = 1e-9;
  return (static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * kNanosecond) /
         threads;
}

}  // namespace hyperpipe::runtime
