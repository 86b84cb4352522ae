#include "hyperpipe/cluster/gpu_catalogue.h"

#include <cctype>

#include "hyperpipe/common/quantity.h"

namespace hyperpipe::cluster {
namespace {

GpuType make(const char* name, PeakFlops peak_tflops, double memory_gb, double bandwidth_gb_s,
             int compute_capability, int multiprocessors, const char* source) {
  GpuType type;
  type.compute_capability = compute_capability;
  type.multiprocessors = multiprocessors;
  type.name = name;
  type.peak = {peak_tflops.fp32 * kTera, peak_tflops.tf32 * kTera, peak_tflops.fp16 * kTera,
               peak_tflops.bf16 * kTera};
  // Datasheets give memory in GB but mean the GiB the driver reports (an "80GB" A100 has
  // 80 GiB of HBM), so GiB it is.
  type.memory_bytes = memory_gb * kGiB;
  type.memory_bandwidth = bandwidth_gb_s * kGB;
  type.source = source;
  return type;
}

std::vector<GpuType> build() {
  // Dense tensor-core peaks (no 2:4 sparsity) from NVIDIA's and AMD's datasheets; fp32 is
  // the non-tensor rate. Compute capabilities from NVIDIA's table of CUDA GPUs
  // (developer.nvidia.com/cuda-gpus); AMD's have none. Multiprocessor counts from the same
  // datasheets and architecture whitepapers (MI250X: compute units per GCD).
  return {
      make("A100-40GB", {19.5, 156, 312, 312}, 40, 1555, 8, 108, "NVIDIA A100 datasheet (SXM4)"),
      make("A100-80GB", {19.5, 156, 312, 312}, 80, 2039, 8, 108, "NVIDIA A100 datasheet (SXM4)"),
      make("H100-SXM", {66.9, 494.7, 989.4, 989.4}, 80, 3350, 9, 132,
           "NVIDIA H100 datasheet (SXM5)"),
      make("H200", {66.9, 494.7, 989.4, 989.4}, 141, 4800, 9, 132, "NVIDIA H200 datasheet (SXM)"),
      // The Hopper GPU of a Grace Hopper superchip, in its 96 GB HBM3 form.
      make("GH200-96GB", {66.9, 494.7, 989.4, 989.4}, 96, 4000, 9, 132,
           "NVIDIA GH200 Grace Hopper Superchip datasheet (96 GB HBM3)"),
      // Volta and Turing have no TF32 or bf16 tensor cores: those formats run at fp32 rate.
      make("V100-16GB", {15.7, 15.7, 125, 15.7}, 16, 900, 7, 80, "NVIDIA V100 datasheet (SXM2)"),
      make("V100-32GB", {15.7, 15.7, 125, 15.7}, 32, 900, 7, 80, "NVIDIA V100 datasheet (SXM2)"),
      make("T4", {8.1, 8.1, 65, 8.1}, 16, 320, 7, 40, "NVIDIA T4 datasheet"),
      make("L4", {30.3, 60, 121, 121}, 24, 300, 8, 58, "NVIDIA L4 datasheet"),
      make("A10G", {35, 35, 70, 70}, 24, 600, 8, 80,
           "AWS G5 / A10G figures as reported by Baseten 2023"),
      // GeForce cards: tensor rates with fp32 accumulate (what mixed-precision training uses).
      make("RTX3090", {35.6, 35.6, 71, 71}, 24, 936, 8, 82, "NVIDIA Ampere GA102 whitepaper"),
      make("RTX4090", {82.6, 82.6, 165.2, 165.2}, 24, 1008, 8, 128,
           "NVIDIA Ada Lovelace whitepaper"),
      // Turing (compute capability 7.5): fp16 tensor cores only. The GeForce 2080 Ti runs
      // fp16 products with fp32 accumulate at half the TITAN RTX's rate.
      make("RTX2080Ti", {13.4, 13.4, 53.8, 13.4}, 11, 616, 7, 68,
           "NVIDIA Turing architecture whitepaper (GeForce RTX 2080 Ti Founders Edition)"),
      make("TitanRTX", {16.3, 16.3, 130.5, 16.3}, 24, 672, 7, 72,
           "NVIDIA Turing architecture whitepaper (TITAN RTX)"),
      // One MI250X package holds two GCDs that software sees as two devices; this is one
      // GCD (half the package's 383 TFLOP/s fp16, 128 GB and 3.2 TB/s).
      make("MI250X", {47.9, 47.9, 191.5, 191.5}, 64, 1638.4, 0, 110,
           "AMD Instinct MI250X datasheet"),
  };
}

}  // namespace

std::string gpu_name_key(const std::string& name) {
  std::string result;
  for (const char ch : name) {
    if (ch == '-' || ch == '_' || ch == ' ') continue;
    result += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return result;
}

const std::vector<GpuType>& gpu_catalogue() {
  static const std::vector<GpuType> catalogue = build();
  return catalogue;
}

bool same_gpu_name(const std::string& a, const std::string& b) {
  return gpu_name_key(a) == gpu_name_key(b);
}

std::optional<GpuType> find_gpu_type(const std::string& name) {
  for (const auto& type : gpu_catalogue()) {
    if (same_gpu_name(type.name, name)) return type;
  }
  return std::nullopt;
}

}  // namespace hyperpipe::cluster
