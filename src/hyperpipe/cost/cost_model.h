// The one place that answers "how long" and "how much memory": the planner, the simulator
// and the reports all ask it. Measured profiles win where they exist; elsewhere an estimate
// from the GPU catalogue, op by op by default (op_estimate.h, cost_options.h's Estimator).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hyperpipe/cluster/cluster.h"
#include "hyperpipe/cost/cost_options.h"
#include "hyperpipe/cost/device_group.h"
#include "hyperpipe/cost/device_memory.h"
#include "hyperpipe/cost/estimate_cache.h"
#include "hyperpipe/cost/profile_db.h"
#include "hyperpipe/model/model.h"

namespace hyperpipe::cost {

// Seconds one device spends on a layer range for one micro-batch.
struct ComputeTime {
  double forward = 0;
  double backward_input = 0;   // B, as a split backward (zero-bubble schedules) runs it
  double backward_weight = 0;  // W, likewise
  // What B + W run apart cost more than one whole backward (measured; 0 when estimated).
  double split_extra = 0;
  double recompute = 0;         // forward rerun during backward (recomputation)
  double tp_communication = 0;  // tensor-parallel all-reduces, included in the times above
  int estimated_layers = 0;     // layers costed by an estimate (no profile)
  int profiled_layers = 0;      // layers costed from measured profiles
  int interpolated_layers = 0;  // of those, layers at an unmeasured micro-batch size

  // The whole backward, as one op.
  double backward() const { return backward_input + backward_weight - split_extra + recompute; }
  double total() const { return forward + backward(); }
  // "estimate", "profile", "profile (interpolated)" or "profile+estimate".
  std::string source() const;
  ComputeTime& operator+=(const ComputeTime& other);
};

// Bytes one device of a stage needs, term by term (device_memory.h says where each
// device-level figure comes from).
struct StageMemory {
  // The model's own tensors.
  double weights = 0;
  double gradients = 0;  // main grads: fp32 for a 16-bit model
  // mixed-precision Adam: fp32 master copy, momentum, variance (1/dp of them, sharded)
  double optimizer = 0;
  double activations = 0;  // of all micro-batches in flight
  // Of those, per micro-batch, what stays from its B until its W when they run apart.
  double weight_gradient_activations = 0;
  // What the device holds besides.
  double framework = 0;     // the framework's own gradient copies (FrameworkBuffers)
  double pipe_buffers = 0;  // outputs a framework keeps until their backward, all in flight
  double logits = 0;        // the loss's transient at vocabulary size (the head's stage)
  double workspaces = 0;    // cuBLAS, through the allocator
  double allocator = 0;     // reserved but not allocated: (ratio − 1) × the allocated bytes
  // Reserved in the allocator's pools of FSDP's side streams, which the default stream's
  // requests cannot use (FrameworkBuffers::fsdp_stream_pools).
  double stream_pools = 0;
  double communicators = 0;  // NCCL's buffers for the groups the device talks in
  double context = 0;        // CUDA context and kernel images
  double allocator_ratio = 1;
  // Set where the GPU type's `reserved_memory` replaces the device-level terms.
  bool stated_reserve = false;
  // Set where FSDP shards the weights and gradients of a stage alone in its pipeline.
  bool fully_sharded = false;

  // Bytes the caching allocator hands out at this stage's peak.
  double allocated() const {
    return weights + gradients + optimizer + activations + framework + pipe_buffers + logits +
           workspaces;
  }
  // Allocated bytes that stay all step: what the allocator holds besides the activations.
  double static_allocated() const {
    return weights + gradients + optimizer + framework + logits + workspaces;
  }
  // Bytes the allocator ratio does not scale: those held outside the allocator, and the
  // side streams' pools.
  double outside_allocator() const { return communicators + context + stream_pools; }
  double total() const { return allocated() + allocator + outside_allocator(); }
  // The peak as the device reports it, with `activations` bytes of activations in flight.
  double device_peak(double activation_bytes) const {
    return outside_allocator() + allocator_ratio * (static_allocated() + activation_bytes);
  }
  // The terms in report order, each with its source.
  std::vector<MemoryTerm> terms() const;
};

struct Transfer {
  double bytes = 0;
  double seconds = 0;
};

class CostModel {
 public:
  // `profiles` may be null; it must outlive the cost model. Links measured for this
  // cluster in `profiles` replace its own (measured_links.h); cluster() has them.
  CostModel(const model::Model& model, const cluster::Cluster& cluster, CostOptions options = {},
            const ProfileDb* profiles = nullptr);

  const model::Model& model() const { return model_; }
  const cluster::Cluster& cluster() const { return cluster_; }
  const CostOptions& options() const { return options_; }
  // The same model, cluster and profiles under other options.
  CostModel with_options(CostOptions options) const;

  // Bytes per element of a weight's gradient as training keeps it: a 16-bit model's are
  // fp32 main grads (mixed precision accumulates in fp32), else the model's own type.
  double gradient_bytes_per_element() const;
  // Bytes per element the data-parallel all-reduce moves: the options' reduce type for
  // a 16-bit model's main grads, else the gradient's own.
  double reduce_bytes_per_element() const;

  // One layer on one device of `type`; `work.micro_batch` is that device's share.
  ComputeTime layer_time(int layer, const cluster::GpuType& type, const model::Workload& work,
                         model::Recompute recompute) const;
  // Layers [first, last) on a device group for a micro-batch of `micro_batch` sequences,
  // split over the group's dp ranks (the slowest rank, ceil(micro_batch / dp), sets the
  // pace), including the tensor-parallel all-reduces over the group's tp link.
  ComputeTime range_time(int first, int last, const DeviceGroup& group, int64_t micro_batch,
                         int64_t seq_len, model::Recompute recompute) const;

  // Memory of one device of a stage holding layers [first, last) with `in_flight`
  // micro-batches whose activations are kept for backward. The groups it talks in follow
  // from its layers: neighbours before and after unless it holds the first or last layer,
  // the tied embedding's group if it holds one end of a tied model and not the other, its
  // tp and dp groups, and the world group every run sums its global norm over.
  StageMemory stage_memory(int first, int last, const DeviceGroup& group, int64_t micro_batch,
                           int64_t seq_len, int in_flight, model::Recompute recompute) const;

  // The share of a link's bandwidth that transfers reach: the options' for the links a
  // cluster file states, 1 for links measured on the cluster (they are what was reached).
  double link_efficiency() const;
  // The same for one link: its own efficiency where the cluster file gives one.
  double link_efficiency(const cluster::Link& link) const;
  // What a device of `type` holds outside the model for any plan: measured by `profile
  // --memory` where the profiles have it, else the defaults of a GPU or a CPU stand-in.
  DeviceOverheads device_overheads(const cluster::GpuType& type) const;
  // The bytes of a device's memory a plan may use: its memory less the options' margin.
  double usable_memory(double device_memory) const;
  // Point-to-point: the link's table where it has one (cluster.h), else latency + bytes /
  // (bandwidth · link efficiency).
  Transfer transfer(double bytes, const cluster::Link& link) const;
  // The activation (or, backwards, its gradient) crossing the cut after `last_layer` from
  // one stage to the next: each sending rank ships its share over its own connection, so
  // the time is that of the largest share. Under tensor parallelism that share is as the
  // runtime moves it (shard_share_of_cut, shards_fed_per_sender).
  Transfer cut_transfer(int last_layer, int64_t micro_batch, int64_t seq_len,
                        const DeviceGroup& from, const DeviceGroup& to,
                        const cluster::Link& link) const;
  // Ring all-reduce of `bytes` over `ranks` (Patarasuk & Yuan, 2009):
  // 2(n−1) steps, each moving bytes/n and paying one latency. Over the link measured for
  // all-reduces instead of `link` where the cluster's links were measured.
  double allreduce_time(double bytes, int ranks, const cluster::Link& link) const;
  // All-reduce of the gradients of layers [first, last) over the group's dp ranks; with the
  // optimizer sharded, their reduce-scatter where CostOptions::reduce_scatter_gradients.
  double gradient_allreduce_time(int first, int last, const DeviceGroup& group) const;
  // AdamW step over the group's share of layers [first, last) (1/dp of it, sharded):
  // memory bound; sharded, the updated weights' all-gather over dp follows it.
  double optimizer_time(int first, int last, const DeviceGroup& group) const;

  // Parameters of layers [first, last) held by one device (tp splits them).
  double range_params(int first, int last, int tp) const;

 private:
  // The AdamW step alone (optimizer_time less the weights' all-gather).
  double optimizer_step_time(int first, int last, const DeviceGroup& group) const;
  model::Workload workload(int64_t micro_batch, int64_t seq_len, int tp) const;
  std::optional<ProfileLookup> find_profile(int layer, const cluster::GpuType& type,
                                            const model::Workload& work) const;
  double matmul_rate(const cluster::GpuType& type) const;
  double memory_rate(const cluster::GpuType& type) const;

  const model::Model& model_;
  cluster::Cluster cluster_;  // with the links measured for it, if `profiles` has them
  // What a two-rank all-reduce measured on the cluster fits to, if `profiles` has it.
  std::optional<cluster::Link> measured_all_reduce_;
  CostOptions options_;
  const ProfileDb* profiles_;
  // Shared by the copies with_options makes (the key holds what options change).
  std::shared_ptr<EstimateCache> estimates_ = std::make_shared<EstimateCache>();
};

}  // namespace hyperpipe::cost
