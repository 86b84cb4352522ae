// What one op of a layer (model/layer_ops.h) costs on a GPU type without a profile
// (issue 39): a product at the fraction of the format's peak that cuBLAS reaches on its
// generation, after tile and wave quantization of its shape over the GPU's
// multiprocessors; fused attention at FlashAttention's fraction of the peak; memory-bound
// ops at the achieved DRAM bandwidth; and every kernel at least the host's dispatch time.
#pragma once

#include <cstdint>
#include <vector>

#include "hyperpipe/cluster/gpu_type.h"
#include "hyperpipe/model/layer_ops.h"
#include "hyperpipe/model/transformer_config.h"

namespace hyperpipe::cost {

// The launch of one kernel: the least any op costs (CUDA's launch latency, a few
// microseconds; NVIDIA's CUDA C++ Best Practices Guide, "Kernel launch overhead").
inline constexpr double kKernelLaunchSeconds = 5e-6;
// cuBLAS's common tile for large products (NVIDIA, "Matrix Multiplication Background
// User's Guide", §2.3 and §3): a product runs as tiles of its output, one per
// multiprocessor at a time, so a partial last tile or a partial last wave costs a whole one.
inline constexpr int64_t kProductTile = 128;

// Which of an op's limits set its time.
enum class OpBound { compute, memory, launch };
std::string_view to_string(OpBound bound);

struct OpTime {
  double seconds = 0;
  OpBound bound = OpBound::compute;
  double efficiency = 0;  // of the format's peak: products and fused attention
};

// The GPU type's generation as its CUDA compute capability names it (0: unknown).
enum class Generation { unknown, volta_turing, ampere_ada, hopper, blackwell };
Generation generation_of(const cluster::GpuType& type);

// Which units run a product: CUDA cores, or tensor cores on TF32 or 16-bit operands.
enum class ProductPath { cuda_cores, tf32, tensor16 };
// The path of `dtype` on `type`: where its peak for the format is no faster than fp32 (V100's
// bf16, Turing's TF32) the products run on CUDA cores.
ProductPath product_path(const cluster::GpuType& type, model::DType dtype, bool tf32);

// The fraction of the path's peak a large product reaches on the generation (cuBLAS).
double product_efficiency(Generation generation, ProductPath path);

// `memory_efficiency`: the share of the datasheet bandwidth streaming kernels reach
// (cost_options.h).
OpTime op_time(const model::LayerOp& op, const cluster::GpuType& type,
               const model::TransformerConfig& config, double memory_efficiency);

// The op-level estimate of a whole layer, pass by pass.
struct PassTimes {
  double forward = 0;
  double backward_input = 0;
  double backward_weight = 0;
};
PassTimes estimate_layer(const std::vector<model::LayerOp>& ops, const cluster::GpuType& type,
                         const model::TransformerConfig& config, double memory_efficiency);

}  // namespace hyperpipe::cost
