// The knobs of the analytic cost model, each with its default and where it comes from.
#pragma once

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/cost/device_memory.h"
#include "hyperpipe/model/dtype.h"

namespace hyperpipe::cost {

// Fraction of peak tensor-core FLOP/s that transformer matrix products reach in training.
// Narayanan et al., SC'21, Table 1: 138-163 TFLOP/s per A100 (44-52% of 312) end to end
// for GPT models of 1.7B-1T parameters; the layer kernels alone run a little faster.
inline constexpr double kDefaultMatmulEfficiency = 0.5;

// Fraction of datasheet DRAM bandwidth reached by streaming (element-wise) kernels.
// BabelStream "triad" on A100-40GB: ~1.35 of 1.555 TB/s (Deakin et al., 2022), i.e. ~0.87;
// we round down for the many small kernels of a layer.
inline constexpr double kDefaultMemoryEfficiency = 0.8;

// Fraction of a link's nominal bandwidth that NCCL/Gloo transfers reach: nccl-tests bus
// bandwidth of ~230-240 GB/s on A100 NVLink (300 GB/s nominal) and ~90% on InfiniBand.
inline constexpr double kDefaultLinkEfficiency = 0.8;

// The share of each device's memory a plan leaves unused: the device-level terms
// (device_memory.h) are each a default until `profile --memory` measures them, and a
// prediction of a device's peak errs by a few percent (docs/guide/memory.md's validation
// measures ours): a plan within 5 % of the memory is a plan at risk.
inline constexpr double kDefaultMemoryMargin = 0.05;

// How a layer without a profile is estimated: op by op (op_estimate.h: each kernel by its
// shape and the GPU generation; docs/guide/performance.md, "Estimates without a profile", validates
// it on Sailor's public GPU measurements), or the roofline it replaced (every product at one share
// of the peak, matmul_efficiency, the memory-bound rest at the bandwidth), kept for comparison.
enum class Estimator { ops, roofline };

inline const char* to_string(Estimator estimator) {
  return estimator == Estimator::ops ? "ops" : "roofline";
}

struct CostOptions {
  double matmul_efficiency = kDefaultMatmulEfficiency;
  Estimator estimator = Estimator::ops;
  double memory_efficiency = kDefaultMemoryEfficiency;
  double link_efficiency = kDefaultLinkEfficiency;
  // The share of a device's memory no plan may use (kDefaultMemoryMargin).
  double memory_margin = kDefaultMemoryMargin;
  // The framework that runs the plan, for its buffers (the plan's `runtime`).
  FrameworkBuffers framework = framework_buffers("hyperpipe");
  // CUDA_MODULE_LOADING=LAZY, PyTorch's default since 1.13: kernels load on first use.
  bool lazy_module_loading = true;
  // Megatron sequence parallelism whenever tp > 1 (Korthikanti et al., 2022): the norms'
  // and residuals' activations split over the shards too. Off unless asked for (`plan
  // --sequence-parallel`, or a plan's `sequence_parallel`, which the runtime then runs).
  bool sequence_parallel = false;
  // The type a 16-bit model's data-parallel gradient all-reduce moves its fp32 main grads
  // in (the plan's gradient_reduce_dtype): fp32 as Megatron-LM by default.
  model::DType gradient_reduce_dtype = model::DType::fp32;
  // The optimizer state sharded over each stage's data-parallel ranks (ZeRO stage 1,
  // Rajbhandari et al., SC'20; Megatron-LM's --use-distributed-optimizer): each rank keeps
  // and steps 1/dp of the fp32 master weights and Adam moments; the gradients are
  // reduce-scattered and the updated weights all-gathered, which in a ring move what one
  // all-reduce of each would in half its steps. Megatron-LM's docs/source/
  // distrib_optimizer.md: 6 + 12/dp bytes per bf16 parameter against 18.
  bool shard_optimizer = false;
  // How a sharded optimizer's gradients are summed: reduce-scattered, each rank receiving
  // only its share (Megatron-LM, DeepSpeed, torchtitan), or all-reduced whole with each
  // rank stepping its share (HyperPipe's runtime, whose stages may differ in dp: the tied
  // embedding's and the replicas' sums then need every gradient whole; ZeRO's first
  // implementation, DeepSpeed's stage 1 of 2020, did the same). Either way the updated
  // weights are all-gathered after the step.
  bool reduce_scatter_gradients = true;
};

}  // namespace hyperpipe::cost
