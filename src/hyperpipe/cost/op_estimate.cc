#include "hyperpipe/cost/op_estimate.h"

#include <algorithm>
#include <cmath>

#include "hyperpipe/cost/cost_options.h"

namespace hyperpipe::cost {
namespace {

// FlashAttention's share of the tensor peak, forward and backward (Dao, "FlashAttention-2",
// 2023, §4.1: 50-73 % of A100's peak forward, somewhat less backward; on H100 FlashAttention-2
// reaches about 35 % (Shah et al., "FlashAttention-3", 2024, §1). Volta and Turing have no
// FlashAttention-2 kernel: PyTorch's memory-efficient attention runs there, assumed at half
// of Ampere's share (no published figure; tested only).
struct FlashShares {
  double forward;
  double backward;
};
constexpr FlashShares kAmpereFlash{0.60, 0.45};
constexpr FlashShares kHopperFlash{0.35, 0.30};
constexpr FlashShares kOlderFlash{0.30, 0.22};
// The fused backward reruns Q·Kᵀ: five products against the four Layer::flops counts.
constexpr double kFlashBackwardRerun = 5.0 / 4.0;
constexpr double kCausalShare = 0.5;  // the masked half of the scores is skipped

// A large product's share of the format's peak by generation (a cluster file's
// matmul_efficiency for a type wins): the median over the large products (≥ 100 GFLOP) in
// the Aceso op profiles of GPT-Neo-2.7 that eth-easl/sailor publishes, on each generation's
// data-centre part: V100-16GB, A100-40GB, GH200-96GB (bench/estimates/aceso_products.py),
// fitted there and tested on the other GPU types and models (docs/guide/performance.md,
// "Estimates without a profile"). fp32 on CUDA cores: Volta's share on every generation. cuBLAS
// alone reaches more on Hopper (XLA's measured table for H100, openxla xla/service/gpu/model/
// matmul_interpolator_data.h: 4096³ bf16 783 of 989 TFLOP/s, 79 %), PyTorch's products
// at a training layer's shapes on GH200 about 61 %.
struct ProductShares {
  double fp32;      // CUDA cores
  double tf32;      // fp32 products on tensor cores
  double tensor16;  // fp16 and bf16
};
constexpr ProductShares kVoltaTuringShares{0.93, 0.93, 0.69};  // no TF32: never asked
constexpr ProductShares kAmpereShares{0.93, 0.81, 0.72};
constexpr ProductShares kHopperShares{0.93, 0.62, 0.61};

// Tiles of a product's output along one of its dimensions, the last one partial.
double tiles_along(int64_t extent) {
  return static_cast<double>((extent + kProductTile - 1) / kProductTile);
}

// The FLOPs a product really spends: every tile whole, and every wave of tiles over the
// multiprocessors whole when the GPU type says how many it has.
double quantized_flops(const model::LayerOp& op, int multiprocessors) {
  const double tiles = static_cast<double>(op.batch) * tiles_along(op.m) * tiles_along(op.n);
  const double per_tile = 2.0 * kProductTile * kProductTile * static_cast<double>(op.k);
  if (multiprocessors <= 0) return tiles * per_tile;
  const double waves = std::ceil(tiles / multiprocessors);
  return waves * multiprocessors * per_tile;
}

double memory_seconds(double bytes, const cluster::GpuType& type, double memory_efficiency) {
  return bytes / (type.memory_bandwidth * type.memory_efficiency.value_or(memory_efficiency));
}

FlashShares flash_shares(Generation generation) {
  switch (generation) {
    case Generation::volta_turing:
      return kOlderFlash;
    case Generation::hopper:
    case Generation::blackwell:
      return kHopperFlash;
    case Generation::ampere_ada:
    case Generation::unknown:
      break;
  }
  return kAmpereFlash;
}

}  // namespace

std::string_view to_string(OpBound bound) {
  switch (bound) {
    case OpBound::compute:
      return "compute";
    case OpBound::memory:
      return "memory";
    case OpBound::launch:
      return "launch";
  }
  return "compute";
}

Generation generation_of(const cluster::GpuType& type) {
  switch (type.compute_capability) {
    case 7:
      return Generation::volta_turing;
    case 8:
      return Generation::ampere_ada;
    case 9:
      return Generation::hopper;
    case 10:
    case 12:
      return Generation::blackwell;
    default:
      return Generation::unknown;
  }
}

ProductPath product_path(const cluster::GpuType& type, model::DType dtype, bool tf32) {
  if (type.peak_flops(dtype, tf32) <= type.peak.fp32) return ProductPath::cuda_cores;
  return dtype == model::DType::fp32 ? ProductPath::tf32 : ProductPath::tensor16;
}

double product_efficiency(Generation generation, ProductPath path) {
  ProductShares shares{};
  switch (generation) {
    case Generation::volta_turing:
      shares = kVoltaTuringShares;
      break;
    case Generation::ampere_ada:
      shares = kAmpereShares;
      break;
    case Generation::hopper:
    case Generation::blackwell:  // no public measurement yet: Hopper's
      shares = kHopperShares;
      break;
    case Generation::unknown:
      return kDefaultMatmulEfficiency;
  }
  switch (path) {
    case ProductPath::cuda_cores:
      return shares.fp32;
    case ProductPath::tf32:
      return shares.tf32;
    case ProductPath::tensor16:
      break;
  }
  return shares.tensor16;
}

OpTime op_time(const model::LayerOp& op, const cluster::GpuType& type,
               const model::TransformerConfig& config, double memory_efficiency) {
  const double launch = kKernelLaunchSeconds * op.kernels;
  const double moved = memory_seconds(op.bytes, type, memory_efficiency);
  OpTime time;
  switch (op.kind) {
    case model::OpKind::product: {
      // A cluster file's matmul_efficiency for the type wins over the generation's.
      time.efficiency = type.matmul_efficiency.value_or(
          product_efficiency(generation_of(type), product_path(type, config.dtype, config.tf32)));
      const double rate = type.peak_flops(config.dtype, config.tf32) * time.efficiency;
      const double computed = quantized_flops(op, type.multiprocessors) / rate;
      time.seconds = std::max(computed, moved);
      time.bound = computed >= moved ? OpBound::compute : OpBound::memory;
      break;
    }
    case model::OpKind::fused_attention: {
      const FlashShares shares = flash_shares(generation_of(type));
      const bool backward = op.pass != model::Pass::forward;
      time.efficiency = backward ? shares.backward : shares.forward;
      const double work =
          op.flops * (op.causal ? kCausalShare : 1.0) * (backward ? kFlashBackwardRerun : 1.0);
      const double computed = work / (type.peak_flops(config.dtype, config.tf32) * time.efficiency);
      time.seconds = std::max(computed, moved);
      time.bound = computed >= moved ? OpBound::compute : OpBound::memory;
      break;
    }
    case model::OpKind::memory:
      time.seconds = moved;
      time.bound = OpBound::memory;
      break;
  }
  if (time.seconds < launch) {
    time.seconds = launch;
    time.bound = OpBound::launch;
  }
  return time;
}

PassTimes estimate_layer(const std::vector<model::LayerOp>& ops, const cluster::GpuType& type,
                         const model::TransformerConfig& config, double memory_efficiency) {
  PassTimes times;
  for (const auto& op : ops) {
    const double seconds = op_time(op, type, config, memory_efficiency).seconds;
    switch (op.pass) {
      case model::Pass::forward:
        times.forward += seconds;
        break;
      case model::Pass::backward_input:
        times.backward_input += seconds;
        break;
      case model::Pass::backward_weight:
        times.backward_weight += seconds;
        break;
    }
  }
  return times;
}

}  // namespace hyperpipe::cost
