// The search's cost questions answered from the cost model, for one micro-batch size:
// per-layer times and memory are computed once per (class, shape, recomputation) and
// summed with prefix sums, so every layer range costs O(1) for every bound and order.
#pragma once

#include <limits>
#include <vector>

#include "hyperpipe/cost/cost_model.h"
#include "hyperpipe/planner/device_class.h"
#include "hyperpipe/planner/stage_oracle.h"

namespace hyperpipe::planner {

class CostOracle final : public StageOracle {
 public:
  CostOracle(const cost::CostModel& costs, const std::vector<DeviceClass>& classes,
             int64_t micro_batch, int64_t seq_len, int max_tp = std::numeric_limits<int>::max(),
             int only_dp = 0, int only_tp = 0);

  int num_layers() const override { return layers_; }
  int num_classes() const override { return static_cast<int>(classes_.size()); }
  int class_size(int cls) const override { return classes_[cls].count(); }
  const std::vector<Shape>& shapes(int cls) const override { return shapes_[cls]; }
  // Every class's shapes, indexed as to_pipeline wants them.
  const std::vector<std::vector<Shape>>& all_shapes() const { return shapes_; }
  double stage_time(int cls, int shape, int first, int end,
                    model::Recompute recompute) const override {
    return view(cls, shape).stage_time(first, end, static_cast<int>(recompute));
  }
  bool fits(int cls, int shape, int first, int end, model::Recompute recompute,
            int in_flight) const override {
    return view(cls, shape).fits(first, end, static_cast<int>(recompute), in_flight);
  }
  double link_time(int cls, int shape, int next_cls, int end) const override {
    return tables_[cls][shape].link[next_cls][end];
  }
  double epilogue_time(int cls, int shape, int first, int end) const override {
    return view(cls, shape).epilogue_time(first, end);
  }
  double tail_time(int first_cls, int last_cls) const override {
    return tail_[first_cls][last_cls];
  }

  // One (class, shape)'s prefix sums as raw arrays, for the search's innermost loop.
  struct View {
    const double* time[3];
    const double* activations[3];
    const double* static_bytes;
    const double* epilogue;
    double epilogue_fixed;
    double available;

    double stage_time(int first, int end, int option) const {
      return time[option][end] - time[option][first];
    }
    double epilogue_time(int first, int end) const {
      return epilogue[end] - epilogue[first] + epilogue_fixed;
    }
    bool fits(int first, int end, int option, int in_flight) const {
      const double* act = activations[option];
      return static_bytes[end] - static_bytes[first] + in_flight * (act[end] - act[first]) <=
             available;
    }
  };
  View view(int cls, int shape) const {
    const Table& t = tables_[cls][shape];
    return {{t.time[0].data(), t.time[1].data(), t.time[2].data()},
            {t.activations[0].data(), t.activations[1].data(), t.activations[2].data()},
            t.static_bytes.data(),
            t.epilogue.data(),
            t.epilogue_fixed,
            t.available};
  }

  // The optimizer step of such a stage alone (part of epilogue_time).
  double optimizer_time(int cls, int shape, int first, int end) const {
    const auto& optimizer = tables_[cls][shape].optimizer;
    return optimizer[end] - optimizer[first];
  }

  // The representative device group of a shape (the class's first devices).
  const cost::DeviceGroup& group(int cls, int shape) const { return tables_[cls][shape].group; }

 private:
  struct Table {
    cost::DeviceGroup group;
    // Prefix sums over layers, per recomputation option: time, static bytes, activations.
    std::vector<double> time[3];
    std::vector<double> activations[3];
    std::vector<double> static_bytes;
    // Prefix sums of each layer's all-reduce (less its fixed part) and optimizer step; the
    // all-reduce's fixed part (latencies), paid once per stage.
    std::vector<double> epilogue;
    double epilogue_fixed = 0;
    std::vector<double> optimizer;  // prefix sums of the optimizer step alone
    double available = 0;           // what the allocator may hand out (LayerCosts::allocatable)
    // [next class][end]: transfer after layer end − 1.
    std::vector<std::vector<double>> link;
  };

  int layers_;
  std::vector<DeviceClass> classes_;
  std::vector<std::vector<Shape>> shapes_;
  std::vector<std::vector<Table>> tables_;
  std::vector<std::vector<double>> tail_;  // [first class][last class]
};

}  // namespace hyperpipe::planner
