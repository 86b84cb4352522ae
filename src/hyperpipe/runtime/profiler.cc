#include "hyperpipe/runtime/profiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "hyperpipe/runtime/layers.h"
#include "hyperpipe/runtime/optimizer.h"
#include "hyperpipe/runtime/stage_module.h"
#include "hyperpipe/runtime/text_corpus.h"

namespace hyperpipe::runtime {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Bytes written between timed ops to evict the caches (above any last-level cache of a
// machine of this class) and the stride that touches each line once.
constexpr size_t kFlushBytes = size_t{64} << 20;
constexpr size_t kCacheLine = 64;

// Times ops as the runtime runs them: on CUDA after a device sync; for a CPU stand-in
// after the sleep that stretched the op before, and divided by the speed.
class Stopwatch {
 public:
  Stopwatch(const torch::Device& device, double speed) : device_(device), speed_(speed) {}
  void start() {
    if (speed_ < 1.0 && last_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(last_ / speed_ - last_));
    }
    flush_caches();
    sync();
    start_ = std::chrono::steady_clock::now();
  }
  double seconds() {
    sync();
    last_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return last_ / std::min(speed_, 1.0);
  }

 private:
  void sync() {
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
  }
  // In a run, the other processes' work passes through the shared caches between two
  // ops of this one: evict them as they would be.
  void flush_caches() {
    if (device_.is_cuda()) return;
    for (size_t i = 0; i < flush_.size(); i += kCacheLine) flush_[i] += 1;
  }
  torch::Device device_;
  std::vector<char> flush_ = std::vector<char>(kFlushBytes);
  double speed_;
  double last_ = 0;  // host seconds of the op before
  std::chrono::steady_clock::time_point start_;
};

struct Measured {
  double forward = 0;
  double backward_input = 0;
  double backward_weight = 0;
  double optimizer = 0;
};

// One layer of `index` (embedding, a block or the head) at one micro-batch size. The
// head's forward includes the loss, as the last stage's does. B is the input's gradient
// alone; W is a whole backward less B, so B + W is what a combined backward costs.
Measured measure(const model::Model& model, int index, int64_t micro_batch, int64_t seq,
                 const ProfileSettings& settings) {
  // Blocks run as a chain of a few, each time divided by their number: a stage holds
  // several, and one block alone keeps its weights in cache as no stage does.
  const bool block = model.layers()[index].kind() == model::LayerKind::decoder_block;
  const int count = block ? std::min<int>(kProfiledBlocks, model.config().layers) : 1;
  StageModule layer(model, index, index + count, 0);
  layer.to(settings.device);
  auto adamw = make_optimizer(layer.parameters(), {});
  const auto options = torch::TensorOptions().device(settings.device);
  const auto tokens = [&] {
    return torch::randint(0, model.config().vocab, {micro_batch, seq}, options.dtype(torch::kLong));
  };
  const bool embedding = index == 0;
  Stopwatch watch(settings.device, settings.speed);
  std::vector<double> forward, input_only, whole, step;
  for (int run = 0; run < settings.warmup + settings.repeats; ++run) {
    const auto input =
        embedding
            ? tokens()
            : torch::randn({micro_batch, seq, model.config().hidden}, options).requires_grad_(true);
    const auto targets = layer.holds_head() ? tokens() : torch::Tensor();
    const auto run_forward = [&] {
      auto output = layer.forward(input);
      if (layer.holds_head()) output = cross_entropy_sum(output, targets);
      return output;
    };
    watch.start();
    auto output = run_forward();
    const double f = watch.seconds();
    const auto grad = layer.holds_head() ? torch::Tensor() : torch::randn_like(output);
    const std::vector<torch::Tensor> grads =
        grad.defined() ? std::vector<torch::Tensor>{grad} : std::vector<torch::Tensor>{};
    double b = 0;
    if (!embedding) {
      watch.start();
      torch::autograd::grad({output}, {input}, grads, /*retain_graph=*/false);
      b = watch.seconds();
      output = run_forward();
    }
    watch.start();
    torch::autograd::backward({output}, grads);
    const double bw = watch.seconds();
    watch.start();
    adamw->step();
    const double o = watch.seconds();
    for (auto& p : layer.parameters()) p.mutable_grad() = torch::Tensor();
    if (run < settings.warmup) continue;
    forward.push_back(f);
    input_only.push_back(b);
    whole.push_back(bw);
    step.push_back(o);
  }
  Measured result;
  result.forward = median(forward) / count;
  result.backward_input = median(input_only) / count;
  result.backward_weight = std::max(0.0, median(whole) / count - result.backward_input);
  result.optimizer = median(step) / count;
  return result;
}

}  // namespace

std::vector<cost::ProfileEntry> profile_layers(const model::Model& model,
                                               const ProfileSettings& settings,
                                               const std::string& device_name) {
  const int64_t seq = settings.seq_len > 0 ? settings.seq_len : model.config().seq_len;
  // One of each kind: the embedding, the first block, the head.
  const std::vector<int> kinds{0, 1, model.num_layers() - 1};
  std::vector<cost::ProfileEntry> entries;
  const int total = static_cast<int>(kinds.size() * settings.micro_batches.size());
  int done = 0;
  for (const int64_t micro_batch : settings.micro_batches) {
    for (const int index : kinds) {
      const auto kind = model.layers()[index].kind();
      if (settings.progress) {
        settings.progress(done, total,
                          fmt::format("{}, micro-batch {}", model::to_string(kind), micro_batch));
      }
      const Measured m = measure(model, index, micro_batch, seq, settings);
      cost::ProfileEntry entry;
      entry.key = {model.config().name, kind, device_name, model.config().dtype, 1, seq};
      entry.micro_batch = micro_batch;
      entry.times.forward = m.forward;
      entry.times.backward_input = m.backward_input;
      entry.times.backward_weight = m.backward_weight;
      entry.times.optimizer = m.optimizer;
      entries.push_back(entry);
      ++done;
    }
  }
  if (settings.progress) settings.progress(done, total, "done");
  return entries;
}

std::string device_description(const torch::Device& device) {
  if (device.is_cuda()) {
    return fmt::format("CUDA device {}", device.index());
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
