#include "hyperpipe/cluster/gpu_catalogue.h"

#include <gtest/gtest.h>

#include "hyperpipe/common/quantity.h"

namespace hyperpipe::cluster {
namespace {

TEST(GpuCatalogue, HasTheRequiredTypes) {
  for (const char* name :
       {"A100-40GB", "A100-80GB", "H100-SXM", "H200", "V100-16GB", "V100-32GB", "T4", "L4", "A10G",
        "RTX3090", "RTX4090", "MI250X", "GH200-96GB", "RTX2080Ti", "TitanRTX"}) {
    EXPECT_TRUE(find_gpu_type(name).has_value()) << name;
  }
}

TEST(GpuCatalogue, NamesMatchLoosely) {
  EXPECT_EQ(find_gpu_type("a100 80gb")->name, "A100-80GB");
  EXPECT_EQ(find_gpu_type("rtx-4090")->name, "RTX4090");
  EXPECT_EQ(find_gpu_type("Titan-RTX")->name, "TitanRTX");  // Sailor's spelling
  EXPECT_FALSE(find_gpu_type("A100").has_value());          // ambiguous: 40 or 80 GB
}

TEST(GpuCatalogue, DatasheetFigures) {
  const GpuType a100 = *find_gpu_type("A100-40GB");
  EXPECT_DOUBLE_EQ(a100.peak.fp16, 312e12);
  EXPECT_DOUBLE_EQ(a100.peak.tf32, 156e12);
  EXPECT_DOUBLE_EQ(a100.memory_bytes, 40 * kGiB);
  EXPECT_DOUBLE_EQ(a100.memory_bandwidth, 1555e9);
  EXPECT_DOUBLE_EQ(a100.peak_flops(model::DType::fp32, false), 19.5e12);
  EXPECT_DOUBLE_EQ(a100.peak_flops(model::DType::fp32, true), 156e12);
  // V100 has no bf16 tensor cores: bf16 runs at its fp32 rate.
  const GpuType v100 = *find_gpu_type("V100-32GB");
  EXPECT_DOUBLE_EQ(v100.peak_flops(model::DType::bf16, false), v100.peak.fp32);
}

TEST(GpuCatalogue, EveryTypeIsComplete) {
  for (const auto& type : gpu_catalogue()) {
    EXPECT_GT(type.memory_bytes, 0) << type.name;
    EXPECT_GT(type.memory_bandwidth, 0) << type.name;
    EXPECT_GE(type.peak.tf32, type.peak.fp32) << type.name;
    EXPECT_GE(type.peak.fp16, type.peak.fp32) << type.name;
    EXPECT_GT(type.peak.bf16, 0) << type.name;
    EXPECT_FALSE(type.source.empty()) << type.name;
    EXPECT_FALSE(type.speed.has_value()) << type.name;
  }
}

}  // namespace
}  // namespace hyperpipe::cluster
