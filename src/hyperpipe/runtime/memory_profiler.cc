#include "hyperpipe/runtime/memory_profiler.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <exception>
#include <thread>

#include "hyperpipe/common/quantity.h"
#include "hyperpipe/runtime/communicator.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/memory_in_use.h"
#include "hyperpipe/runtime/mixed_precision.h"
#include "hyperpipe/runtime/optimizer.h"
#include "hyperpipe/runtime/process_memory.h"
#include "hyperpipe/runtime/profiler.h"
#include "hyperpipe/runtime/stage_module.h"

namespace hyperpipe::runtime {
namespace {

constexpr int kProbeRanks = 2;
// Training steps of the probed stage after its warm-up: the allocator's pools hold their
// steady mix of sizes by the third.
constexpr int kAllocatorRounds = 3;
// The warm-up step's sequence: short, so the heap it leaves behind is small.
constexpr int64_t kWarmupSequence = 8;
// A matrix product large enough to go to cuBLAS (its handle and workspace), small enough
// to cost nothing itself.
constexpr int64_t kProbeMatrixSide = 256;
constexpr int kP2pTag = 1;

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// What the probe's device holds now: CUDA's used memory, or on CPU this process's RSS.
double used_now(const torch::Device& device) {
  synchronize(device);
  const auto used = device_used_bytes(device);
  if (!used) {
    throw std::runtime_error(
        fmt::format("cannot read the memory {} holds (/proc/self/statm or cudaMemGetInfo)",
                    device.is_cuda() ? "the GPU" : "this process"));
  }
  return *used;
}

struct CommunicatorBytes {
  double collective = 0;
  double p2p_peer = 0;
};

// Two ranks meet over the runtime's backend (on CUDA, rank r on the probe's device + r),
// sum once over the world group and send once each way; this thread reads what the first
// rank's device holds before, after the sum and after the send. On CPU both ranks are this
// process, so each delta is two ranks'.
CommunicatorBytes measure_communicators(const MemoryProfileSettings& settings) {
  std::barrier phases(kProbeRanks + 1);
  std::exception_ptr failures[kProbeRanks];
  const auto rank_main = [&](int rank) {
    try {
      const Rendezvous rendezvous = local_rendezvous(rank, kProbeRanks, settings.port);
      const torch::Device device =
          settings.device.is_cuda()
              ? torch::Device(torch::kCUDA,
                              static_cast<c10::DeviceIndex>(settings.device.index() + rank))
              : settings.device;
      auto one = torch::ones({1}, torch::TensorOptions().device(device));
      synchronize(device);
      phases.arrive_and_wait();  // "before" read
      const auto communicator = connect(rendezvous, device, kProbeMeetTimeout);
      std::vector<torch::Tensor> summed{one};
      communicator->all_reduce_sum(summed, {0, 1});
      synchronize(device);
      phases.arrive_and_wait();  // the collective's buffers made
      phases.arrive_and_wait();  // read
      const std::string what = "the memory probe's message";
      if (rank == 0) {
        communicator->send(one, 1, kP2pTag, what)->wait();
        communicator->recv(one, 1, kP2pTag, what)->wait();
      } else {
        communicator->recv(one, 0, kP2pTag, what)->wait();
        communicator->send(one, 0, kP2pTag, what)->wait();
      }
      synchronize(device);
      phases.arrive_and_wait();  // the neighbour's buffers made
      phases.arrive_and_wait();  // read; the communicator may go
    } catch (...) {
      failures[rank] = std::current_exception();
      phases.arrive_and_drop();
    }
  };
  const double before = used_now(settings.device);
  std::thread first(rank_main, 0), second(rank_main, 1);
  phases.arrive_and_wait();
  phases.arrive_and_wait();
  const double after_collective = used_now(settings.device);
  phases.arrive_and_wait();
  phases.arrive_and_wait();
  const double after_p2p = used_now(settings.device);
  phases.arrive_and_wait();
  first.join();
  second.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  const double ranks_measured = settings.device.is_cuda() ? 1.0 : kProbeRanks;
  return {std::max(0.0, after_collective - before) / ranks_measured,
          std::max(0.0, after_p2p - after_collective) / ranks_measured};
}

// cuBLAS's workspace: what the allocator hands out for the first product beyond its result.
double measure_workspace(const torch::Device& device) {
  const auto options = torch::TensorOptions().device(device);
  const auto a = torch::randn({kProbeMatrixSide, kProbeMatrixSide}, options);
  const auto b = torch::randn({kProbeMatrixSide, kProbeMatrixSide}, options);
  synchronize(device);
  const double before = bytes_in_use(device).value_or(0);
  const auto product = a.mm(b);
  synchronize(device);
  const double after = bytes_in_use(device).value_or(0);
  return std::max(0.0, after - before - static_cast<double>(product.nbytes()));
}

// The layers a stage of the model holds for the allocator probe: the whole model where it
// is small, else the embedding and a few blocks (as the layer profiler times them).
int probed_end(const model::Model& model) {
  return model.num_layers() <= kProfiledBlocks + 2 ? model.num_layers() : 1 + kProfiledBlocks;
}

// Every byte libtorch's CPU allocator hands out on this thread (and the intra-op threads
// it passes its state to) while installed, through the hook its memory profiler uses: the
// heap's true peak, transients inside a backward included.
class CpuAllocations : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void* /*ptr*/, int64_t bytes, size_t /*total_allocated*/,
                         size_t /*total_reserved*/, c10::Device /*device*/) override {
    const int64_t now = current_ += bytes;
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
  }
  bool memoryProfilingEnabled() const override { return true; }
  double peak() const { return static_cast<double>(peak_.load()); }

 private:
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
};

struct AllocatorMix {
  double ratio = 1;
  double allocated_peak = 0;
  double reserved_peak = 0;
};

// Trains a stage of the model a few steps, as a run does (its dtype, masters, AdamW), and
// compares what the device holds for it at its peak with what the allocator handed out:
// on CUDA the caching allocator's own peaks (the weights and state among them); on CPU the
// resident set's growth over the steps against the peak of what libtorch allocated in them.
AllocatorMix measure_allocator(const model::Model& model, const MemoryProfileSettings& settings) {
  const torch::Device& device = settings.device;
  const int64_t seq = model.config().sequence_length(settings.seq_len);
  StageModule stage(model, 0, probed_end(model), /*seed=*/0);
  stage.to(device);
  const auto type = scalar_type_of(model.config().dtype);
  auto trained = stage.parameters();
  std::unique_ptr<MasterWeights> masters;
  if (needs_master_weights(type)) {
    masters = std::make_unique<MasterWeights>(trained, type);
    trained = masters->masters();
  }
  const auto adamw = make_optimizer(trained, {});
  const auto train_step = [&](int64_t micro_batch, int64_t length) {
    const auto options = torch::TensorOptions().device(device).dtype(torch::kLong);
    const auto tokens = torch::randint(0, model.config().vocab, {micro_batch, length}, options);
    torch::Tensor output;
    {
      const DropoutScope dropout_scope(DropoutPlace{});
      output = stage.forward(tokens);
      if (stage.holds_head()) output = stage.loss_sum(output, tokens);
    }
    if (stage.holds_head()) {
      output.backward();
    } else {
      output.backward(torch::randn_like(output));
    }
    output = torch::Tensor();
    const auto parameters = stage.parameters();
    const double norm = std::sqrt(gradient_squares(parameters));
    clipped_step(*adamw, parameters, clip_factor(norm, training::OptimizerOptions{}.clip_norm));
    if (masters) masters->copy_to_model();
  };
  // A short step first: every kernel's code paged in, the gradients and AdamW's state made,
  // so on CPU what the resident set gains after is the heap's doing alone.
  train_step(1, std::min(seq, kWarmupSequence));
  synchronize(device);
  const double resident_before = resident_bytes().value_or(0);
  const bool peak_reset = reset_peak_resident();
  reset_allocator_peaks(device);
  const auto allocations = std::make_shared<CpuAllocations>();
  {
    const std::optional<c10::DebugInfoGuard> counting =
        device.is_cuda() ? std::nullopt
                         : std::make_optional<c10::DebugInfoGuard>(
                               c10::DebugInfoKind::PROFILER_STATE, allocations);
    for (int round = 0; round < kAllocatorRounds; ++round) train_step(settings.micro_batch, seq);
    synchronize(device);
  }
  AllocatorMix mix;
  if (const auto reserve = allocator_reserve(device)) {
    mix.allocated_peak = reserve->allocated_peak;
    mix.reserved_peak = reserve->peak;
  } else {
    const auto peak = peak_reset ? peak_resident_bytes() : resident_bytes();
    mix.allocated_peak = allocations->peak();
    mix.reserved_peak = peak.value_or(resident_before) - resident_before;
  }
  // A ratio under 1 (pages the heap kept from before the probe reused) counts as none.
  if (mix.allocated_peak > 0) mix.ratio = std::max(1.0, mix.reserved_peak / mix.allocated_peak);
  return mix;
}

}  // namespace

DeviceMemoryProfile profile_device_memory(const model::Model& model,
                                          const MemoryProfileSettings& settings) {
  const torch::Device& device = settings.device;
  const bool cuda = device.is_cuda();
  require_kernels_for(scalar_type_of(model.config().dtype), device, "dtype");
  DeviceMemoryProfile profile;
  profile.overheads = cuda ? cost::gpu_defaults() : cost::stand_in_defaults();
  auto& o = profile.overheads;
  constexpr int kProbes = 3;
  int done = 0;
  const auto next = [&](const std::string& what) {
    if (settings.progress) settings.progress(done++, kProbes, what);
  };
  const auto read_workspace = [&] {
    o.workspace = cuda ? measure_workspace(device) : 0.0;
    profile.probes.push_back(
        {"workspace", o.workspace,
         cuda ? "allocated for the first matrix product beyond its result" : "none on CPU"});
  };
  const auto read_context = [&] {
    const double reserved = cuda ? allocator_reserve(device)->current : 0.0;
    o.context = used_now(device) - reserved;
    profile.probes.push_back(
        {"context", o.context,
         cuda ? "the GPU's used memory less the allocator's reserve, after a stage trained "
                "(kernels loaded; other processes on the GPU count too)"
              : "this process's resident set before any tensor (libtorch, its threads)"});
  };
  const auto read_allocator = [&] {
    const AllocatorMix mix = measure_allocator(model, settings);
    o.allocator_ratio = mix.ratio;
    profile.probes.push_back(
        {"allocator_ratio", mix.ratio,
         fmt::format("{} held at the peak over {} handed out: layers [0, {}) of {} at "
                     "micro-batch {}",
                     format_bytes(mix.reserved_peak), format_bytes(mix.allocated_peak),
                     probed_end(model), model.config().name, settings.micro_batch)});
  };
  const auto read_communicators = [&] {
    const bool second_gpu =
        !cuda || device.index() + 1 < static_cast<int>(torch::cuda::device_count());
    if (!second_gpu) {
      const std::string why = "not measured: NCCL needs a second GPU; the default stays";
      profile.probes.push_back({"collective_communicator", std::nullopt, why});
      profile.probes.push_back({"p2p_peer", std::nullopt, why});
      return;
    }
    const CommunicatorBytes bytes = measure_communicators(settings);
    o.collective_communicator = bytes.collective;
    o.p2p_peer = bytes.p2p_peer;
    const std::string backend = cuda ? "NCCL" : "Gloo (with the rendezvous store's share)";
    profile.probes.push_back({"collective_communicator", bytes.collective,
                              fmt::format("{}: a two-rank group's first sum", backend)});
    profile.probes.push_back({"p2p_peer", bytes.p2p_peer,
                              fmt::format("{}: the first send and receive between them", backend)});
  };
  // Each probe runs where what it reads is undisturbed: on CUDA the context after the
  // stage has trained (every kernel it uses loaded) and before NCCL's buffers; on CPU the
  // resident set and Gloo's buffers before the stage's heap, which stays resident.
  if (cuda) {
    next("cuBLAS's workspace");
    read_workspace();
    next("the allocator's reserve and the context");
    read_allocator();
    read_context();
    next("a communicator's buffers");
    read_communicators();
  } else {
    next("the process's own");
    read_workspace();
    read_context();
    next("a communicator's buffers");
    read_communicators();
    next("the allocator's reserve");
    read_allocator();
  }
  if (settings.progress) settings.progress(kProbes, kProbes, "done");
  o.source = fmt::format("profile --memory on {}", device_description(device));
  return profile;
}

}  // namespace hyperpipe::runtime
