// What a device holds for a training process besides the model's own tensors, term by
// term: the framework's buffers, the loss's logits at vocabulary size, library workspaces,
// the caching allocator's overhead, the communicators the plan opens and the CUDA context
// with its kernel images. Each default names its source beside it (device_memory.cc);
// `profile --memory` measures a device's own and they replace the defaults.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hyperpipe/model/layer.h"

namespace hyperpipe::cost {

// How a framework keeps its gradients and exchanges, as far as memory goes. The weights,
// the fp32 main grads and the optimizer state (master, moments; 1/dp of them sharded) are
// the cost model's own count; these are what a framework holds on top.
struct FrameworkBuffers {
  std::string_view runtime;  // "hyperpipe", "megatron", "deepspeed", "torchtitan"
  // Per parameter, a 16-bit model's 16-bit .grad beside its fp32 accumulation buffer.
  double half_grad_bytes = 0;
  // With the optimizer sharded, a sharded copy of the gradients (1/dp per parameter, in
  // the main grads' type) beside the whole ones.
  bool sharded_grad_copy = false;
  // The main-grad buffer is in the plan's gradient-reduction type (bf16 halves it).
  bool main_grads_in_reduce_dtype = false;
  // Each micro-batch's stage output is kept until its backward.
  bool keeps_stage_outputs = false;
  // The loss upcasts 16-bit logits to fp32 before the softmax.
  bool fp32_loss = false;
  // The loss works in place on its fp32 copy of the logits, which becomes the softmax it
  // keeps for the backward (Megatron-LM's vocab-parallel cross-entropy); otherwise the
  // softmax is a tensor of its own beside the copy while the loss runs.
  bool loss_in_place = false;
  // The loss's backward is out of place: it holds the fp32 softmax it kept, the gradient
  // coming into it and the one it makes, three tensors at vocabulary size at once.
  bool loss_backward_out_of_place = false;
  // The training step drops the model's output before the backward when the model is one
  // stage; a pipeline schedule keeps each stage's output until its backward.
  bool frees_logits_before_backward = false;
  // Sharding the optimizer (FSDP) shards the weights and gradients too. A stage alone in
  // its pipeline gathers each unit's weights for its forward and frees them after, all but
  // the head's unit, kept for the backward; the gradients come sharded while the backward
  // frees activations, and the step before left none, so at the backward's start (the
  // peak) no gradient is held. With pipelining every count stays as without this.
  bool fully_shards = false;
  // Where it fully shards one stage: the caching allocator's pools of FSDP's side streams,
  // reserved beside the default stream's (the reduce-scatter's outputs, which become the
  // sharded gradients, and the all-gather's outputs, one per unit size), and the default
  // stream's reserved over allocated bytes in place of the device's ratio (0: the device's).
  bool fsdp_stream_pools = false;
  double fsdp_allocator_ratio = 0;
  // What `recompute: selective` keeps for the backward.
  model::SelectiveRule selective_rule = model::SelectiveRule::attention_core;
  // A stage holding both the embedding and a tied head keeps the head's weight as a
  // tensor of its own (summed with the embedding's gradient), not the same tensor.
  bool separate_tied_head = false;
  std::string_view source;
};

// Throws std::invalid_argument for a runtime not listed above.
const FrameworkBuffers& framework_buffers(std::string_view runtime);

// What one device of a kind holds outside the model for any plan: defaults for a GPU or a
// CPU stand-in, or what `profile --memory` measured on it.
struct DeviceOverheads {
  double context = 0;  // CUDA context and kernel images (a stand-in: its process's own)
  // One collective communicator's buffers (a tensor-, data-parallel, tied or world group).
  double collective_communicator = 0;
  double p2p_peer = 0;         // point-to-point buffers with one pipeline neighbour
  double workspace = 0;        // cuBLAS's workspace, through the allocator
  double allocator_ratio = 1;  // the caching allocator's reserved over allocated bytes
  std::string source;          // "defaults" or where they were measured
};

// A GPU's defaults; `lazy_loading` as CUDA_MODULE_LOADING=LAZY (PyTorch's default);
// `compute_capability` the major version (0 unknown), which sets cuBLAS's workspace.
DeviceOverheads gpu_defaults(bool lazy_loading = true, int compute_capability = 0);
// A CPU process standing in for a GPU type: what the model's tensors do not account for
// is the process's own, which `profile --memory` measures; unmeasured, none.
DeviceOverheads stand_in_defaults();

// The groups one device of a stage talks in, each a communicator of its own.
struct Communicators {
  int collective = 0;  // tensor-, data-parallel, tied-embedding and world groups
  int p2p_peers = 0;   // pipeline neighbours
};

// One named term of a device's peak, with where its figure comes from.
struct MemoryTerm {
  std::string name;  // as reports and JSON name it: "weights", "communicators", …
  double bytes = 0;
  std::string source;
};

}  // namespace hyperpipe::cost
