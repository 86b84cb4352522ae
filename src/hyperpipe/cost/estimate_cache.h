// The op-level estimates of layers already asked for. A layer's ops depend only on its kind,
// the model and the workload, so every block of a model shares one entry, and the planner's
// and simulator's many questions about the same stage shapes cost one estimate each
// (`bench/cost_model_bench --benchmark_filter=RangeTime`: the estimate without it takes a
// hundred times the roofline's microsecond per 32-block stage).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "hyperpipe/cost/op_estimate.h"
#include "hyperpipe/model/layer.h"

namespace hyperpipe::cost {

class EstimateCache {
 public:
  // The cached times of `kind` on `gpu_type` at `work`, or compute() stored and returned.
  // Safe to call from several threads.
  template <typename Compute>
  PassTimes get(model::LayerKind kind, const std::string& gpu_type, const model::Workload& work,
                double memory_efficiency, Compute&& compute) {
    const Key key{kind,
                  gpu_type,
                  work.micro_batch,
                  work.seq_len,
                  work.tp,
                  work.sequence_parallel,
                  memory_efficiency};
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto found = entries_.find(key); found != entries_.end()) return found->second;
    }
    const PassTimes times = compute();
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_.emplace(key, times);
    return times;
  }

 private:
  using Key = std::tuple<model::LayerKind, std::string, int64_t, int64_t, int64_t, bool, double>;
  std::mutex mutex_;
  std::map<Key, PassTimes> entries_;
};

}  // namespace hyperpipe::cost
