// A made-up cost oracle for testing the search without a model or hardware: per-layer
// work, per-class speed and memory, per-pair link bandwidth, all chosen by the test.
#pragma once

#include <random>
#include <vector>

#include "hyperpipe/planner/stage_oracle.h"

namespace hyperpipe::planner::testing {

class FakeOracle : public StageOracle {
 public:
  struct Class {
    int count = 1;
    double speed = 1;     // work units per second per device
    double memory = 1e9;  // per device
    std::vector<Shape> shapes{{1, 1}};
  };

  std::vector<double> work;        // per layer, per micro-batch
  std::vector<double> weights;     // static bytes per layer
  std::vector<double> activation;  // bytes per layer per micro-batch in flight (no recompute)
  std::vector<double> output;      // bytes after each layer
  std::vector<Class> classes;
  std::vector<std::vector<double>> bandwidth;  // [from class][to class]

  int num_layers() const override { return static_cast<int>(work.size()); }
  int num_classes() const override { return static_cast<int>(classes.size()); }
  int class_size(int cls) const override { return classes[cls].count; }
  const std::vector<Shape>& shapes(int cls) const override { return classes[cls].shapes; }

  // Recomputation costs time and saves memory, as it does for real.
  static double time_factor(model::Recompute r) {
    return r == model::Recompute::none ? 1.0 : r == model::Recompute::selective ? 1.1 : 1.33;
  }
  static double memory_factor(model::Recompute r) {
    return r == model::Recompute::none ? 1.0 : r == model::Recompute::selective ? 0.5 : 0.1;
  }

  double stage_time(int cls, int shape, int first, int end, model::Recompute r) const override {
    const Shape& s = classes[cls].shapes[shape];
    double total = 0;
    for (int l = first; l < end; ++l) total += work[l];
    // Tensor parallelism is less efficient than data parallelism, by a made-up 10%.
    const double efficiency = s.tp > 1 ? 0.9 : 1.0;
    return total * time_factor(r) / (classes[cls].speed * s.size() * efficiency);
  }

  bool fits(int cls, int shape, int first, int end, model::Recompute r,
            int in_flight) const override {
    const Shape& s = classes[cls].shapes[shape];
    double bytes = 0;
    for (int l = first; l < end; ++l) {
      bytes += weights[l] / s.tp + in_flight * activation[l] * memory_factor(r) / s.size();
    }
    return bytes <= classes[cls].memory;
  }

  double link_time(int cls, int shape, int next_cls, int end) const override {
    const Shape& s = classes[cls].shapes[shape];
    return output[end - 1] / s.dp / bandwidth[cls][next_cls];
  }

  // Every layer alike; classes and bandwidths are left for the test to set.
  static FakeOracle uniform(int layers, double work, double weight, double activation,
                            double output) {
    FakeOracle o;
    o.work.assign(layers, work);
    o.weights.assign(layers, weight);
    o.activation.assign(layers, activation);
    o.output.assign(layers, output);
    return o;
  }

  // A random instance: `layers` layers, `counts.size()` classes with those device counts.
  static FakeOracle random(std::mt19937& rng, int layers, const std::vector<int>& counts) {
    std::uniform_real_distribution<double> unit(0.5, 2.0);
    FakeOracle o;
    for (int l = 0; l < layers; ++l) {
      o.work.push_back(unit(rng));
      o.weights.push_back(unit(rng));
      o.activation.push_back(unit(rng));
      o.output.push_back(unit(rng) * 0.3);
    }
    for (int count : counts) {
      Class c;
      c.count = count;
      c.speed = unit(rng);
      c.memory = 2.5 + 3 * unit(rng);
      c.shapes = {{1, 1}};
      if (count >= 2) c.shapes.insert(c.shapes.end(), {{2, 1}, {1, 2}});
      o.classes.push_back(c);
    }
    o.bandwidth.assign(counts.size(), std::vector<double>(counts.size()));
    for (auto& row : o.bandwidth) {
      for (auto& bw : row) bw = unit(rng) * 2;
    }
    return o;
  }
};

}  // namespace hyperpipe::planner::testing
