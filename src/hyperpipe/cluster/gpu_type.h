// A kind of accelerator and what its datasheet promises.
#pragma once

#include <optional>
#include <string>

#include "hyperpipe/model/dtype.h"

namespace hyperpipe::cluster {

// Peak dense (no sparsity) FLOP/s per number format. tf32 is the rate of fp32 matrix
// products on tensor cores; where a GPU has no tensor-core path for a format the peak is
// the rate it really runs at (V100's bf16 runs at its fp32 rate).
struct PeakFlops {
  double fp32 = 0;
  double tf32 = 0;
  double fp16 = 0;
  double bf16 = 0;
};

struct GpuType {
  std::string name;
  PeakFlops peak;
  double memory_bytes = 0;
  double memory_bandwidth = 0;  // bytes/s
  // Fractions of the peaks reached in practice; unset means the cost model's defaults.
  std::optional<double> matmul_efficiency;
  std::optional<double> memory_efficiency;
  // Memory the model cannot use (CUDA context, workspaces, communication buffers); unset
  // means the cost model's default.
  std::optional<double> reserved_memory;
  // Relative speed when a CPU process stands in for this type (runtime emulation);
  // unset for a real device.
  std::optional<double> speed;
  // CUDA compute capability's major version (7 Volta/Turing, 8 Ampere/Ada, 9 Hopper, 10 and
  // 12 Blackwell); 0 where unknown or not NVIDIA. Library defaults depend on it.
  int compute_capability = 0;
  // Streaming multiprocessors (AMD: compute units), which a matrix product's tiles fill in
  // waves; 0 where unknown.
  int multiprocessors = 0;
  std::string source;  // where the figures come from

  // Peak for matrix products in `dtype`; fp32 products use TF32 when `allow_tf32`.
  double peak_flops(model::DType dtype, bool allow_tf32) const;
};

}  // namespace hyperpipe::cluster
