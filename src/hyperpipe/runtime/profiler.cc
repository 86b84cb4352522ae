#include "hyperpipe/runtime/profiler.h"

#include <fmt/format.h>

#ifdef HYPERPIPE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <thread>

#include "hyperpipe/runtime/deferred_weight_grads.h"
#include "hyperpipe/runtime/dropout.h"
#include "hyperpipe/runtime/layers.h"
#include "hyperpipe/runtime/memory_in_use.h"
#include "hyperpipe/runtime/mixed_precision.h"
#include "hyperpipe/runtime/optimizer.h"
#include "hyperpipe/runtime/stage_module.h"
#include "hyperpipe/runtime/stand_in_clock.h"
#include "hyperpipe/runtime/timing.h"
#include "hyperpipe/training/text_corpus.h"

namespace hyperpipe::runtime {
namespace {

// Bytes written between timed ops to evict the caches (above any last-level cache of a
// machine of this class) and the stride that touches each line once.
constexpr size_t kFlushBytes = size_t{64} << 20;
constexpr size_t kCacheLine = 64;

// Times ops as the runtime runs them: on CUDA after a device sync; for a CPU stand-in
// after the sleep that stretched the op before, as its work ÷ speed (stand_in_clock.h).
class Stopwatch {
 public:
  Stopwatch(const torch::Device& device, double speed) : device_(device), speed_(speed) {}
  void start() {
    if (pending_sleep_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(pending_sleep_));
    }
    flush_caches();
    sync();
    start_ = std::chrono::steady_clock::now();
    work_start_ = work_seconds();
  }
  double seconds() {
    sync();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (speed_ >= 1.0) return wall;
    const double emulated = (work_seconds() - work_start_) / speed_;
    pending_sleep_ = std::max(0.0, emulated - wall);
    return emulated;
  }

 private:
  void sync() {
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
  }
  // In a run, the other processes' work passes through the shared caches between two
  // ops of this one: evict them as they would be.
  void flush_caches() {
    if (device_.is_cuda()) return;
    static std::vector<char> flush(kFlushBytes);
    for (size_t i = 0; i < flush.size(); i += kCacheLine) flush[i] += 1;
  }
  torch::Device device_;
  double speed_;
  double pending_sleep_ = 0;  // what stretches the op before to its emulated time
  std::chrono::steady_clock::time_point start_;
  double work_start_ = 0;
};

// Every timed quantity of one (device type, micro-batch, layer kind), one sample a round.
struct Samples {
  std::vector<double> forward, backward_input, backward_weight, backward, optimizer;
  std::vector<double> activation_bytes;  // held from the forward until the backward
};

// One layer kind (the embedding, a chain of blocks, the head) built once and timed at
// every micro-batch size and for every device type.
class LayerBench {
 public:
  // `tp`: time rank 0's shard of the layer split over that many tensor-parallel ranks.
  LayerBench(const model::Model& model, int index, const torch::Device& device, int tp)
      : model_(model),
        count_(model.layers()[index].kind() == model::LayerKind::decoder_block
                   ? std::min<int>(kProfiledBlocks, model.config().layers)
                   : 1),
        layer_(model, index, index + count_, 0, TensorShard{tp, 0, {}, {}}),
        vocabulary_slice_((model.config().vocab + tp - 1) / tp),
        device_(device) {
    layer_.to(device);
    // In the model's dtype, as a run trains it: 16-bit weights with fp32 masters.
    const auto type = scalar_type_of(model.config().dtype);
    auto trained = layer_.parameters();
    if (needs_master_weights(type)) {
      masters_ = std::make_unique<MasterWeights>(trained, type);
      trained = masters_->masters();
    }
    activation_type_ = needs_master_weights(type) ? type : torch::kFloat;
    adamw_ = make_optimizer(trained, {});
  }

  int count() const { return count_; }

  // One sample of each quantity: forward, whole backward and optimizer step as 1F1B runs
  // them, then B and W as a zero-bubble schedule runs them apart (deferred_weight_grads.h).
  // The head's forward includes the loss, as the last stage's does.
  void run(int64_t micro_batch, int64_t seq, Stopwatch& watch, Samples& into) {
    const auto options = torch::TensorOptions().device(device_);
    const auto tokens = [&](int64_t vocab) {
      return torch::randint(0, vocab, {micro_batch, seq}, options.dtype(torch::kLong));
    };
    const auto input = layer_.holds_embedding()
                           ? tokens(model_.config().vocab)
                           : torch::randn({micro_batch, seq, model_.config().hidden},
                                          options.dtype(activation_type_))
                                 .requires_grad_(true);
    // A shard computes the vocabulary-parallel loss over its slice of the logits, as in a
    // run (the sums over the shards are the cost model's to add).
    const auto targets = layer_.holds_head() ? tokens(vocabulary_slice_) : torch::Tensor();
    const auto run_forward = [&] {
      const DropoutScope dropout_scope(DropoutPlace{});  // masks drawn as a run draws them
      auto output = layer_.forward(input);
      if (layer_.holds_head()) output = layer_.loss_sum(output, targets);
      return output;
    };
    const auto before = bytes_in_use(device_);
    watch.start();
    auto output = run_forward();
    into.forward.push_back(watch.seconds() / count_);
    const auto after = bytes_in_use(device_);
    if (before && after) into.activation_bytes.push_back((*after - *before) / count_);
    const auto grad = layer_.holds_head() ? torch::Tensor() : torch::randn_like(output);
    const std::vector<torch::Tensor> grads =
        grad.defined() ? std::vector<torch::Tensor>{grad} : std::vector<torch::Tensor>{};
    watch.start();
    torch::autograd::backward({output}, grads);
    into.backward.push_back(watch.seconds() / count_);
    // The optimizer's work as the runtime does it: the gradients' norm, their clipping,
    // the update.
    watch.start();
    const auto parameters = layer_.parameters();
    const double norm = std::sqrt(gradient_squares(parameters));
    clipped_step(*adamw_, parameters, clip_factor(norm, training::OptimizerOptions{}.clip_norm));
    if (masters_) masters_->copy_to_model();
    into.optimizer.push_back(watch.seconds() / count_);

    const auto deferred = std::make_shared<WeightGradStore>();
    {
      const DeferWeightGradients defer(deferred);
      output = run_forward();
    }
    watch.start();
    torch::autograd::backward({output}, grads);
    into.backward_input.push_back(watch.seconds() / count_);
    double w = 0;  // nothing deferred (the embedding): no W
    if (!deferred->empty()) {
      watch.start();
      deferred->apply();
      w = watch.seconds() / count_;
    }
    into.backward_weight.push_back(w);
    // The gradients stay: the next round's backward adds to them, as the backward of every
    // micro-batch after a step's first does.
  }

 private:
  const model::Model& model_;
  // Blocks run as a chain of a few, each time divided by their number: a stage holds
  // several, and one block alone keeps its weights in cache as no stage does.
  int count_;
  StageModule layer_;
  int64_t vocabulary_slice_;  // the logits a shard of the head computes
  torch::Device device_;
  std::unique_ptr<MasterWeights> masters_;  // a 16-bit model's
  torch::ScalarType activation_type_ = torch::kFloat;
  std::unique_ptr<torch::optim::AdamW> adamw_;
};

}  // namespace

std::vector<cost::ProfileEntry> profile_layers(const model::Model& model,
                                               const ProfileSettings& settings,
                                               const std::vector<ProfiledDevice>& devices) {
  const int64_t seq = model.config().sequence_length(settings.seq_len);
  // One of each kind: the embedding, the first block, the head; for each tp degree.
  const std::vector<int> kinds{0, 1, model.num_layers() - 1};
  const auto& degrees = settings.tensor_parallel;
  require_kernels_for(scalar_type_of(model.config().dtype), settings.device, "dtype");
  std::vector<std::unique_ptr<LayerBench>> benches;  // [tp][kind]
  for (const int tp : degrees) {
    for (const int index : kinds) {
      benches.push_back(std::make_unique<LayerBench>(model, index, settings.device, tp));
    }
  }
  std::vector<Stopwatch> watches;
  for (const auto& device : devices) watches.emplace_back(settings.device, device.speed);
  // samples[device][tp][micro-batch][kind]
  const size_t per_degree = settings.micro_batches.size() * kinds.size();
  const size_t per_device = degrees.size() * per_degree;
  const auto sample_index = [&](size_t d, size_t t, size_t m, size_t k) {
    return d * per_device + t * per_degree + m * kinds.size() + k;
  };
  std::vector<Samples> samples(devices.size() * per_device);
  // Round after round, every setting once: a slow spell of the host (a busy neighbour on
  // a shared machine lasts seconds) then costs each setting one sample, which the median
  // drops, rather than all samples of the settings it happens to fall on.
  const int rounds = settings.warmup + settings.repeats;
  for (int round = 0; round < rounds; ++round) {
    if (settings.progress) {
      settings.progress(round, rounds,
                        round < settings.warmup ? "warm-up" : fmt::format("round {}", round + 1));
    }
    for (size_t d = 0; d < devices.size(); ++d) {
      for (size_t t = 0; t < degrees.size(); ++t) {
        for (size_t m = 0; m < settings.micro_batches.size(); ++m) {
          for (size_t k = 0; k < kinds.size(); ++k) {
            Samples& into = samples[sample_index(d, t, m, k)];
            benches[t * kinds.size() + k]->run(settings.micro_batches[m], seq, watches[d], into);
            if (round < settings.warmup) into = Samples{};
          }
        }
      }
    }
  }
  if (settings.progress) settings.progress(rounds, rounds, "done");

  std::vector<cost::ProfileEntry> entries;
  for (size_t d = 0; d < devices.size(); ++d) {
    for (size_t t = 0; t < degrees.size(); ++t) {
      for (size_t m = 0; m < settings.micro_batches.size(); ++m) {
        for (size_t k = 0; k < kinds.size(); ++k) {
          const Samples& taken = samples[sample_index(d, t, m, k)];
          cost::ProfileEntry entry;
          entry.key = {model.config().name, model.layers()[kinds[k]].kind(),
                       devices[d].name,     model.config().dtype,
                       degrees[t],          seq};
          entry.micro_batch = settings.micro_batches[m];
          entry.times.forward = median(taken.forward);
          entry.times.backward_input = median(taken.backward_input);
          entry.times.backward_weight = median(taken.backward_weight);
          entry.times.backward = median(taken.backward);
          entry.times.optimizer = median(taken.optimizer);
          if (!taken.activation_bytes.empty()) {
            entry.times.activation_bytes = median(taken.activation_bytes);
          }
          entries.push_back(entry);
        }
      }
    }
  }
  return entries;
}

std::string device_description(const torch::Device& device) {
  if (device.is_cuda()) {
#ifdef HYPERPIPE_WITH_CUDA
    return at::cuda::getDeviceProperties(device.index())->name;  // "NVIDIA H100 80GB HBM3"
#else
    return fmt::format("CUDA device {}", device.index());
#endif
  }
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

}  // namespace hyperpipe::runtime
