#include "hyperpipe/runtime/device_name.h"

#include <gtest/gtest.h>

#include "hyperpipe/common/error.h"
#include "test_files.h"

namespace hyperpipe::runtime {
namespace {

using hyperpipe::testing::error_message;

// Only cpu, cuda and cuda:N name a device; CUDA only where this libtorch and machine have it.
TEST(DeviceName, CpuCudaOrCudaN) {
  EXPECT_EQ(parse_device("cpu"), torch::Device(torch::kCPU));
  for (const std::string bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:99999999999"}) {
    EXPECT_NE(error_message<InputError>([&] { parse_device(bad); }).find("cpu, cuda or cuda:N"),
              std::string::npos)
        << bad;
  }
  if (!torch::cuda::is_available()) {
    EXPECT_NE(error_message<InputError>([&] { parse_device("cuda:0"); }).find("has no CUDA"),
              std::string::npos);
    return;
  }
  EXPECT_EQ(parse_device("cuda"), torch::Device(torch::kCUDA, 0));
  const auto count = static_cast<int>(torch::cuda::device_count());
  EXPECT_NE(error_message<InputError>([&] {
              parse_device("cuda:" + std::to_string(count));
            }).find("a CUDA device below"),
            std::string::npos);
}

}  // namespace
}  // namespace hyperpipe::runtime
