// How a plan's devices become processes: one process per device, ranked device group by
// device group in pipeline order, and which samples of each micro-batch each holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hyperpipe/plan/plan.h"

namespace hyperpipe::plan {

struct ProcessRole {
  int rank = 0;
  int pipeline = 0;  // 0: the plan's own; p: its replicas[p - 1]
  int group = 0;     // pipeline rank: the device group, holding stages group + k·groups
  int dp_index = 0;  // within the group's data-parallel ranks
  int dp = 1;
  int tp_index = 0;  // the shard it holds of each of the group's layers
  int tp = 1;
  int device = 0;  // the plan's global device id
};

// Samples [begin, end) of a micro-batch.
struct SampleRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const SampleRange&) const = default;
};

// The samples data-parallel rank `index` of `dp` handles: as even as possible, the first
// (micro_batch mod dp) ranks one more (the cost model's slowest rank has the ceiling).
SampleRange shard(int64_t micro_batch, int dp, int index);

// What crosses between two device groups whose dp differ: each piece of the micro-batch
// that sender `from_index` holds and receiver `to_index` needs.
struct Slice {
  int from_index = 0;
  int to_index = 0;
  SampleRange samples;
  bool operator==(const Slice&) const = default;
};
std::vector<Slice> reshard(int64_t micro_batch, int from_dp, int to_dp);

// Ranks go pipeline by pipeline (the plan's own first), device group by device group in
// pipeline order, data-parallel rank by data-parallel rank and, inside each, tensor-
// parallel shard by shard (the plan's device order: devices[dp_index · tp + tp_index]).
class RankLayout {
 public:
  // Throws InputError naming `source` (the plan file) for what the runtime does not run:
  // the chunks of one device group with different dp or tp, or a layer split over a
  // different number of shards in one pipeline than in another.
  RankLayout(const plan::Plan& plan, const std::string& source);

  int world_size() const { return static_cast<int>(roles_.size()); }
  int pipelines() const { return static_cast<int>(first_rank_.size()); }
  int groups(int pipeline = 0) const { return static_cast<int>(first_rank_.at(pipeline).size()); }
  const ProcessRole& role(int rank) const { return roles_.at(rank); }
  int rank_of(int group, int dp_index) const { return rank_of(0, group, dp_index); }
  int rank_of(int pipeline, int group, int dp_index, int tp_index = 0) const {
    const int first = first_rank_.at(pipeline).at(group);
    return first + plan::index_in_group(dp_index, tp_index, roles_.at(first).tp);
  }
  // The data-parallel ranks of one device group that hold shard `tp_index` (they sum
  // their gradients).
  std::vector<int> dp_ranks(int pipeline, int group, int tp_index = 0) const;
  // The tensor-parallel ranks of one device group's data-parallel rank `dp_index` (they
  // sum partial results and input gradients).
  std::vector<int> tp_ranks(int pipeline, int group, int dp_index) const;
  // Every rank of one device group.
  std::vector<int> group_ranks(int pipeline, int group) const;

 private:
  std::vector<ProcessRole> roles_;
  std::vector<std::vector<int>> first_rank_;  // [pipeline][group]
};

}  // namespace hyperpipe::plan
