// Mixed-precision training as Megatron-LM does it (its Float16Module and fp32 optimizer;
// Micikevicius et al., "Mixed Precision Training", ICLR 2018): the model's weights and
// activations in bf16 or fp16, an fp32 master copy of every weight that AdamW updates
// (its moments in fp32 too), and every weight's gradient accumulated over the micro-
// batches in an fp32 main-grad buffer. The main grad is the weight's own .grad(): autograd
// adds each micro-batch's 16-bit gradient into it in place, in fp32, so the all-reduces,
// the tied embedding's sum, the norm and the clipping all see fp32 without knowing.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "hyperpipe/model/dtype.h"

namespace hyperpipe::runtime {

// The tensor type of a model dtype.
torch::ScalarType scalar_type_of(model::DType dtype);

// Whether weights of this type train with fp32 masters (bf16, fp16).
bool needs_master_weights(torch::ScalarType type);

// A range [begin, end) of a tensor's elements, flattened.
struct FlatRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const FlatRange& other) const { return begin == other.begin && end == other.end; }
};

class MasterWeights {
 public:
  // Keeps each parameter's values now (fp32) as its master, then turns the parameter
  // itself into `type` in place (the same tensor, so modules and optimizers that hold it
  // see the change), and gives it its fp32 main grad. With `kept` (one range per
  // parameter), a sharded optimizer's: only those elements have a master, flat.
  MasterWeights(std::vector<torch::Tensor> parameters, torch::ScalarType type,
                std::vector<FlatRange> kept = {});

  // What AdamW steps: the masters (those not empty), whose gradients are the main grads.
  const std::vector<torch::Tensor>& masters() const { return stepped_; }
  // The master of one of the parameters given (by identity): shaped as it, or flat and
  // possibly empty where only a range is kept.
  const torch::Tensor& master_of(const torch::Tensor& parameter) const;

  // Before a step's first backward: every main grad zero and in place as its parameter's
  // gradient (a step may have replaced or reset it).
  void zero_main_grads();
  // After AdamW's step: the masters rounded into the parameters.
  void copy_to_model();
  // Bytes of the masters and the main grads.
  double bytes() const;

 private:
  // The master's range of the parameter's elements and the main grad's view of it.
  torch::Tensor kept_part(const torch::Tensor& whole, size_t i) const;

  std::vector<torch::Tensor> parameters_;
  std::vector<FlatRange> kept_;  // empty: every parameter whole
  std::vector<torch::Tensor> masters_;
  std::vector<torch::Tensor> stepped_;  // the masters not empty
  std::vector<torch::Tensor> main_grads_;
};

// Fails with InputError, naming `field`, where libtorch on `device` lacks a kernel a
// run in `type` needs (a device or build without some 16-bit op): a small forward and
// backward of each kind of op the layers use, run once.
void require_kernels_for(torch::ScalarType type, const torch::Device& device,
                         const std::string& field);

}  // namespace hyperpipe::runtime
