#include "hyperpipe/cluster/device_identity.h"

#include <gtest/gtest.h>

namespace hyperpipe::cluster {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Names as CUDA reports them (cudaDeviceProp::name) on the catalogue's types.
TEST(DeviceIdentity, CudaNamesOfEachTypeMatchIt) {
  const struct {
    const char* reported;
    double gib;
    const char* type;
  } cases[] = {
      {"NVIDIA A100-SXM4-40GB", 39.4, "A100-40GB"},
      {"NVIDIA A100-PCIE-40GB", 39.4, "A100-40GB"},
      {"NVIDIA A100-SXM4-80GB", 79.2, "A100-80GB"},
      {"NVIDIA A100 80GB PCIe", 79.2, "A100-80GB"},
      {"Tesla V100-SXM2-16GB", 15.8, "V100-16GB"},
      {"Tesla V100-PCIE-32GB", 31.7, "V100-32GB"},
      {"Tesla T4", 14.6, "T4"},
      {"NVIDIA H100 80GB HBM3", 79.1, "H100-80GB"},
      {"NVIDIA H100 PCIe", 79.6, "H100-80GB"},  // no size in the name: the memory says it
      {"NVIDIA H200", 139.8, "H200"},
      {"NVIDIA GeForce RTX 4090", 23.6, "RTX4090"},
      {"AMD Instinct MI250X", 64.0, "MI250X"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(device_mismatch({c.reported, c.gib * kGiB}, c.type), std::nullopt)
        << c.reported << " as " << c.type;
  }
}

TEST(DeviceIdentity, AnotherModelOrSizeIsNamed) {
  EXPECT_EQ(device_mismatch({"Tesla T4", 14.6 * kGiB}, "V100-16GB"),
            "Tesla T4 is not a V100-16GB (its name lacks 'v100')");
  EXPECT_EQ(device_mismatch({"NVIDIA A100-SXM4-80GB", 79.2 * kGiB}, "A100-40GB"),
            "NVIDIA A100-SXM4-80GB has 79.2 GiB, not the 40gb of a A100-40GB");
  EXPECT_EQ(device_mismatch({"NVIDIA H100 PCIe", 79.6 * kGiB}, "H100-40GB"),
            "NVIDIA H100 PCIe has 79.6 GiB, not the 40gb of a H100-40GB");
  // Parts are whole: an A10 is no A100, nor an A100 an A10.
  EXPECT_NE(device_mismatch({"NVIDIA A10", 22 * kGiB}, "A100-40GB"), std::nullopt);
  EXPECT_EQ(device_mismatch({"NVIDIA A100-SXM4-40GB", 39.4 * kGiB}, "A10"),
            "NVIDIA A100-SXM4-40GB is not a A10 (its name lacks 'a10')");
  EXPECT_EQ(device_mismatch({"NVIDIA A10", 22 * kGiB}, "A10"), std::nullopt);
}

}  // namespace
}  // namespace hyperpipe::cluster
