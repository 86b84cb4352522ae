// What this build of the runtime can use on this machine, for `--version`.
#pragma once

#include <string>

namespace hyperpipe::runtime {

struct RuntimeInfo {
  std::string libtorch_version;  // the one compiled against, "1.13.0"
  bool built_with_cuda = false;  // a CUDA libtorch, with the NCCL path compiled in
  int cuda_devices = 0;          // visible now (0 without CUDA)
};

RuntimeInfo runtime_info();

}  // namespace hyperpipe::runtime
