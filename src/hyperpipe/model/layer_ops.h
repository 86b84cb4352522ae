// A layer as the kernels that run it: each op of each pass with its shape, the FLOPs it
// computes and the bytes it moves on one device, so that an estimate can price each op by
// what bounds it (issue 39). The ops are those of a Megatron-style block on PyTorch: cuBLAS
// products (after the tensor-parallel split), attention either as two batched products
// around a fused scale-mask-softmax or as one fused (FlashAttention) kernel, and the
// memory-bound kernels between them. Tensor-parallel collectives are not ops here: the
// cost model adds them from the link model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hyperpipe/model/layer.h"

namespace hyperpipe::model {

// The pass an op belongs to: forward, the input gradient (B) or the weight gradient (W),
// as a zero-bubble schedule runs them apart.
enum class Pass { forward, backward_input, backward_weight };
std::string_view to_string(Pass pass);

enum class OpKind {
  product,          // batch × (m×k · k×n), one cuBLAS call
  fused_attention,  // scores, softmax and context in one kernel (FlashAttention)
  memory,           // element-wise or reduction: norms, activations, dropout, softmax, adds
};
std::string_view to_string(OpKind kind);

struct LayerOp {
  std::string name;
  Pass pass = Pass::forward;
  OpKind kind = OpKind::memory;
  // A product's shape; for fused attention m = n = the sequence, k = the head width.
  int64_t batch = 1;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  // FLOPs as Layer::flops counts them (2 per multiply-add, no causal saving): the ops of a
  // pass sum to the layer's FLOPs of that pass.
  double flops = 0;
  double bytes = 0;     // read and written in DRAM
  int kernels = 1;      // launches
  bool causal = false;  // fused attention: the kernel skips the masked half
};

// Every op of the layer's forward, B and W for one micro-batch on one device of `work.tp`
// (no recomputation: a rerun forward repeats the forward's ops). The embedding's input is
// token ids: its table's gradient is W's, as the profiler times it.
std::vector<LayerOp> layer_ops(const Layer& layer, const Workload& work);

}  // namespace hyperpipe::model
