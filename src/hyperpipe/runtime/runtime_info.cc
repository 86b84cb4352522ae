#include "hyperpipe/runtime/runtime_info.h"

#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>

#ifdef HYPERPIPE_WITH_CUDA
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/cuda/nccl.h>
#endif

namespace hyperpipe::runtime {

RuntimeInfo runtime_info() {
  RuntimeInfo info;
  info.libtorch_version = TORCH_VERSION;
#ifdef HYPERPIPE_WITH_CUDA
  info.built_with_cuda = true;
  // Both answer without a GPU: the versions of the libraries loaded, not of a device.
  // CUDA writes major·1000 + minor·10; libtorch packs NCCL's as 16-bit fields, major in
  // the high 32 bits (torch.cuda.nccl.version() unpacks it so).
  constexpr uint64_t kField = 0xffff;
  const long cuda = at::detail::getCUDAHooks().versionCUDART();
  info.cuda_runtime = fmt::format("{}.{}", cuda / 1000, cuda % 1000 / 10);
  const uint64_t nccl = torch::cuda::nccl::version();
  info.nccl_version = fmt::format("{}.{}.{}", nccl >> 32, (nccl >> 16) & kField, nccl & kField);
#endif
  info.cuda_devices =
      torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  return info;
}

}  // namespace hyperpipe::runtime
