#include "hyperpipe/cost/cost_model.h"

#include <algorithm>
#include <cmath>

#include "hyperpipe/common/log.h"
#include "hyperpipe/cost/measured_links.h"
#include "hyperpipe/cost/op_estimate.h"

namespace hyperpipe::cost {
namespace {

// fp32 master weights kept beside 16-bit ones by mixed-precision training.
constexpr double kMasterWeightBytes = 4;
// Adam's momentum and variance, fp32 each (Rajbhandari et al., ZeRO, 2020: 12 bytes per
// parameter of optimizer state with the master copy).
constexpr double kAdamMomentBytes = 8;
// fp32 main grads: mixed precision accumulates each 16-bit weight's gradient in fp32
// (Megatron-LM's main_grad, its default for bf16 and HyperPipe's for both 16-bit types).
constexpr double kMainGradBytes = 4;
// A loss computed in fp32 (the softmax it keeps and the gradients of its backward).
constexpr double kFp32Bytes = 4;
// One AdamW step per parameter reads the gradient (a main grad under mixed precision), the
// master weight (the weight itself in fp32), momentum and variance, and writes all but the
// gradient, plus the 16-bit copy.
double adam_bytes_per_param(model::DType dtype) {
  const double element_bytes = model::bytes_per_element(dtype);
  const bool has_master = model::keeps_fp32_masters(dtype);
  const double master_or_weight = has_master ? kMasterWeightBytes : element_bytes;
  const double gradient = has_master ? kMainGradBytes : element_bytes;
  const double read = gradient + master_or_weight + kAdamMomentBytes;
  const double written = master_or_weight + kAdamMomentBytes + (has_master ? element_bytes : 0.0);
  return read + written;
}
// All-reduces of the activation per decoder block in each direction under Megatron tensor
// parallelism (one after attention, one after the MLP; Shoeybi et al., 2019).
constexpr int kTpAllReducesPerBlock = 2;
// The vocabulary-parallel cross-entropy's sums over the shards, one value per token each:
// the shards' maxima (one row per shard), the sums of exponentials, the target logits.
constexpr int kLossSumsPerToken = 2;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

std::string ComputeTime::source() const {
  if (profiled_layers == 0) return "estimate";
  if (estimated_layers == 0) return interpolated_layers > 0 ? "profile (interpolated)" : "profile";
  return "profile+estimate";
}

std::vector<MemoryTerm> StageMemory::terms() const {
  std::vector<MemoryTerm> t{
      {"weights", weights,
       fully_sharded ? "FSDP: the head's unit gathered, the others one at a time"
                     : "the layers' parameters in the model's type"},
      {"gradients", gradients,
       fully_sharded ? "FSDP: none at the backward's start; they come sharded"
                     : "main grads: fp32 for 16-bit weights (Megatron-LM's main_grad)"},
      {"optimizer", optimizer, "AdamW: fp32 master and two moments, 1/dp sharded (ZeRO-1)"},
      {"activations", activations, "saved for backward, micro-batches in flight"},
      {"framework", framework, "the framework's gradient copies (cost/device_memory.cc)"},
      {"pipe_buffers", pipe_buffers, "outputs kept until their backward (DeepSpeed)"},
      {"logits", logits, "the loss's logits at vocabulary size, last stage"},
  };
  if (stated_reserve) {
    t.push_back({"reserved", context, "the GPU type's reserved_memory in the cluster file"});
    return t;
  }
  t.push_back({"workspaces", workspaces, "cuBLAS workspace (PyTorch CublasHandlePool.cpp)"});
  t.push_back({"allocator", allocator, "caching allocator: reserved over allocated"});
  if (stream_pools > 0) {
    t.push_back({"stream_pools", stream_pools,
                 "FSDP's side streams: sharded gradients, gathered units (_fsdp_collectives.py)"});
  }
  t.push_back({"communicators", communicators, "NCCL buffers per group (NCCL src/init.cc)"});
  t.push_back({"context", context, "CUDA context and kernel images (PyTorch #86509)"});
  return t;
}

ComputeTime& ComputeTime::operator+=(const ComputeTime& other) {
  forward += other.forward;
  backward_input += other.backward_input;
  backward_weight += other.backward_weight;
  split_extra += other.split_extra;
  recompute += other.recompute;
  tp_communication += other.tp_communication;
  estimated_layers += other.estimated_layers;
  profiled_layers += other.profiled_layers;
  interpolated_layers += other.interpolated_layers;
  return *this;
}

CostModel::CostModel(const model::Model& model, const cluster::Cluster& cluster,
                     CostOptions options, const ProfileDb* profiles)
    : model_(model),
      cluster_(with_measured_links(cluster, profiles)),
      options_(options),
      profiles_(profiles) {
  if (const MeasuredLinks* measured = profiles ? profiles->links_for(cluster.name()) : nullptr) {
    // Across hosts each level's table carries its own all-reduces; two local processes
    // stand for every level.
    if (measured->levels.empty()) measured_all_reduce_ = measured->all_reduce;
  }
}

CostModel CostModel::with_options(CostOptions options) const {
  CostModel copy = *this;
  copy.options_ = options;
  return copy;
}

double CostModel::gradient_bytes_per_element() const {
  const model::DType dtype = model_.config().dtype;
  return model::keeps_fp32_masters(dtype) ? kMainGradBytes : model::bytes_per_element(dtype);
}

double CostModel::reduce_bytes_per_element() const {
  const model::DType dtype = model_.config().dtype;
  return model::bytes_per_element(model::keeps_fp32_masters(dtype) ? options_.gradient_reduce_dtype
                                                                   : dtype);
}

model::Workload CostModel::workload(int64_t micro_batch, int64_t seq_len, int tp) const {
  return {micro_batch, seq_len, tp, options_.sequence_parallel};
}

double CostModel::matmul_rate(const cluster::GpuType& type) const {
  const double efficiency = type.matmul_efficiency.value_or(options_.matmul_efficiency);
  return type.peak_flops(model_.config().dtype, model_.config().tf32) * efficiency;
}

double CostModel::memory_rate(const cluster::GpuType& type) const {
  return type.memory_bandwidth * type.memory_efficiency.value_or(options_.memory_efficiency);
}

std::optional<ProfileLookup> CostModel::find_profile(int layer, const cluster::GpuType& type,
                                                     const model::Workload& work) const {
  if (!profiles_) return std::nullopt;
  const auto& config = model_.config();
  const ProfileKey key{config.name, model_.layers().at(layer).kind(),
                       type.name,   config.dtype,
                       work.tp,     work.seq_len};
  auto found = profiles_->find(key, work.micro_batch);
  if (!found) {
    log().debug("no profile for {} {} on {} (tp {}, seq {}, micro-batch {}): estimated",
                config.name, model::to_string(key.layer), type.name, work.tp, work.seq_len,
                work.micro_batch);
  }
  return found;
}

ComputeTime CostModel::layer_time(int layer, const cluster::GpuType& type,
                                  const model::Workload& work, model::Recompute recompute) const {
  const model::Layer& spec = model_.layers().at(layer);
  const model::LayerFlops flops = spec.flops(work);
  const double recompute_flops =
      spec.recompute_flops(work, recompute, options_.framework.selective_rule);
  // The share of the forward pass that recomputation reruns.
  const double rerun = flops.forward > 0 ? recompute_flops / flops.forward : 0.0;
  ComputeTime time;
  if (const auto profiled = find_profile(layer, type, work)) {
    time.forward = profiled->times.forward;
    time.backward_input = profiled->times.backward_input;
    time.backward_weight = profiled->times.backward_weight;
    if (profiled->times.backward) {
      time.split_extra = time.backward_input + time.backward_weight - *profiled->times.backward;
    }
    time.recompute = rerun * time.forward;
    time.profiled_layers = 1;
    time.interpolated_layers = profiled->match == ProfileMatch::exact ? 0 : 1;
    return time;  // the compute of one shard: range_time adds the tensor-parallel all-reduces
  }
  time.estimated_layers = 1;
  if (options_.estimator == Estimator::ops) {
    // Op by op: each kernel the layer runs, priced by what bounds it.
    const PassTimes passes =
        estimates_->get(spec.kind(), type.name, work, options_.memory_efficiency, [&] {
          return estimate_layer(model::layer_ops(spec, work), type, model_.config(),
                                options_.memory_efficiency);
        });
    time.forward = passes.forward;
    time.backward_input = passes.backward_input;
    time.backward_weight = passes.backward_weight;
    time.recompute = rerun * time.forward;
    return time;
  }
  // Roofline per kernel class: products run at the achievable FLOP rate, the
  // element-wise kernels between them at the achievable memory bandwidth, one after
  // the other.
  const model::MemoryTraffic traffic = spec.memory_traffic(work);
  const double flop_rate = matmul_rate(type);
  const double byte_rate = memory_rate(type);
  time.forward = flops.forward / flop_rate + traffic.forward / byte_rate;
  time.backward_input = flops.backward_input / flop_rate + traffic.backward_input / byte_rate;
  time.backward_weight = flops.backward_weight / flop_rate + traffic.backward_weight / byte_rate;
  time.recompute = rerun * time.forward;
  return time;
}

ComputeTime CostModel::range_time(int first, int last, const DeviceGroup& group,
                                  int64_t micro_batch, int64_t seq_len,
                                  model::Recompute recompute) const {
  const cluster::GpuType& type = cluster_.gpu_type(group.gpu_type);
  const model::Workload work = workload(ceil_div(micro_batch, group.dp), seq_len, group.tp);
  const double element_bytes = model::bytes_per_element(model_.config().dtype);
  const double activation = static_cast<double>(work.micro_batch) * static_cast<double>(seq_len) *
                            static_cast<double>(model_.config().hidden) * element_bytes;
  ComputeTime total;
  for (int layer = first; layer < last; ++layer) {
    ComputeTime time = layer_time(layer, type, work, recompute);
    const auto kind = model_.layers()[layer].kind();
    if (group.tp > 1) {
      const double one = allreduce_time(activation, group.tp, group.tp_link);
      double forward = 0, backward = 0;
      switch (kind) {
        case model::LayerKind::decoder_block:
          forward = backward = kTpAllReducesPerBlock * one;
          break;
        case model::LayerKind::embedding:  // the vocabulary slices' lookups summed
          forward = one;
          break;
        case model::LayerKind::head: {  // its input's gradient summed, and the loss's sums
          const double tokens =
              static_cast<double>(work.micro_batch) * static_cast<double>(seq_len);
          backward = one;
          forward =
              allreduce_time(tokens * element_bytes * group.tp, group.tp, group.tp_link) +
              kLossSumsPerToken * allreduce_time(tokens * element_bytes, group.tp, group.tp_link);
          break;
        }
      }
      time.tp_communication = forward + backward;
      time.forward += forward;
      time.backward_input += backward;
    }
    total += time;
  }
  return total;
}

double CostModel::range_params(int first, int last, int tp) const {
  double params = 0;
  for (int layer = first; layer < last; ++layer) {
    params += static_cast<double>(model_.layers().at(layer).params());
  }
  return params / tp;
}

StageMemory CostModel::stage_memory(int first, int last, const DeviceGroup& group,
                                    int64_t micro_batch, int64_t seq_len, int in_flight,
                                    model::Recompute recompute) const {
  const auto& config = model_.config();
  const double element_bytes = model::bytes_per_element(config.dtype);
  const FrameworkBuffers& framework = options_.framework;
  double params = range_params(first, last, group.tp);
  if (config.tied_embeddings && first == 0 && last == model_.num_layers() &&
      !framework.separate_tied_head) {
    // One stage holds the embedding and the head: the head's weight is the embedding's.
    params -= static_cast<double>(config.vocab) * static_cast<double>(config.embed_dim) / group.tp;
  }
  const bool has_master = model::keeps_fp32_masters(config.dtype);
  const double shards = options_.shard_optimizer ? group.dp : 1;
  const int layers = model_.num_layers();
  const bool whole_model = first == 0 && last == layers;
  StageMemory memory;
  memory.weights = params * element_bytes;
  const double main_grad_bytes = has_master && framework.main_grads_in_reduce_dtype
                                     ? reduce_bytes_per_element()
                                     : gradient_bytes_per_element();
  memory.gradients = params * main_grad_bytes;
  memory.optimizer = params * ((has_master ? kMasterWeightBytes : 0.0) + kAdamMomentBytes) / shards;
  memory.framework = params * (has_master ? framework.half_grad_bytes : 0.0);
  memory.fully_sharded = framework.fully_shards && options_.shard_optimizer && whole_model;
  if (memory.fully_sharded) {
    // FSDP without a pipeline (FrameworkBuffers::fully_shards): the head's unit gathered,
    // the sharded weights (the optimizer's master under mixed precision), no gradient.
    const double head_params = range_params(layers - 1, layers, group.tp);
    memory.weights =
        head_params * element_bytes + (has_master ? 0.0 : params * element_bytes / shards);
    memory.gradients = 0;
  } else if (framework.sharded_grad_copy && options_.shard_optimizer) {
    memory.framework += params * main_grad_bytes / shards;
  }
  const cluster::GpuType& type = cluster_.gpu_type(group.gpu_type);
  const model::Workload work = workload(ceil_div(micro_batch, group.dp), seq_len, group.tp);
  double per_micro_batch = 0;
  for (int layer = first; layer < last; ++layer) {
    const auto profiled = find_profile(layer, type, work);
    if (recompute == model::Recompute::none && profiled && profiled->times.activation_bytes) {
      per_micro_batch += *profiled->times.activation_bytes;
    } else {
      per_micro_batch += static_cast<double>(
          model_.layers()[layer].activation_bytes(work, recompute, framework.selective_rule));
    }
  }
  if (options_.sequence_parallel && group.tp > 1 && first > 0) {
    // The runtime takes a stage's input whole (as without sequence parallelism) and keeps
    // it beside the shard's part the first block keeps: the other tp − 1 parts on top.
    const model::Workload whole{work.micro_batch, work.seq_len, 1, false};
    per_micro_batch += static_cast<double>(model_.layers()[first - 1].output_bytes(whole)) *
                       (group.tp - 1) / group.tp;
  }
  memory.activations = per_micro_batch * in_flight;
  for (int layer = first; layer < last; ++layer) {
    memory.weight_gradient_activations +=
        static_cast<double>(model_.layers()[layer].weight_gradient_bytes(work));
  }
  if (framework.keeps_stage_outputs && last < layers) {
    memory.pipe_buffers =
        static_cast<double>(model_.layers()[last - 1].output_bytes(work)) * in_flight;
  }
  if (last == layers) {
    // The head's activations count the fp32 softmax the loss keeps for its backward. While
    // the loss starts, the logits as the head made them live beside it, and an upcast's
    // fp32 copy too unless the loss works in place on the copy (then the copy is the
    // softmax, and fp32 logits have no second tensor at all).
    const double logits = static_cast<double>(work.micro_batch) * static_cast<double>(seq_len) *
                          static_cast<double>(config.vocab) / group.tp;
    const bool upcast = framework.fp32_loss && has_master;
    double per_logit = element_bytes;
    if (framework.loss_in_place && framework.fp32_loss) {
      per_logit = has_master ? element_bytes : 0.0;
    } else if (upcast) {
      per_logit += kMasterWeightBytes;
    }
    if (framework.loss_backward_out_of_place) {
      // The backward's moment: two fp32 gradients beside the kept softmax, and the
      // logits as the head made them unless the step dropped them.
      const bool dropped = framework.frees_logits_before_backward && whole_model;
      per_logit = std::max(per_logit, 2 * kFp32Bytes + (dropped ? 0.0 : element_bytes));
    }
    memory.logits = logits * per_logit;
  }

  if (type.reserved_memory) {
    // The cluster file states what the device keeps back: it replaces the terms below.
    memory.context = *type.reserved_memory;
    memory.stated_reserve = true;
    return memory;
  }
  const DeviceOverheads overheads = device_overheads(type);
  Communicators talks;
  talks.p2p_peers = (first > 0 ? 1 : 0) + (last < layers ? 1 : 0);
  const bool holds_embedding = first == 0;
  const bool holds_head = last == layers;
  const bool tied_group = config.tied_embeddings && holds_embedding != holds_head;
  talks.collective = (group.tp > 1 ? 1 : 0) + (group.dp > 1 ? 1 : 0) + (tied_group ? 1 : 0);
  // Any other group means more than one process, and every run sums over all of them.
  if (talks.collective > 0 || talks.p2p_peers > 0) ++talks.collective;
  memory.communicators =
      talks.collective * overheads.collective_communicator + talks.p2p_peers * overheads.p2p_peer;
  memory.context = overheads.context;
  memory.workspaces = overheads.workspace;
  memory.allocator_ratio = overheads.allocator_ratio;
  // CUDA's caching allocator's facts: a CPU stand-in has none of them.
  const bool on_a_gpu = !type.speed;
  if (on_a_gpu && memory.fully_sharded && framework.fsdp_allocator_ratio > 0) {
    memory.allocator_ratio = framework.fsdp_allocator_ratio;
  }
  if (on_a_gpu && memory.fully_sharded && framework.fsdp_stream_pools) {
    // The reduce-scatter stream keeps the sharded gradients' blocks (in the reduce type;
    // with gradient accumulation a later micro-batch finds them in use, not cached);
    // the all-gather stream one gathered output per unit size: the embedding's, the
    // head's, a block's.
    const double gathered_units = range_params(0, 1, group.tp) +
                                  range_params(layers - 1, layers, group.tp) +
                                  range_params(1, 2, group.tp);
    memory.stream_pools =
        params * reduce_bytes_per_element() / shards + gathered_units * element_bytes;
  }
  memory.allocator = (memory.allocator_ratio - 1) * memory.allocated();
  return memory;
}

double CostModel::link_efficiency() const {
  return measured_all_reduce_ ? 1.0 : options_.link_efficiency;
}

double CostModel::link_efficiency(const cluster::Link& link) const {
  return measured_all_reduce_ ? 1.0 : link.efficiency.value_or(options_.link_efficiency);
}

DeviceOverheads CostModel::device_overheads(const cluster::GpuType& type) const {
  if (profiles_) {
    if (const DeviceOverheads* measured = profiles_->device_memory_for(type.name)) return *measured;
  }
  return type.speed ? stand_in_defaults()
                    : gpu_defaults(options_.lazy_module_loading, type.compute_capability);
}

double CostModel::usable_memory(double device_memory) const {
  return device_memory * (1 - options_.memory_margin);
}

Transfer CostModel::transfer(double bytes, const cluster::Link& link) const {
  if (bytes <= 0 || std::isinf(link.bandwidth)) return {bytes, 0.0};
  // A measured table is what transfers reached: no efficiency on top.
  if (!link.table.empty()) return {bytes, cluster::table_seconds(link.table, bytes, false)};
  return {bytes, link.latency + bytes / (link.bandwidth * link_efficiency(link))};
}

Transfer CostModel::cut_transfer(int last_layer, int64_t micro_batch, int64_t seq_len,
                                 const DeviceGroup& from, const DeviceGroup& to,
                                 const cluster::Link& link) const {
  // Each sender holds ceil(b / dp_from) sequences and sends all of them, split over as
  // many receivers as needed when the next stage's dp differs.
  const model::Workload work =
      workload(ceil_div(micro_batch, from.dp), seq_len, shard_share_of_cut(from, to));
  const int fan_out = shards_fed_per_sender(from, to);
  const double bytes =
      static_cast<double>(model_.layers().at(last_layer).output_bytes(work)) * fan_out;
  const int messages = std::max(1, to.dp / from.dp) * fan_out;
  Transfer result = transfer(bytes, link);
  result.seconds += (messages - 1) * link.latency;
  return result;
}

double CostModel::allreduce_time(double bytes, int ranks, const cluster::Link& link) const {
  if (ranks <= 1 || bytes <= 0) return 0.0;
  const cluster::Link& used = measured_all_reduce_ ? *measured_all_reduce_ : link;
  const double steps = 2.0 * (ranks - 1);
  const double chunk = bytes / ranks;
  if (used.has_all_reduce_table()) {
    // Two ranks measured: 2 steps of half the message each, so a step of `chunk` is half
    // the two-rank all-reduce of 2 · chunk.
    return steps * cluster::table_seconds(used.table, 2 * chunk, true) / 2;
  }
  return steps * (used.latency + chunk / (used.bandwidth * link_efficiency(used)));
}

double CostModel::gradient_allreduce_time(int first, int last, const DeviceGroup& group) const {
  const double params = range_params(first, last, group.tp);
  const double gradients =
      allreduce_time(params * reduce_bytes_per_element(), group.dp, group.dp_link);
  // A ring reduce-scatter is half a ring all-reduce of the same bytes (its first n − 1
  // steps).
  return options_.shard_optimizer && options_.reduce_scatter_gradients ? gradients / 2 : gradients;
}

double CostModel::optimizer_time(int first, int last, const DeviceGroup& group) const {
  const double step = optimizer_step_time(first, last, group);
  if (!options_.shard_optimizer) return step;
  // The updated weights' ring all-gather: half a ring all-reduce of them (its last n − 1
  // steps).
  const double element_bytes = model::bytes_per_element(model_.config().dtype);
  return step + allreduce_time(range_params(first, last, group.tp) * element_bytes, group.dp,
                               group.dp_link) /
                    2;
}

double CostModel::optimizer_step_time(int first, int last, const DeviceGroup& group) const {
  // Sharded, each rank steps its 1/dp of the parameters.
  const double shards = options_.shard_optimizer ? group.dp : 1;
  if (profiles_) {
    // Measured per layer where every layer of the range has it.
    double measured = 0;
    bool complete = true;
    const auto& config = model_.config();
    for (int layer = first; layer < last && complete; ++layer) {
      const auto step = profiles_->optimizer(
          {config.name, model_.layers()[layer].kind(), group.gpu_type, config.dtype, group.tp, 0});
      complete = step.has_value();
      if (step) measured += *step;
    }
    if (complete) return measured / shards;
  }
  const double bytes =
      range_params(first, last, group.tp) * adam_bytes_per_param(model_.config().dtype);
  return bytes / memory_rate(cluster_.gpu_type(group.gpu_type)) / shards;
}

}  // namespace hyperpipe::cost
