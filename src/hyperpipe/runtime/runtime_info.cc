#include "hyperpipe/runtime/runtime_info.h"

#include <torch/torch.h>
#include <torch/version.h>

namespace hyperpipe::runtime {

RuntimeInfo runtime_info() {
  RuntimeInfo info;
  info.libtorch_version = TORCH_VERSION;
#ifdef HYPERPIPE_WITH_CUDA
  info.built_with_cuda = true;
#endif
  info.cuda_devices =
      torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  return info;
}

}  // namespace hyperpipe::runtime
