// How this process's heap treats freed tensors. Training and profiling allocate and free
// activations of the same sizes over and over; by default glibc hands large blocks back
// to the kernel at once and every new one pays its page faults (some 5% of a CPU run's
// iteration, 10-15% of a profiled op). Both keep them, as jemalloc or tcmalloc would, so
// the profile times ops as the run runs them.
#pragma once

namespace hyperpipe {

// Process-wide; call before the first tensor is allocated.
void keep_freed_memory();

}  // namespace hyperpipe
