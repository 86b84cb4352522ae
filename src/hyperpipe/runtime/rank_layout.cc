#include "hyperpipe/runtime/rank_layout.h"

#include <fmt/format.h>

#include <algorithm>

#include "hyperpipe/common/error.h"

namespace hyperpipe::runtime {

SampleRange shard(int64_t micro_batch, int dp, int index) {
  const int64_t base = micro_batch / dp;
  const int64_t extra = micro_batch % dp;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

std::vector<Slice> reshard(int64_t micro_batch, int from_dp, int to_dp) {
  std::vector<Slice> slices;
  for (int i = 0; i < from_dp; ++i) {
    const SampleRange held = shard(micro_batch, from_dp, i);
    for (int j = 0; j < to_dp; ++j) {
      const SampleRange needed = shard(micro_batch, to_dp, j);
      const int64_t begin = std::max(held.begin, needed.begin);
      const int64_t end = std::min(held.end, needed.end);
      if (begin < end) slices.push_back({i, j, {begin, end}});
    }
  }
  return slices;
}

RankLayout::RankLayout(const plan::Plan& plan, const std::string& source) {
  for (int p = 0; p < plan.pipeline_count(); ++p) {
    const plan::Pipeline& pipeline = plan.pipeline(p);
    first_rank_.emplace_back();
    for (int group = 0; group < pipeline.ranks(); ++group) {
      const plan::StagePlan& stage = pipeline.stages[group];
      if (stage.tp != 1) {
        throw InputError(source,
                         fmt::format("{}stages[{}].tp",
                                     p == 0 ? "" : fmt::format("replicas[{}].", p - 1), group),
                         "1: the runtime does not run tensor parallelism yet");
      }
      first_rank_.back().push_back(static_cast<int>(roles_.size()));
      for (int i = 0; i < stage.dp; ++i) {
        roles_.push_back(
            {static_cast<int>(roles_.size()), p, group, i, stage.dp, stage.devices[i * stage.tp]});
      }
    }
  }
}

std::vector<int> RankLayout::group_ranks(int pipeline, int group) const {
  const int first = first_rank_.at(pipeline).at(group);
  const int dp = roles_.at(first).dp;
  std::vector<int> ranks(dp);
  for (int i = 0; i < dp; ++i) ranks[i] = first + i;
  return ranks;
}

}  // namespace hyperpipe::runtime
