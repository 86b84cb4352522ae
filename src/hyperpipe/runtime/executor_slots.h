// What the executor keeps between ops: per micro-batch of each chunk its activations,
// gradients and posted transfers, and per gradient bucket its all-reduce on the way. Shared
// by the executor's files (executor.cc: the op table and compute; executor_transfers.cc:
// sends and receives; executor_collectives.cc: gradient sums and the optimizer step).
#pragma once

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "hyperpipe/runtime/deferred_weight_grads.h"
#include "hyperpipe/runtime/executor.h"
#include "hyperpipe/runtime/stand_in_clock.h"
#include "hyperpipe/runtime/timing.h"

namespace hyperpipe::runtime {

// What one micro-batch of one chunk holds between its ops.
struct Executor::Slot {
  torch::Tensor input;       // received activation (requires grad) or token ids
  torch::Tensor output;      // activation, or the loss on the last stage
  torch::Tensor from_next;   // gradient of the output, received
  torch::Tensor input_grad;  // gradient of the input, to send back
  // Split backward: the weights' gradients B left for W.
  std::shared_ptr<WeightGradStore> weight_grads;
  std::vector<std::unique_ptr<Pending>> forward_receives;
  std::vector<std::unique_ptr<Pending>> backward_receives;
  // Under scattered transfers, the received regions whose other parts the shards gather.
  std::vector<torch::Tensor> forward_gathers;
  std::vector<torch::Tensor> backward_gathers;
  bool forward_posted = false;
  bool backward_posted = false;
};

// A chunk's bucket on its way: its gradients flattened into one buffer, summed over the
// group's data-parallel ranks while the schedule goes on.
struct Executor::StartedAllReduce {
  std::unique_ptr<Pending> pending;
  torch::Tensor buffer;
  std::vector<torch::Tensor> gradients;
  int stage = 0;
  int chunk = 0;
  double start = 0;
};

// Runs `work` as one interval of the compute track (a template: every file's ops are timed).
template <typename Work>
void Executor::timed(trace::Interval interval, const Work& work, bool stretch) {
  // CUDA kernels run asynchronously: the op ends when the device is done with it.
  const auto synchronize = [&] {
    if (options_.device.is_cuda()) torch::cuda::synchronize(options_.device.index());
  };
  synchronize();
  const auto start = std::chrono::steady_clock::now();
  const double work_start = work_seconds();
  work();
  synchronize();
  if (stretch && options_.speed < 1.0) {
    const double emulated = (work_seconds() - work_start) / options_.speed;
    const double rest = emulated - seconds_since(start);
    if (rest > 0) std::this_thread::sleep_for(std::chrono::duration<double>(rest));
  }
  interval.start = std::chrono::duration<double>(start - start_).count();
  interval.end = seconds_since(start_);
  track_.compute.push_back(std::move(interval));
}

}  // namespace hyperpipe::runtime
