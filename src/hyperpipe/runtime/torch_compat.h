// What differs between the libtorch versions the runtime builds against — Debian's 1.13
// on the development machines, PyTorch 2.x (CUDA, NCCL) on GPU machines — in one place,
// so a new version's difference goes here and the code that uses it stays the same.
#pragma once

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <type_traits>

namespace hyperpipe::runtime::compat {

// 1.13's process groups are c10d::ProcessGroup; from 2.0 the Gloo and NCCL ones are
// c10d::Backend (under a ProcessGroup facade). Both have the same send, recv, allreduce,
// allgather and barrier: hold them by whichever base this libtorch has.
using ProcessGroupBase =
    std::conditional_t<std::is_base_of_v<c10d::ProcessGroup, c10d::ProcessGroupGloo>,
                       c10d::ProcessGroup, c10d::Backend>;

// Gloo sums bf16 in libtorch 2.x; 1.13's fails them ("Invalid scalar type").
inline constexpr bool kGlooSumsBf16 = TORCH_VERSION_MAJOR >= 2;

}  // namespace hyperpipe::runtime::compat
