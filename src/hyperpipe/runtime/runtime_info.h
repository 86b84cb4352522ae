// What this build of the runtime can use on this machine, for `--version`.
#pragma once

#include <string>

namespace hyperpipe::runtime {

struct RuntimeInfo {
  std::string libtorch_version;  // the one compiled against, "2.15.0"
  bool built_with_cuda = false;  // a CUDA libtorch, with the NCCL path compiled in
  std::string cuda_runtime;      // the CUDA runtime libtorch loaded, "13.2" (empty without)
  std::string nccl_version;      // the NCCL libtorch loaded, "2.30.7" (empty without)
  int cuda_devices = 0;          // visible now (0 without CUDA)
};

RuntimeInfo runtime_info();

}  // namespace hyperpipe::runtime
