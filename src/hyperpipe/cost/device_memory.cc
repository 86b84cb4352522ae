#include "hyperpipe/cost/device_memory.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "hyperpipe/common/quantity.h"

namespace hyperpipe::cost {
namespace {

// The CUDA context of a PyTorch process after its first kernel, as nvidia-smi counts it:
// 287,047,680 bytes with CUDA_MODULE_LOADING=LAZY, 666,632,192 eagerly (PyTorch pull
// request #86509, "Sets CUDA_MODULE_LOADING to LAZY when not set by the user", 2022, which
// made lazy loading PyTorch's default; CUDA 12.2 made it the driver's on Linux).
constexpr double kCudaContextLazyBytes = 287'047'680;
constexpr double kCudaContextEagerBytes = 666'632'192;

// NCCL's buffers per connection and channel, one per protocol (NCCL 2.2x src/init.cc):
// DEFAULT_BUFFSIZE 4 MiB (Simple); DEFAULT_LL_BUFFSIZE = 8 lines/thread × 512 threads ×
// 8 steps × 16 B = 512 KiB; DEFAULT_LL128_BUFFSIZE = 120 elements/thread × 640 threads ×
// 8 steps × 8 B = 4,915,200 B.
constexpr double kNcclSimpleBuffer = 4 * kMiB;
constexpr double kNcclLlBuffer = 8.0 * 512 * 8 * 16;
constexpr double kNcclLl128Buffer = 120.0 * 640 * 8 * 8;
constexpr double kNcclConnectionBytes = kNcclSimpleBuffer + kNcclLlBuffer + kNcclLl128Buffer;
// A ring keeps one receiving connection per channel on each rank, whatever the group's size
// (NVIDIA/nccl issue #864, S. Jeaugey: "Ring uses a limited amount of memory as it only
// has 2 connections regardless of the scale"; memory "linearly tied to the number of
// channels"). NCCL opens at most MAXCHANNELS = 32 (src/include/device.h); NVLink systems
// use up to that many, so a communicator is costed at the most.
constexpr double kNcclMaxChannels = 32;
// Point-to-point exchanges use the Simple protocol alone, in chunks of
// NCCL_P2P_NVL_CHUNKSIZE = 512 KiB over NCCL_STEPS = 8 slots per channel, over
// NCCL_NCHANNELS_PER_NET_PEER = 2 channels per peer (NCCL's environment-variable
// documentation), once for sending and once for receiving.
constexpr double kNcclP2pPeerBytes = 512 * kKiB * 8 * 2 * 2;

// cuBLAS's workspace, which PyTorch allocates through its caching allocator per handle and
// stream: CUBLAS_WORKSPACE_CONFIG's default ":4096:8" (32 MiB) on Hopper and later,
// ":4096:2:16:8" (8 MiB + 128 KiB) before (aten/src/ATen/cuda/CublasHandlePool.cpp,
// getChosenWorkspaceSize, PyTorch 2.x; 32 MiB on ROCm). A type of unknown generation is
// costed at the larger.
constexpr double kCublasWorkspaceBytes = 32 * kMiB;
constexpr double kCublasWorkspaceBeforeHopperBytes = 8 * kMiB + 128 * kKiB;
constexpr int kHopperComputeCapability = 9;

// The caching allocator's reserved bytes over the allocated ones at the peak. Its rounding
// (c10/cuda/CUDACachingAllocator.cpp: blocks of at least 512 B, allocations over 1 MiB in
// 2 MiB steps, 20 MiB segments for 1-10 MiB requests) wastes under one rounding step per
// live tensor; free blocks it cannot reuse add more. Without a device to measure, the
// default is the rounding alone on tensors of the sizes a transformer's saved activations
// have (tens of MiB): about 2 %. `profile --memory` measures the ratio over real steps.
constexpr double kDefaultAllocatorRatio = 1.02;
// The same for torchtitan's FSDP step with one stage (per-op selective checkpointing, the
// loss in fp32), whose freed vocabulary-size and activation blocks the next requests
// cannot always reuse: the median over six shapes of PyTorch's caching-allocator policy
// replayed on PyTorch's own allocation trace of that step (1.081 to 1.156), the runs
// published by torchtitan not among them:
//   ~/.cache/hyperpipe/venv/bin/python bench/memory_validation/allocator_replay.py --sweep
constexpr double kTorchtitanFsdpAllocatorRatio = 1.111;

std::array<FrameworkBuffers, 4> make_frameworks() {
  std::array<FrameworkBuffers, 4> t{};
  // HyperPipe's runtime: the main grad is each weight's own .grad (runtime/
  // mixed_precision.h), the loss runs in the model's type (runtime/stage_module.cc), a tied
  // head has a weight of its own also beside the embedding (runtime/layers.cc, HeadLayer).
  t[0].runtime = "hyperpipe";
  t[0].separate_tied_head = true;
  t[0].source = "runtime/mixed_precision.h, runtime/stage_module.cc";
  // Megatron-LM core_r0.13: DistributedDataParallel's contiguous grad buffer is the main
  // grad, fp32 unless --grad-reduce-in-bf16 (megatron/core/distributed/
  // param_and_grad_buffer.py); the distributed optimizer keeps 4 + 8 bytes per parameter
  // 1/dp each (docs/source/distrib_optimizer.md); the loss upcasts the logits
  // (megatron/core/models/common/language_module/language_module.py,
  // compute_language_model_loss) and works in place on the copy (megatron/core/
  // tensor_parallel/cross_entropy.py: exp_ and div_ on the float logits it saves); one
  // stage's output layer shares the embedding's weight (shared_embedding_or_output_weight);
  // a sent output is freed at once (schedules.py, deallocate_output_tensor).
  t[1].runtime = "megatron";
  t[1].main_grads_in_reduce_dtype = true;
  t[1].fp32_loss = true;
  t[1].loss_in_place = true;
  t[1].source = "Megatron-LM core_r0.13: param_and_grad_buffer.py, language_module.py";
  // DeepSpeed 0.16 with bf16 and its pipeline: BF16_Optimizer keeps the 16-bit .grad of
  // every parameter and an fp32 flat accumulation of them (deepspeed/runtime/
  // bf16_optimizer.py, fp32_groups_gradients_flat); the pipeline engine keeps each
  // micro-batch's outputs in pipe_buffers until its backward (deepspeed/runtime/pipe/
  // engine.py, _exec_forward_pass); Megatron-DeepSpeed's loss is Megatron-LM's
  // vocab-parallel cross-entropy; a TiedLayerSpec is one module within a stage.
  t[2].runtime = "deepspeed";
  t[2].half_grad_bytes = 2;
  t[2].keeps_stage_outputs = true;
  t[2].fp32_loss = true;
  t[2].loss_in_place = true;
  t[2].source = "DeepSpeed 0.16: runtime/bf16_optimizer.py, runtime/pipe/engine.py";
  // torchtitan on FSDP2 (PyTorch 2.7): with pipelining the unsharded parameters stay
  // between micro-batches and the gradients accumulate unsharded in the reduce type
  // (torch/distributed/fsdp/_fully_shard/_fsdp_param.py, unsharded_accumulated_grad);
  // the reduce-scatter leaves a sharded copy beside them; the loss upcasts the logits and
  // hands the copy to F.cross_entropy, whose log-softmax is a tensor of its own
  // (torchtitan/components/loss.py, cross_entropy_loss).
  // Its cross-entropy's backward (log_softmax_backward_data) writes a new tensor, and its
  // train step deletes the output before loss.backward() (train.py, "del pred") where there
  // is no pipeline. Its FSDP (torchtitan/distributed/fsdp.py, apply_fsdp_to_decoder) shards
  // the embedding, each block, and the final norm with the output layer as units; without
  // pipelining all but that last unit reshard after forward, and optimizer.zero_grad() sets
  // the gradients to None. Its `selective` is SelectiveAC, the per-op policy
  // (torchtitan/distributed/activation_checkpoint.py). PyTorch's own FSDPMemTracker agrees
  // (bench/memory_validation/fsdp_oracle.py).
  t[3].runtime = "torchtitan";
  t[3].sharded_grad_copy = true;
  t[3].fp32_loss = true;
  t[3].loss_backward_out_of_place = true;
  t[3].frees_logits_before_backward = true;
  t[3].fully_shards = true;
  // FSDP2 allocates all-gather outputs on its copy-in stream and reduce-scatter outputs on
  // its reduce-scatter stream (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py,
  // foreach_all_gather and foreach_reduce).
  t[3].fsdp_stream_pools = true;
  t[3].fsdp_allocator_ratio = kTorchtitanFsdpAllocatorRatio;
  t[3].selective_rule = model::SelectiveRule::alternate_products;
  t[3].source =
      "torchtitan 2025 / PyTorch 2.7: _fsdp_param.py, components/loss.py, distributed/fsdp.py, "
      "distributed/activation_checkpoint.py";
  return t;
}

}  // namespace

const FrameworkBuffers& framework_buffers(std::string_view runtime) {
  static const std::array<FrameworkBuffers, 4> table = make_frameworks();
  for (const auto& framework : table) {
    if (framework.runtime == runtime) return framework;
  }
  throw std::invalid_argument(fmt::format("no memory facts for runtime '{}'", runtime));
}

DeviceOverheads gpu_defaults(bool lazy_loading, int compute_capability) {
  DeviceOverheads d;
  d.context = lazy_loading ? kCudaContextLazyBytes : kCudaContextEagerBytes;
  d.collective_communicator = kNcclMaxChannels * kNcclConnectionBytes;
  d.p2p_peer = kNcclP2pPeerBytes;
  const bool before_hopper =
      compute_capability > 0 && compute_capability < kHopperComputeCapability;
  d.workspace = before_hopper ? kCublasWorkspaceBeforeHopperBytes : kCublasWorkspaceBytes;
  d.allocator_ratio = kDefaultAllocatorRatio;
  d.source = "defaults (src/hyperpipe/cost/device_memory.cc)";
  return d;
}

DeviceOverheads stand_in_defaults() {
  DeviceOverheads d;
  d.source = "CPU stand-in, unmeasured";
  return d;
}

}  // namespace hyperpipe::cost
