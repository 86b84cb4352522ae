// What the stage-construction search asks about costs. The planner answers from the cost
// model (cost_oracle.h); tests answer with made-up numbers, so the search is tested
// without hardware or a model.
#pragma once

#include <vector>

#include "hyperpipe/model/layer.h"

namespace hyperpipe::planner {

// How a stage uses its device group: dp data-parallel ranks of tp tensor-parallel GPUs.
struct Shape {
  int dp = 1;
  int tp = 1;
  int size() const { return dp * tp; }
  bool operator==(const Shape&) const = default;
};

inline constexpr model::Recompute kRecomputeOptions[] = {
    model::Recompute::none, model::Recompute::selective, model::Recompute::full};

// Costs for one micro-batch size. Classes are groups of identical devices (one GPU type
// in one island); layers are the model's chain.
class StageOracle {
 public:
  virtual ~StageOracle() = default;

  virtual int num_layers() const = 0;
  virtual int num_classes() const = 0;
  virtual int class_size(int cls) const = 0;  // devices
  virtual const std::vector<Shape>& shapes(int cls) const = 0;

  // Seconds one micro-batch spends in a stage of layers [first, end): F + B + W,
  // recomputation included.
  virtual double stage_time(int cls, int shape, int first, int end,
                            model::Recompute recompute) const = 0;
  // Seconds such a stage spends once per iteration after its last backward: its gradient
  // all-reduce over dp and its optimizer step.
  virtual double epilogue_time(int /*cls*/, int /*shape*/, int /*first*/, int /*end*/) const {
    return 0;
  }
  // Whether such a stage fits its devices' memory with `in_flight` micro-batches kept.
  virtual bool fits(int cls, int shape, int first, int end, model::Recompute recompute,
                    int in_flight) const = 0;
  // One-way transfer of the activation after layer end − 1 from a stage of (cls, shape) to
  // the next stage, of class `next_cls`.
  virtual double link_time(int cls, int shape, int next_cls, int end) const = 0;
  // Seconds once per iteration that depend only on the classes of the first and the last
  // stage (the tied embedding's gradient summed between them), at their least over the
  // classes' shapes, so that adding them to every pipeline of an order keeps bounds sound.
  virtual double tail_time(int /*first_cls*/, int /*last_cls*/) const { return 0; }
};

}  // namespace hyperpipe::planner
