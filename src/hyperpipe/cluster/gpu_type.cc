#include "hyperpipe/cluster/gpu_type.h"

namespace hyperpipe::cluster {

double GpuType::peak_flops(model::DType dtype, bool allow_tf32) const {
  switch (dtype) {
    case model::DType::fp32:
      return allow_tf32 ? peak.tf32 : peak.fp32;
    case model::DType::fp16:
      return peak.fp16;
    case model::DType::bf16:
      return peak.bf16;
  }
  return peak.fp32;
}

}  // namespace hyperpipe::cluster
